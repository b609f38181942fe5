/**
 * The conditional list on DynamoDB Local: the ETag of every 200, 304 Not Modified for a matching
 * If-None-Match without reading an order, every write that changes the list changing the tag
 * (and none that does not), no tag while a write is in flight, and what a 304 costs the key.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { BAN_RECHECK_MS } from '../../lib/dynamodb/rate-limit-items.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { LIST_VERSION_SLOTS, listVersionKey } from '../../lib/dynamodb/tables.ts';
import { shipOrder } from '../../lib/orders/operations.ts';
import type { Order } from '../../lib/orders/order.ts';
import {
  countDynamoDbCalls,
  invokeHttp,
  proxyEvent,
  timeDynamoDbCalls,
  type HttpResult,
  type TimedCall,
} from '../support/lambda.ts';
import { createTestTables, markVersionItem, type TestTables } from '../support/tables.ts';

let t: TestTables;
let store: DynamoDbOrderStore;
let limiter: DynamoDbRateLimiter;

const ORDERS: Order[] = [
  { id: 1n, petId: 10n, quantity: 1, status: 'pending' },
  { id: 2n, status: 'shipped', complete: true },
  { id: 3n, status: 'cancelled' },
  { id: 4n, status: 'pending' },
  { id: 9223372036854775807n, status: 'pending' },
];

/** A caller of its own per test: limits are per key. */
let keyNumber = 0;
function caller(perMinute = 1_000, perDay = 1_000_000) {
  const keyId = `key_conditional${++keyNumber}_${Date.now()}`;
  return {
    principalId: keyId,
    keyId,
    plan: 'enterprise',
    perMinute: String(perMinute),
    perDay: String(perDay),
  };
}

/**
 * The list's clock runs this far from the real one: the tests of what a request costs set it so
 * that they start a second into a minute. A key's free allowance is per fixed minute window, so a
 * test that crossed a minute boundary would see its allowance start again (a 1-in-60 flake for a
 * test lasting a second on a busy machine).
 */
let clockOffsetMs = 0;
/** When set, the list's clock stands still at this instant (a test of what a cached ban costs). */
let frozenAt: number | undefined;

const list = createListOrdersHandler({
  orders: () => store,
  limiter: () => limiter,
  freeAllowance: () => limiter,
  now: () => frozenAt ?? Date.now() + clockOffsetMs,
});
const cancelHandler = createCancelOrderHandler({ orders: () => store, limiter: () => limiter });

function get(
  headers: Record<string, string> = {},
  authorizer: Record<string, string> = caller(),
): Promise<HttpResult> {
  const event = proxyEvent({
    method: 'GET',
    resource: '/store/orders',
    path: '/store/orders',
    authorizer,
  });
  return invokeHttp(list, { ...event, headers });
}

function cancel(id: string): Promise<HttpResult> {
  return invokeHttp(
    cancelHandler,
    proxyEvent({
      method: 'DELETE',
      resource: '/store/orders/{orderId}',
      path: `/store/orders/${id}`,
      pathParameters: { orderId: id },
    }),
  );
}

async function currentTag(): Promise<string> {
  const response = await get();
  expect(response.statusCode).toBe(200);
  const tag = response.headers.ETag;
  expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{22}"$/);
  return tag as string;
}

beforeAll(async () => {
  t = await createTestTables('conditional');
  store = new DynamoDbOrderStore(t.client, t.tables.orders);
  limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
});
afterAll(() => t.drop());
beforeEach(() => store.putOrders(ORDERS));

describe('the ETag of the list', () => {
  it('comes with every 200: weak, with Cache-Control private, no-cache and Vary', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.headers).toMatchObject({
      ETag: expect.stringMatching(/^W\/"[A-Za-z0-9_-]{22}"$/) as unknown,
      'Cache-Control': 'private, no-cache',
      Vary: 'Accept-Encoding',
    });
  });

  it('is the same for every content coding (weak: it stands for the list, not its bytes)', async () => {
    const identity = await get();
    for (const coding of ['gzip', 'br', 'zstd']) {
      const encoded = await get({ 'Accept-Encoding': coding });
      expect(encoded.headers['Content-Encoding']).toBe(coding);
      expect(encoded.headers.ETag).toBe(identity.headers.ETag);
    }
    // And a tag got with one coding is matched with another.
    const response = await get({
      'Accept-Encoding': 'gzip',
      'If-None-Match': identity.headers.ETag!,
    });
    expect(response.statusCode).toBe(304);
  });

  it('stays the same while nothing changes', async () => {
    expect(await currentTag()).toBe(await currentTag());
  });
});

describe('If-None-Match', () => {
  it('answers 304 with no body, the validators and the rate-limit headers for the current tag', async () => {
    const tag = await currentTag();
    const response = await get({ 'If-None-Match': tag });
    expect(response.statusCode).toBe(304);
    expect(response.body).toBe('');
    expect(response.headers).toMatchObject({
      ETag: tag,
      'Cache-Control': 'private, no-cache',
      Vary: 'Accept-Encoding',
      'X-RateLimit-Limit': expect.any(String) as unknown,
      'X-RateLimit-Remaining': expect.any(String) as unknown,
      'X-RateLimit-Reset': expect.any(String) as unknown,
    });
    expect(response.headers['Content-Type']).toBeUndefined();
    expect(response.headers['Content-Encoding']).toBeUndefined();
  });

  it('reads no order: the free allowance admits it, then one read of the version items', async () => {
    const tag = await currentTag();
    const calls = await timeDynamoDbCalls(t.client, async () => {
      expect((await get({ 'If-None-Match': tag })).statusCode).toBe(304);
    });
    expect(calls.map(({ command, table }) => [command, table])).toEqual([
      ['UpdateItemCommand', t.tables.rateLimits],
      ['BatchGetItemCommand', t.tables.orders],
    ]);
    // Decided first: the version is read once the allowance has answered.
    const [take, read] = calls as [TimedCall, TimedCall];
    expect(read.sent).toBeGreaterThanOrEqual(take.answered!);
  });

  it.each([
    ['the strong form of the tag', (tag: string) => tag.slice(2)],
    ['a list holding the tag', (tag: string) => `"other", ${tag}, W/"more"`],
    ['*', () => '*'],
    ['the tag with spaces and empty elements around it', (tag: string) => ` ,${tag} , `],
  ])('answers 304 to %s', async (_, field) => {
    const tag = await currentTag();
    expect((await get({ 'If-None-Match': field(tag) })).statusCode).toBe(304);
  });

  it.each([
    ['another tag', () => 'W/"AAAAAAAAAAAAAAAAAAAAAA"'],
    ['a list of other tags', () => '"a", W/"b"'],
    ['the tag without its quotes (not the grammar: ignored)', (tag: string) => tag.slice(3, -1)],
    ['garbage (ignored)', () => 'not a tag at all'],
    ['the tag with lower-case w/ (ignored)', (tag: string) => `w${tag.slice(1)}`],
  ])('answers 200 with the whole list to %s', async (_, field) => {
    const tag = await currentTag();
    const response = await get({ 'If-None-Match': field(tag) });
    expect(response.statusCode).toBe(200);
    expect(response.headers.ETag).toBe(tag);
    expect(JSON.parse(response.body)).toHaveLength(ORDERS.length);
  });

  it('answers 406 to a matching tag when no acceptable coding is left (406 comes first)', async () => {
    const tag = await currentTag();
    const response = await get({ 'If-None-Match': tag, 'Accept-Encoding': 'identity;q=0' });
    expect(response.statusCode).toBe(406);
  });

  it('answers 503 when the version cannot be read (transient), for a 200 and a 304 alike', async () => {
    const tag = await currentTag();
    // Every read of the version items (one BatchGetItem each) is throttled.
    const name = `throttleVersion${Math.random()}`;
    t.client.middlewareStack.add(
      (next, context) => (args) =>
        context.commandName === 'BatchGetItemCommand'
          ? Promise.reject(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }))
          : next(args),
      { step: 'finalizeRequest', name, priority: 'high' },
    );
    try {
      const unconditional = await get();
      expect(unconditional.statusCode).toBe(503);
      const conditional = await get({ 'If-None-Match': tag });
      expect(conditional.statusCode).toBe(503);
      expect(conditional.headers['Retry-After']).toBe('1');
      // The counter store works: both carry the counts.
      expect(conditional.headers.RateLimit).toMatch(/^"minute";r=\d+;t=\d+/);
      expect(Object.keys(conditional.headers).sort()).toEqual(
        Object.keys(unconditional.headers).sort(),
      );
    } finally {
      t.client.middlewareStack.remove(name);
    }
  });

  it('answers 503 with RateLimit-Policy when DynamoDB fails, with If-None-Match or without', async () => {
    const tag = await currentTag();
    // Every call is throttled: the version items and the counters alike.
    const name = `throttleAll${Math.random()}`;
    t.client.middlewareStack.add(
      () => () =>
        Promise.reject(Object.assign(new Error('throttled'), { name: 'ThrottlingException' })),
      { step: 'finalizeRequest', name, priority: 'high' },
    );
    try {
      for (const headers of [{}, { 'If-None-Match': tag }] as Record<string, string>[]) {
        const response = await get(headers);
        expect(response.statusCode).toBe(503);
        expect(response.headers['RateLimit-Policy']).toBe(
          '"minute";q=1000;w=60, "day";q=1000000;w=86400',
        );
        expect(response.headers.RateLimit).toBeUndefined();
      }
    } finally {
      t.client.middlewareStack.remove(name);
    }
  });
});

describe('writes and the tag', () => {
  it('a cancel that changes an order changes the tag: the old tag gets 200 with the change', async () => {
    const tag = await currentTag();
    expect((await cancel('1')).statusCode).toBe(204);
    const response = await get({ 'If-None-Match': tag });
    expect(response.statusCode).toBe(200);
    expect(response.headers.ETag).not.toBe(tag);
    expect(response.body).toContain('{"id":1,"petId":10,"quantity":1,"status":"cancelled"}');
  });

  it.each([
    ['an order already cancelled', '3', 204],
    ['a shipped order', '2', 409],
    ['an order that does not exist', '99', 404],
  ])('a cancel of %s changes nothing, nor the tag', async (_, id, status) => {
    const tag = await currentTag();
    expect((await cancel(id)).statusCode).toBe(status);
    expect((await get({ 'If-None-Match': tag })).statusCode).toBe(304);
  });

  it('a ship changes the tag; shipping it again does not', async () => {
    const tag = await currentTag();
    expect(await shipOrder(store, 4n)).toBe('shipped');
    const shipped = await currentTag();
    expect(shipped).not.toBe(tag);
    expect(await shipOrder(store, 4n)).toBe('already-shipped');
    expect(await currentTag()).toBe(shipped);
  });

  it('writing orders (an import, the seed) changes the tag', async () => {
    const tag = await currentTag();
    await store.putOrders([{ id: 5n, status: 'pending' }]);
    const response = await get({ 'If-None-Match': tag });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('{"id":5,"status":"pending"}');
  });

  it('retag (after writes made by hand) changes the tag', async () => {
    const tag = await currentTag();
    await store.retag();
    expect((await get({ 'If-None-Match': tag })).statusCode).toBe(200);
  });

  it('leaves every version item without an in-flight entry once the writes are done', async () => {
    await cancel('1');
    await store.putOrders([{ id: 6n }]);
    for (let index = 0; index < LIST_VERSION_SLOTS; index++) {
      const { Item } = await t.client.send(
        new GetCommand({ TableName: t.tables.orders, Key: listVersionKey(index) }),
      );
      expect(Object.keys(Item ?? {}).filter((name) => name.startsWith('w_'))).toEqual([]);
    }
  });

  it('gives no tag while a write is in flight, and never a 304 then', async () => {
    const tag = await currentTag();
    // A write between its mark and its release: the in-flight entry, with a running lease.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let marked: () => void = () => undefined;
    const inWrite = new Promise<void>((resolve) => (marked = resolve));
    const version = new DynamoDbListVersion(t.client, t.tables.orders);
    const writing = version.around(
      () => {
        marked(); // the mark is written: the write runs
        return released;
      },
      () => false,
    );
    await inWrite;
    const during = await get({ 'If-None-Match': tag });
    expect(during.statusCode).toBe(200);
    expect(during.headers.ETag).toBeUndefined();
    // Not even to *: a 304 carries the ETag its 200 would, and there is none.
    const any = await get({ 'If-None-Match': '*' });
    expect(any.statusCode).toBe(200);
    expect(any.headers.ETag).toBeUndefined();
    release();
    await writing;
    // That write changed nothing: the tag is back.
    expect((await get({ 'If-None-Match': tag })).statusCode).toBe(304);
  });

  it('treats an entry whose lease ended (a writer that died) as a change, never as in flight', async () => {
    const tag = await currentTag();
    // What a writer that died between its mark and its release leaves behind.
    await markVersionItem(t, 3, 'w_deadwriter0', Date.now() - 1);
    const response = await get({ 'If-None-Match': tag });
    expect(response.statusCode).toBe(200);
    expect(response.headers.ETag).toMatch(/^W\//);
    expect(response.headers.ETag).not.toBe(tag);
  });
});

describe('what a conditional request costs the key', () => {
  const remaining = (response: HttpResult) => Number(response.headers['X-RateLimit-Remaining']);
  // Back to a second after the minute began: 59 s before the next boundary.
  beforeEach(() => void (clockOffsetMs = 1_000 - (Date.now() % 60_000)));
  afterEach(() => {
    clockOffsetMs = 0;
    frozenAt = undefined;
  });

  it('a 304 uses none of the plan: the remaining count stays as the 200 left it', async () => {
    const key = caller(10, 1_000);
    const first = await get({}, key);
    expect(remaining(first)).toBe(9);
    for (let i = 0; i < 5; i++) {
      const response = await get({ 'If-None-Match': first.headers.ETag! }, key);
      expect(response.statusCode).toBe(304);
      expect(remaining(response)).toBe(9);
    }
    expect(remaining(await get({}, key))).toBe(8);
  });

  it('beyond the free allowance (the per-minute limit) a 304 counts like any request', async () => {
    const key = caller(3, 1_000);
    const tag = (await get({}, key)).headers.ETag!;
    const answers: [number, number][] = [];
    for (let i = 0; i < 5; i++) {
      const response = await get({ 'If-None-Match': tag }, key);
      answers.push([response.statusCode, remaining(response)]);
    }
    // Three free (2 left after the 200), then counted: 1 left, then none.
    expect(answers.slice(0, 4)).toEqual([
      [304, 2],
      [304, 2],
      [304, 2],
      [304, 1],
    ]);
    expect(answers[4]![0]).toBe(304);
  });

  it('a key over its plan still gets a free 304 while its allowance lasts, and 429 after it', async () => {
    const key = caller(2, 1_000);
    const tag = (await get({}, key)).headers.ETag!;
    await get({}, key);
    expect((await get({}, key)).statusCode).toBe(429);
    const free = await get({ 'If-None-Match': tag }, key);
    expect(free.statusCode).toBe(304);
    expect(remaining(free)).toBe(0);
    expect(free.headers['Retry-After']).toBeUndefined();
    await get({ 'If-None-Match': tag }, key);
    const counted = await get({ 'If-None-Match': tag }, key);
    expect(counted.statusCode).toBe(429);
    expect(JSON.parse(counted.body)).toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('a banned key gets 429 API_KEY_TEMPORARILY_BANNED, whatever tag it sends', async () => {
    const key = caller(1_000, 1_000);
    const tag = await currentTag();
    // The requests below come at one instant (then one BAN_RECHECK_MS later): what the ban's
    // cache answers does not depend on how fast the machine runs them.
    const at = Date.now() + clockOffsetMs;
    frozenAt = at;
    await t.client.send(
      new UpdateCommand({
        TableName: t.tables.rateLimits,
        Key: { pk: counterKey(key.keyId) },
        UpdateExpression: 'SET bu = :until',
        ExpressionAttributeValues: { ':until': at + 60_000 },
      }),
    );
    const counter = countDynamoDbCalls(t.client, t.tables.orders);
    const limits = countDynamoDbCalls(t.client, t.tables.rateLimits);
    const refused = async (headers: Record<string, string>): Promise<number> => {
      limits.reset();
      const response = await get(headers, key);
      expect(response.statusCode).toBe(429);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'API_KEY_TEMPORARILY_BANNED' });
      expect(Number(response.headers['Retry-After'])).toBeGreaterThan(50);
      return limits.calls.length;
    };
    const writes: number[] = [];
    for (const headers of [{ 'If-None-Match': tag }, { 'If-None-Match': '*' }, {}] as Record<
      string,
      string
    >[]) {
      writes.push(await refused(headers));
    }
    // Refused before anything was read: no version item, no order.
    expect(counter.calls).toEqual([]);
    // The first request learns of the ban from its free allowance's failed write; the container
    // then answers the key from the ban it cached, conditional or not, with no write.
    expect(writes).toEqual([1, 0, 0]);
    // BAN_RECHECK_MS later the ban is read again (it might have been lifted), once.
    frozenAt = at + BAN_RECHECK_MS;
    expect(await refused({ 'If-None-Match': '*' })).toBe(1);
    expect(await refused({ 'If-None-Match': '*' })).toBe(0);
    expect(await refused({})).toBe(0);
    expect(counter.calls).toEqual([]);
  });

  it('a conditional request whose answer is the whole list counts like any request', async () => {
    const key = caller(10, 1_000);
    const first = await get({}, key);
    const response = await get({ 'If-None-Match': '"not-the-tag"' }, key);
    expect(response.statusCode).toBe(200);
    expect(remaining(response)).toBe(remaining(first) - 1);
  });
});

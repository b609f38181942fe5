/**
 * v2's list function (listOrderPages) on DynamoDB Local: what a conditional page and a refused
 * request cost, and that a page's tag changes with what the page holds. A 304 reads the list's
 * version and no order, off the plan's quota within the key's free allowance; a request refused
 * 429 reads nothing of the orders table, whatever it asks; a page whose orders a cancel changed
 * is never answered 304 again; a page of the table is tagged by the list's version, a page of an
 * index by its content, and every 304 carries the tag its 200 would.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrderPagesHandler } from '../../functions/list-order-pages.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import type { Order } from '../../lib/orders/order.ts';
import { INDEX_SETTLE_MS } from '../../lib/orders/page-tag.ts';
import {
  countDynamoDbCalls,
  invokeHttp,
  proxyEvent,
  timeDynamoDbCalls,
  type HttpResult,
  type TimedCall,
} from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
let store: DynamoDbOrderStore;
let limiter: DynamoDbRateLimiter;
let pages: DynamoDbOrderPages;

const ORDERS: Order[] = [
  { id: 1n, petId: 7n, status: 'pending' },
  { id: 2n, petId: 7n, status: 'pending' },
  { id: 3n, petId: 8n, status: 'shipped', complete: true },
  { id: 9223372036854775807n, petId: 7n, status: 'pending' },
];

/**
 * The function's clock, this far from the real one: tests of the free allowance start a second
 * into a minute (its window is the fixed minute), tests of an index's tag step past its settling.
 */
let clockOffsetMs = 0;
const now = () => Date.now() + clockOffsetMs;

const listPages = createListOrderPagesHandler({
  orders: () => store,
  pages: () => pages,
  limiter: () => limiter,
  freeAllowance: () => limiter,
  now,
});
const cancelHandler = createCancelOrderHandler({
  orders: () => store,
  limiter: () => limiter,
  now,
});

let keyNumber = 0;
/** A caller of its own per test: limits are per key. */
function caller(perMinute = 1_000, perDay = 1_000_000) {
  const keyId = `key_pages${++keyNumber}_${Date.now()}`;
  const limits = { perMinute: String(perMinute), perDay: String(perDay) };
  return { principalId: keyId, keyId, plan: 'enterprise', ...limits };
}

/** A page request to `handler`. */
function pageOf(
  handler: typeof listPages,
  query: Record<string, string> = {},
  headers: Record<string, string> = {},
  authorizer: Record<string, string> = caller(),
): Promise<HttpResult> {
  const event = proxyEvent({
    method: 'GET',
    resource: '/store/orders',
    path: '/store/orders',
    authorizer,
  });
  const parameters = Object.entries(query).map(([name, value]) => [name, [value]]);
  return invokeHttp(handler, {
    ...event,
    headers,
    multiValueQueryStringParameters: parameters.length ? Object.fromEntries(parameters) : null,
  });
}

const page = (
  query?: Record<string, string>,
  headers?: Record<string, string>,
  authorizer?: Record<string, string>,
) => pageOf(listPages, query, headers, authorizer);

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

const ids = (answer: HttpResult) => [...answer.body.matchAll(/"id":(\d+)/g)].map((m) => m[1]);
const remaining = (answer: HttpResult) => Number(answer.headers['X-RateLimit-Remaining']);

beforeAll(async () => {
  t = await createTestTables('v2-pages');
  store = new DynamoDbOrderStore(t.client, t.tables.orders);
  limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  pages = new DynamoDbOrderPages(t.client, t.tables.orders, {
    indexes: new Set(ORDER_INDEX_NAMES),
  });
});
afterAll(() => t.drop());
beforeEach(() => store.putOrders(ORDERS));
afterEach(() => void (clockOffsetMs = 0));

describe('a conditional page', () => {
  it.each([
    ['the table', { pageSize: '2' }],
    ['the status index', { status: 'pending' }],
    ['the pet index', { petId: '7' }],
    ['a date index', { shipDateFrom: '2020-01-01T00:00:00Z', shipDateTo: '2030-01-01T00:00:00Z' }],
  ] as const)(
    'of %s: every 304, to every form of condition, carries the ETag its 200 would (RFC 9110 §15.4.5), also right after a change',
    async (_, query) => {
      // Right after a change (the store not settled), then long after it.
      expect((await cancel('1')).statusCode).toBe(204);
      for (const offset of [0, INDEX_SETTLE_MS + 1_000]) {
        clockOffsetMs = offset;
        const full = await page(query);
        expect(full.statusCode).toBe(200);
        const tag = full.headers.ETag!;
        expect(tag).toMatch(/^W\/"[\w-]{22}"$/);
        for (const condition of [tag, tag.slice(2), '*', `W/"other", ${tag}`, ` , ${tag} ,`]) {
          const answer = await page(query, { 'If-None-Match': condition });
          expect([condition, answer.statusCode]).toEqual([condition, 304]);
          expect([condition, answer.headers.ETag]).toEqual([condition, tag]);
          expect(answer.body).toBe('');
        }
      }
    },
  );

  it('of the table is tagged at once, and its tag gets 304 with no body and no order read', async () => {
    const first = await page({ pageSize: '2' });
    expect(first.statusCode).toBe(200);
    expect(ids(first)).toEqual(['1', '2']);
    const tag = first.headers.ETag!;
    expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{22}"$/);
    expect(first.headers['Cache-Control']).toBe('private, no-cache');

    let answer: HttpResult | undefined;
    const calls = await timeDynamoDbCalls(t.client, async () => {
      answer = await page({ pageSize: '2' }, { 'If-None-Match': tag });
    });
    expect(answer!.statusCode).toBe(304);
    expect(answer!.body).toBe('');
    expect(answer!.headers.ETag).toBe(tag);
    // The free allowance first, then the list's version: no Query, no order read by key.
    expect(calls.map(({ command, table }) => [command, table])).toEqual([
      ['UpdateItemCommand', t.tables.rateLimits],
      ['BatchGetItemCommand', t.tables.orders],
    ]);
    const [take, read] = calls as [TimedCall, TimedCall];
    expect(read.sent).toBeGreaterThanOrEqual(take.answered!);
  });

  it('has a tag of its own: another page, page size or filter does not match it', async () => {
    const tag = (await page({ pageSize: '2' })).headers.ETag!;
    const others: Record<string, string>[] = [
      { pageSize: '3' },
      { pageSize: '2', status: 'pending' },
      {},
    ];
    for (const query of others) {
      const answer = await page(query, { 'If-None-Match': tag });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers.ETag).not.toBe(tag);
    }
  });

  it('is never 304 once a cancel changed the list: the old tag gets 200 with the change', async () => {
    const tag = (await page({ pageSize: '2' })).headers.ETag!;
    expect((await cancel('2')).statusCode).toBe(204);
    const answer = await page({ pageSize: '2' }, { 'If-None-Match': tag });
    expect(answer.statusCode).toBe(200);
    // The order as v1 shows it: its status, and nothing of the cancel's trail.
    expect(answer.body).toContain('{"id":2,"petId":7,"status":"cancelled"}');
    expect(answer.headers.ETag).not.toBe(tag);
  });

  it('of an index is tagged by its content, however long ago the list changed: every 200 has a tag, and no 304 is wrong', async () => {
    expect((await cancel('1')).statusCode).toBe(204);
    // An index may lag the change: the page is tagged by what it holds.
    const fresh = await page({ status: 'pending' });
    expect(fresh.statusCode).toBe(200);
    expect(ids(fresh)).toEqual(['2', '9223372036854775807']);
    const byContent = fresh.headers.ETag!;
    expect(byContent).toMatch(/^W\/"[\w-]{22}"$/);
    // Its 304 reads the page again (the Queries of its index): the same page, nothing sent.
    let again: HttpResult | undefined;
    const pageRead = await timeDynamoDbCalls(t.client, async () => {
      again = await page({ status: 'pending' }, { 'If-None-Match': byContent });
    });
    expect(again!.statusCode).toBe(304);
    expect(again!.body).toBe('');
    expect(again!.headers.ETag).toBe(byContent);
    expect(pageRead.map((c) => c.command)).toContain('QueryCommand');
    // The page changes: its old tag gets the new page.
    expect((await cancel('2')).statusCode).toBe(204);
    const changed = await page({ status: 'pending' }, { 'If-None-Match': byContent });
    expect(changed.statusCode).toBe(200);
    expect(ids(changed)).toEqual(['9223372036854775807']);
    expect(changed.headers.ETag).not.toBe(byContent);

    // Long after the change: still its content's tag (a tag by version would outlive a lag past
    // INDEX_SETTLE_MS), still answered 304 by reading the page again.
    clockOffsetMs = INDEX_SETTLE_MS + 1_000;
    const settled = await page({ status: 'pending' });
    expect(ids(settled)).toEqual(['9223372036854775807']);
    expect(settled.headers.ETag).toBe(changed.headers.ETag);
    let hit: HttpResult | undefined;
    const reread = await timeDynamoDbCalls(t.client, async () => {
      hit = await page({ status: 'pending' }, { 'If-None-Match': settled.headers.ETag! });
    });
    expect(hit!.statusCode).toBe(304);
    expect(hit!.headers.ETag).toBe(settled.headers.ETag);
    expect(reread.map((c) => c.command)).toContain('QueryCommand');
    // A pet's page is another index's: its own tag, also 304 while nothing changes.
    const pet = await page({ petId: '7' });
    expect(ids(pet)).toEqual(['1', '2', '9223372036854775807']);
    expect(pet.headers.ETag).not.toBe(settled.headers.ETag);
    expect((await page({ petId: '7' }, { 'If-None-Match': pet.headers.ETag! })).statusCode).toBe(
      304,
    );
  });

  it('of the table is tagged by version: its 304 reads the version items only', async () => {
    const first = await page({});
    const tag = first.headers.ETag!;
    expect(tag).toMatch(/^W\/"[\w-]{22}"$/);
    let hit: HttpResult | undefined;
    const versionOnly = await timeDynamoDbCalls(t.client, async () => {
      hit = await page({}, { 'If-None-Match': tag });
    });
    expect(hit!.statusCode).toBe(304);
    expect(versionOnly.map(({ command, table }) => [command, table])).toEqual([
      ['UpdateItemCommand', t.tables.rateLimits],
      ['BatchGetItemCommand', t.tables.orders],
    ]);
  });
});

describe('the clock', () => {
  it('is read once a request, for the limiter, the deadline and the page tag alike', async () => {
    let reads = 0;
    const counting = createListOrderPagesHandler({
      orders: () => store,
      pages: () => pages,
      limiter: () => limiter,
      freeAllowance: () => limiter,
      now: () => (reads++, now()),
    });
    const ask = (headers: Record<string, string>) => pageOf(counting, { pageSize: '2' }, headers);
    const first = await ask({});
    expect(first.statusCode).toBe(200);
    expect(reads).toBe(1);
    // A conditional request: the free allowance, the version's check and its tag, one reading.
    const hit = await ask({ 'If-None-Match': first.headers.ETag! });
    expect(hit.statusCode).toBe(304);
    expect(reads).toBe(2);
    const miss = await ask({ 'If-None-Match': 'W/"another"' });
    expect(miss.statusCode).toBe(200);
    expect(reads).toBe(3);
  });
});

describe('what a page costs the key', () => {
  // A second after the minute began: the free allowance's window does not end mid-test.
  beforeEach(() => void (clockOffsetMs = 1_000 - (Date.now() % 60_000)));

  it('a 304 uses none of the plan within the free allowance; a changed page counts', async () => {
    const key = caller(10, 1_000);
    const first = await page({ pageSize: '1' }, {}, key);
    expect(remaining(first)).toBe(9);
    for (let i = 0; i < 3; i++) {
      const answer = await page({ pageSize: '1' }, { 'If-None-Match': first.headers.ETag! }, key);
      expect(answer.statusCode).toBe(304);
      expect(remaining(answer)).toBe(9);
    }
    const other = await page({ pageSize: '1' }, { 'If-None-Match': 'W/"not-the-tag"' }, key);
    expect(other.statusCode).toBe(200);
    expect(remaining(other)).toBe(8);
  });

  it('a banned key is refused 429 and reads nothing of the orders, whatever it asks', async () => {
    const key = caller();
    const tag = (await page({ pageSize: '2' })).headers.ETag!;
    await t.client.send(
      new UpdateCommand({
        TableName: t.tables.rateLimits,
        Key: { pk: counterKey(key.keyId) },
        UpdateExpression: 'SET bu = :until',
        ExpressionAttributeValues: { ':until': now() + 60_000 },
      }),
    );
    const counter = countDynamoDbCalls(t.client, t.tables.orders);
    const asked: [Record<string, string>, Record<string, string>][] = [
      [{ pageSize: '2' }, { 'If-None-Match': tag }],
      [{ pageSize: '2' }, { 'If-None-Match': '*' }],
      [{ status: 'pending' }, {}],
      // A malformed query is refused 400 only once counted: a banned key gets its 429.
      [{ status: 'lost' }, {}],
    ];
    for (const [query, headers] of asked) {
      const answer = await page(query, headers, key);
      expect(answer.statusCode).toBe(429);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'API_KEY_TEMPORARILY_BANNED' });
      expect(Number(answer.headers['Retry-After'])).toBeGreaterThan(50);
    }
    expect(counter.calls).toEqual([]);
  });
});

describe('a page whose index is not deployed', () => {
  const notDeployed = createListOrderPagesHandler({
    orders: () => store,
    pages: () =>
      new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: new Set(['ordersByPet']) }),
    limiter: () => limiter,
    freeAllowance: () => limiter,
    now,
  });
  const ask = (headers: Record<string, string>) =>
    pageOf(notDeployed, { status: 'pending' }, headers);

  it('is answered 503 once counted, having read nothing of the orders table: no version read, plain or conditional', async () => {
    const asked: Record<string, string>[] = [
      {},
      { 'If-None-Match': 'W/"some-tag"' },
      { 'If-None-Match': '*' },
    ];
    for (const headers of asked) {
      let answer: HttpResult | undefined;
      const calls = await timeDynamoDbCalls(t.client, async () => {
        answer = await ask(headers);
      });
      expect(answer!.statusCode).toBe(503);
      expect(answer!.headers['Retry-After']).toBeDefined();
      expect(answer!.body).toContain('SERVICE_UNAVAILABLE');
      // The filter is planned as the request is read: a refusal, answered once the request is
      // counted (conditional or not, as a malformed query), with nothing else read or written.
      expect(calls.map(({ command, table }) => [command, table])).toEqual([
        ['UpdateItemCommand', t.tables.rateLimits],
      ]);
      expect(answer!.headers['X-RateLimit-Remaining']).toBeDefined();
    }
  });
});

/**
 * Fault injection at every DynamoDB call site — the authorizer's GetItem, the limiter's
 * UpdateItem, the cancel's read and UpdateItem and version mark, v1's list version read, first
 * page and a later page, v2's page version read, index Query and its orders' BatchGetItem — for
 * each fault:
 * throttling, a 500, a call stalled past its deadline, a connection reset, access denied, a
 * missing table. Requests go through the API Gateway emulation to the real handlers on
 * DynamoDB Local; only the faults are injected (an SDK middleware). For each: the status,
 * Retry-After, the rate-limit headers, the log line (with the request id the client saw) and
 * the metric, the time to answer, and what is stored.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDocumentClient, createSingleAttemptClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { itemStatus } from '../../lib/dynamodb/order-item.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES, orderShard } from '../../lib/dynamodb/tables.ts';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { registerKeys } from '../../lib/keys/plaintext-keys.ts';
import { DEFAULT_LIMITER_SETTINGS } from '../../lib/limits/limiter.ts';
import type { Order } from '../../lib/orders/order.ts';
import { createGateway } from '../../local/gateway.ts';
import type { CallSummary } from '../../functions/shared/dynamodb-calls.ts';
import {
  captureObservations,
  faultError,
  FAULTS,
  injectFault,
  TRANSIENT_FAULTS,
  type Fault,
  type FaultTarget,
} from '../support/faults.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

// The functions log at INFO here: the log lines are part of what is checked.
process.env.LOG_LEVEL = 'INFO';
const { createAuthorizerHandler } = await import('../../functions/authorizer.ts');
const { createCancelOrderHandler } = await import('../../functions/cancel-order.ts');
const { createListOrdersHandler } = await import('../../functions/list-orders.ts');
const { createListOrderPagesHandler } = await import('../../functions/list-order-pages.ts');
const { onLimiterStoreFailure, onListVersionReleaseFailure } =
  await import('../../functions/shared/stores.ts');
const { recordCalls } = await import('../../functions/shared/dynamodb-calls.ts');

const PAGE_TIMEOUT_MS = 1_000;
let t: TestTables;
let fnClient: ReturnType<typeof createDocumentClient>;
let limiterClient: ReturnType<typeof createDocumentClient>;
let server: Server;
let url: string;
let urlV2: string;

/** Shard 1 holds ids 1, 9, 17…: with pages of 5 orders the list reads later pages. */
const ORDERS: Order[] = Array.from({ length: 40 }, (_, i) => ({
  id: BigInt(i + 1),
  petId: BigInt(100 + i),
  status: 'pending',
}));

beforeAll(async () => {
  t = await createTestTables('faults');
  fnClient = recordCalls(createDocumentClient({ endpoint: t.endpoint }));
  limiterClient = recordCalls(createSingleAttemptClient({ endpoint: t.endpoint }));
  const keys = new DynamoDbKeyStore(fnClient, t.tables.apiKeys);
  const orders = new DynamoDbOrderStore(fnClient, t.tables.orders, {
    pageSize: 2,
    pageTimeoutMs: PAGE_TIMEOUT_MS,
    listVersion: { onReleaseFailure: onListVersionReleaseFailure },
  });
  const limiter = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits, {
    onStoreFailure: onLimiterStoreFailure(DEFAULT_LIMITER_SETTINGS),
  });
  const pages = new DynamoDbOrderPages(fnClient, t.tables.orders, {
    indexes: new Set(ORDER_INDEX_NAMES),
  });
  const deps = { orders: () => orders, limiter: () => limiter, pages: () => pages };
  const listener = createGateway({
    functions: {
      listOrders: createListOrdersHandler(deps),
      listOrderPages: createListOrderPagesHandler(deps),
      cancelOrder: createCancelOrderHandler(deps),
    },
    authorizer: createAuthorizerHandler({ keys: () => keys }),
    authorizerTtlSeconds: 0,
  });
  server = createServer((req, res) => void listener(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  [url, urlV2] = [`${origin}/v1`, `${origin}/v2`];
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  fnClient.destroy();
  limiterClient.destroy();
  await t.drop();
});
const resetOrders = () => new DynamoDbOrderStore(t.client, t.tables.orders).putOrders(ORDERS);
beforeEach(resetOrders);

const observations = captureObservations();
afterEach(() => observations.reset());
afterAll(() => observations.restore());

/** A key of its own per case: a fresh counter, nothing cached. */
async function newKey(): Promise<{ key: string; keyId: string }> {
  const key = generateApiKey();
  const store = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
  await registerKeys(store, [{ key, plan: 'free' }], new Date());
  const record = await store.findByHash(hashApiKey(key));
  return { key, keyId: record!.keyId };
}

async function counted(keyId: string): Promise<number> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.rateLimits, Key: { pk: counterKey(keyId) } }),
  );
  return Number(Item?.mc ?? 0);
}

/** The order's status, all told (a cancel's trail makes it cancelled: lib/dynamodb/order-item.ts). */
async function statusOf(id: bigint): Promise<unknown> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.orders, Key: { shard: orderShard(id), id } }),
  );
  return Item && itemStatus(Item);
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** Milliseconds from the request to its status line. */
  readonly ms: number;
  /** The body, or undefined when the connection was cut before it ended. */
  readonly body: string | undefined;
}

async function request(
  method: 'GET' | 'DELETE',
  path: string,
  key: string,
  base = url,
): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}` },
  });
  const ms = performance.now() - started;
  let body: string | undefined;
  try {
    body = await response.text();
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, ms, body };
}

interface Site {
  readonly target: () => FaultTarget;
  readonly request: (key: string) => Promise<Answer>;
  /** How the failure names what failed (default: the orders table). */
  readonly dependency?: string;
}

/** The shard of an UpdateItem's key, as sent (marshalled): negative for a list version item. */
const shardOf = (input: Record<string, unknown>) =>
  Number((input.Key as { shard?: { N?: string } } | undefined)?.shard?.N);
/** The mark of a list version item (its release REMOVEs the entry). */
const isMark = (input: Record<string, unknown>) =>
  shardOf(input) < 0 && String(input.UpdateExpression).startsWith('SET');
/** The shard of a BatchGetItem's first key: negative for the list version's items. */
const batchShardOf = (input: Record<string, unknown>) => {
  const requests = Object.values(input.RequestItems as Record<string, { Keys: unknown[] }>);
  return Number((requests[0]?.Keys[0] as { shard?: { N?: string } }).shard?.N);
};

const list = (key: string) => request('GET', '/store/orders', key);
const cancelFirst = (key: string) => request('DELETE', '/store/orders/1', key);
/** v2: the page of one pet's orders (its index, one partition: one Query, one BatchGetItem). */
const petPage = (key: string) => request('GET', '/store/orders?petId=100', key, urlV2);

const SITES: Record<string, Site> = {
  'authorizer GetItem': {
    target: () => ({ table: t.tables.apiKeys, command: 'GetItemCommand' }),
    request: list,
  },
  'limiter UpdateItem': {
    target: () => ({ table: t.tables.rateLimits, command: 'UpdateItemCommand' }),
    request: cancelFirst,
  },
  'cancel GetItem': {
    target: () => ({ table: t.tables.orders, command: 'GetItemCommand' }),
    request: cancelFirst,
  },
  'cancel UpdateItem': {
    target: () => ({
      table: t.tables.orders,
      command: 'UpdateItemCommand',
      when: (input) => shardOf(input) >= 0,
    }),
    request: cancelFirst,
  },
  'cancel version mark': {
    target: () => ({ table: t.tables.orders, command: 'UpdateItemCommand', when: isMark }),
    request: cancelFirst,
    dependency: 'orders table (list version)',
  },
  'list version read': {
    target: () => ({ table: t.tables.orders, command: 'BatchGetItemCommand' }),
    request: list,
    dependency: 'orders table (list version)',
  },
  'list first page': {
    target: () => ({
      table: t.tables.orders,
      command: 'QueryCommand',
      when: (input) => input.ExclusiveStartKey === undefined,
    }),
    request: list,
  },
  'list later page': {
    target: () => ({
      table: t.tables.orders,
      command: 'QueryCommand',
      when: (input) => input.ExclusiveStartKey !== undefined,
    }),
    request: list,
  },
  'v2 page version read': {
    target: () => ({
      table: t.tables.orders,
      command: 'BatchGetItemCommand',
      when: (input) => batchShardOf(input) < 0,
    }),
    request: petPage,
    dependency: 'orders table (list version)',
  },
  'v2 page index Query': {
    target: () => ({
      table: t.tables.orders,
      command: 'QueryCommand',
      when: (input) => input.IndexName !== undefined,
    }),
    request: petPage,
    dependency: 'orders table (pages)',
  },
  'v2 page orders read': {
    target: () => ({
      table: t.tables.orders,
      command: 'BatchGetItemCommand',
      when: (input) => batchShardOf(input) >= 0,
    }),
    request: petPage,
    dependency: 'orders table (pages)',
  },
};

const RATE_COUNT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

function errorBody(answer: Answer): { code: string; status: number } {
  return JSON.parse(answer.body ?? '') as { code: string; status: number };
}

/** The log lines of a level that carry this message fragment. */
function logged(level: string, fragment: string) {
  return observations
    .logs()
    .filter((line) => line.level === level && line.message.includes(fragment));
}

/**
 * The calls that failed or were abandoned in the 'DynamoDB calls' line of the request (the
 * authorizer's line has no request id: API Gateway gives a TOKEN authorizer none).
 */
function failedCalls(site: string, requestId: string | null): CallSummary[] {
  return logged('INFO', 'DynamoDB calls')
    .filter((line) =>
      site === 'authorizer GetItem'
        ? line.correlation_id === undefined
        : line.correlation_id === requestId,
    )
    .flatMap((line) => line.dynamodb as CallSummary[])
    .filter((call) => call.failed + call.abandoned > 0);
}

/**
 * Sends a case's request on a new key with its faults injected, and gives back the answer and how
 * many calls the faults hit. A busy machine can slow DynamoDB Local past a call's budget before
 * the request reaches the site: that answer is a 503 with no fault hit, and a client tries again,
 * as this does (at most three times, each on a new key and the orders as the case began, so that
 * it starts from a fresh counter).
 */
async function atTheSite(
  send: (key: string) => Promise<Answer>,
  inject: () => { hits(): number; remove(): void }[],
): Promise<{ key: string; keyId: string; answer: Answer; hits: number }> {
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) await resetOrders(); // as before the first: a lost answer may have cancelled
    const { key, keyId } = await newKey();
    const faults = inject();
    let answer: Answer;
    try {
      answer = await send(key);
    } finally {
      for (const fault of faults) fault.remove();
    }
    const hits = faults.reduce((sum, fault) => sum + fault.hits(), 0);
    if (hits > 0 || answer.status !== 503 || attempt === 3) return { key, keyId, answer, hits };
    observations.reset();
  }
}

const table: { site: string; fault: Fault; status: number; ms: number }[] = [];
afterAll(() => {
  console.log(
    '[faults] site × fault → status, ms to status line\n' +
      table
        .map((r) => `  ${r.site.padEnd(20)} ${r.fault.padEnd(17)} ${r.status} ${r.ms.toFixed(0)}`)
        .join('\n'),
  );
});

describe.each(Object.entries(SITES))(
  'a fault at the %s',
  (site, { target, request: send, dependency }) => {
    it.each(FAULTS)(
      '%s: answered in time, classified, logged, counted, nothing applied',
      async (fault) => {
        const { keyId, answer, hits } = await atTheSite(send, () => [
          injectFault(fnClient, target(), fault),
          injectFault(limiterClient, target(), fault),
        ]);
        table.push({ site, fault, status: answer.status, ms: answer.ms });
        expect(hits).toBeGreaterThan(0);
        const transient = TRANSIENT_FAULTS.includes(fault);
        const requestId = answer.headers.get('x-amzn-requestid');
        // Whatever DynamoDB does, the status line comes within the budget.
        expect(answer.ms).toBeLessThan(TIME_BUDGETS.answerMs);
        // The failed call, its time and how it ended, in the invocation's line of DynamoDB calls.
        await vi.waitFor(() => expect(failedCalls(site, requestId)).toHaveLength(1));
        const [call] = failedCalls(site, requestId);
        expect(call).toMatchObject({
          operation: target().command?.replace(/Command$/, ''),
          table: target().table,
        });
        expect(call?.totalMs).toBeGreaterThan(0);
        if (call?.failed) expect(call.lastError).toBe(faultError(fault as 'throttling').name);
        // The cancel never happened.
        expect(await statusOf(1n)).toBe('pending');

        if (site === 'list later page') {
          // The status line had gone out: the stream is cut, never a complete JSON array.
          expect(answer.status).toBe(200);
          expect(() => JSON.parse(answer.body ?? '') as unknown).toThrow();
          const [line] = logged('ERROR', 'List failed after its status line');
          expect(line?.correlation_id).toBe(requestId);
          expect(line?.ordersSent).toBeGreaterThan(0);
          expect(observations.metrics()).toContain('ListStreamFailures');
          return;
        }

        if (site === 'authorizer GetItem') {
          // A failed authorizer is API Gateway's AUTHORIZER_CONFIGURATION_ERROR, 503 whatever the
          // kind (uncached); a permanent failure pages through the authorizer's log and metric.
          expect(answer.status).toBe(503);
          expect(errorBody(answer)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
          expect(answer.headers.get('retry-after')).toBe('1');
          // The function never ran or counted: the key was not checked.
          expect(await counted(keyId)).toBe(0);
          for (const name of RATE_COUNT_HEADERS) expect(answer.headers.get(name)).toBeNull();
          if (transient) {
            expect(logged('WARN', 'Key check failed (transient)')).toHaveLength(1);
            expect(observations.metrics()).toEqual(['ServiceUnavailable']);
          } else {
            expect(logged('ERROR', 'Key check failed (permanent)')).toHaveLength(1);
            // Counted once, by the authorizer alone.
            expect(observations.metrics()).toEqual(['InternalErrors']);
          }
          return;
        }

        expect(answer.status).toBe(transient ? 503 : 500);
        expect(errorBody(answer)).toMatchObject({
          code: transient ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR',
          status: answer.status,
        });
        expect(answer.headers.get('retry-after')).toBe(transient ? '1' : null);

        if (site === 'limiter UpdateItem') {
          // Not counted, and the answer does not claim counts it does not know.
          expect(await counted(keyId)).toBe(0);
          for (const name of RATE_COUNT_HEADERS) expect(answer.headers.get(name)).toBeNull();
          expect(answer.headers.get('ratelimit')).toBeNull();
          if (transient) {
            expect(answer.headers.get('ratelimit-policy')).toBe(
              '"minute";q=60;w=60, "day";q=1000;w=86400',
            );
            const [line] = logged('WARN', 'Rate limiter store failed: failing closed');
            expect(line?.correlation_id).toBe(requestId);
            expect(observations.metrics()).toContain('RateLimiterStoreFailures');
          } else {
            const [line] = logged('ERROR', 'Request failed: answering 500');
            expect(line?.correlation_id).toBe(requestId);
            expect((line?.failure as { reason?: string }).reason).toBe(
              fault === 'access-denied' ? 'access-denied' : 'missing-table',
            );
            expect(observations.metrics()).toEqual(['InternalErrors']);
          }
          return;
        }

        // The cancel, its version mark, the list's version read and first page: the request was
        // counted before the fault.
        expect(await counted(keyId)).toBe(1);
        expect(answer.headers.get('x-ratelimit-remaining')).toBe('59');
        const [line] = transient
          ? logged('WARN', 'Dependency unavailable: answering 503')
          : logged('ERROR', 'Request failed: answering 500');
        expect(line?.correlation_id).toBe(requestId);
        expect(line?.failure).toMatchObject({
          dependency: dependency ?? 'orders table',
          kind: transient ? 'transient' : 'permanent',
        });
        expect(observations.metrics()).toEqual([
          transient ? 'ServiceUnavailable' : 'InternalErrors',
        ]);
      },
    );
  },
);

describe('a cancel whose answer is lost after it was applied', () => {
  it('is answered 503, and a retry converges on 204 with the order cancelled once', async () => {
    const { key } = await newKey();
    const name = 'lose-the-answer';
    fnClient.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string };
        if (
          input.TableName !== t.tables.orders ||
          context.commandName !== 'UpdateItemCommand' ||
          shardOf(input) < 0
        )
          return next(args);
        // Every attempt reaches DynamoDB, and every answer is lost.
        await next(args).catch(() => undefined);
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      },
      { step: 'finalizeRequest', name, priority: 'low' },
    );
    let first: Answer;
    try {
      first = await cancelFirst(key);
    } finally {
      fnClient.middlewareStack.remove(name);
    }
    expect(first.status).toBe(503);
    expect(await statusOf(1n)).toBe('cancelled');
    const retry = await cancelFirst(key);
    expect(retry.status).toBe(204);
    expect(await statusOf(1n)).toBe('cancelled');
  });
});

describe('a fault at the release of the version after a cancel', () => {
  const isRelease = (input: Record<string, unknown>) =>
    shardOf(input) < 0 && String(input.UpdateExpression).startsWith('REMOVE');

  it.each(FAULTS)(
    '%s: the cancel stands (204), a warning and a metric, and the list has no tag',
    async (fault) => {
      const { key, answer, hits } = await atTheSite(cancelFirst, () => [
        injectFault(
          fnClient,
          { table: t.tables.orders, command: 'UpdateItemCommand', when: isRelease },
          fault,
        ),
      ]);
      expect(hits).toBeGreaterThan(0);
      expect(answer.status).toBe(204);
      expect(answer.ms).toBeLessThan(TIME_BUDGETS.answerMs);
      expect(await statusOf(1n)).toBe('cancelled');
      const [line] = logged('WARN', 'List version release failed');
      expect(line?.correlation_id).toBe(answer.headers.get('x-amzn-requestid'));
      expect(observations.metrics()).toEqual(['ListVersionReleaseFailures']);
      // The write's entry is still there, its lease running: no tag, never a 304.
      const listed = await list(key);
      expect(listed.status).toBe(200);
      expect(listed.headers.get('etag')).toBeNull();
      expect(listed.body).toContain('{"id":1,"petId":100,"status":"cancelled"}');
    },
  );
});

describe('stored data the service cannot read whole', () => {
  async function put(item: Record<string, unknown>): Promise<void> {
    await t.client.send(new PutCommand({ TableName: t.tables.orders, Item: item }));
  }

  it('lists an order without status as pending and lets it be cancelled', async () => {
    await put({ shard: orderShard(1001n), id: 1001n, petId: 7n });
    const { key } = await newKey();
    const answer = await list(key);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('{"id":1001,"petId":7,"status":"pending"}');
    expect((await request('DELETE', '/store/orders/1001', key)).status).toBe(204);
    expect(await statusOf(1001n)).toBe('cancelled');
  });

  it('leaves out fields of the wrong type, with one warning per request and a metric', async () => {
    // (A petId of the wrong type cannot be stored at all: the pet indexes' key is a number.)
    await put({ shard: orderShard(1002n), id: 1002n, quantity: 'seven', status: 'pending' });
    await put({ shard: orderShard(1003n), id: 1003n, quantity: 1.5, complete: 'yes', status: 7 });
    const { key } = await newKey();
    const answer = await list(key);
    expect(answer.status).toBe(200);
    const orders = JSON.parse(answer.body ?? '') as Record<string, unknown>[];
    expect(orders.length).toBeGreaterThanOrEqual(ORDERS.length + 2);
    expect(answer.body).toContain('{"id":1002,"status":"pending"}');
    expect(answer.body).toContain('{"id":1003}');
    const warnings = logged('WARN', 'Stored orders could not be read whole');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      unreadableOrders: 2,
      correlation_id: answer.headers.get('x-amzn-requestid'),
    });
    expect(observations.metrics()).toContain('UnreadableOrders');
  });

  it('answers 500 for a cancel of an order whose stored status it does not know, changing nothing', async () => {
    await put({ shard: orderShard(1004n), id: 1004n, status: 'lost-in-transit' });
    const { key } = await newKey();
    const answer = await request('DELETE', '/store/orders/1004', key);
    expect(answer.status).toBe(500);
    expect(logged('ERROR', 'Request failed: answering 500')[0]?.failure).toMatchObject({
      reason: 'malformed-item',
    });
    const { Item } = await t.client.send(
      new GetCommand({ TableName: t.tables.orders, Key: { shard: orderShard(1004n), id: 1004n } }),
    );
    expect(Item?.status).toBe('lost-in-transit');
    expect(Object.keys(Item ?? {}).sort()).toEqual(['id', 'shard', 'status']);
  });

  it('answers 503 (the authorizer fails, uncached) for a malformed key record, and pages', async () => {
    const key = generateApiKey();
    await registerKeys(
      new DynamoDbKeyStore(t.client, t.tables.apiKeys),
      [{ key, plan: 'free' }],
      new Date(),
    );
    await t.client.send(
      new PutCommand({
        TableName: t.tables.apiKeys,
        Item: { keyHash: hashApiKey(key), keyId: 'key_broken', plan: 'gold', status: 'active' },
      }),
    );
    const answer = await list(key);
    expect(answer.status).toBe(503);
    expect(logged('ERROR', 'Key check failed (permanent)')).toHaveLength(1);
    expect(observations.metrics()).toEqual(['InternalErrors']);
  });
});

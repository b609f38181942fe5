/**
 * A request its key may not make, on the three HTTP functions against DynamoDB Local: answered
 * 403 PERMISSION_DENIED with the rate-limit headers, counted like any other request (so a flood
 * of them is limited and banned like any other), before a malformed request's 400, never a 304,
 * and having read and written nothing of the orders table (the list's version included). A key
 * stored before permissions, whose authorizer context carries none, may do everything.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient, createSingleAttemptClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import type { Permission } from '../../lib/keys/permissions.ts';
import { DEFAULT_LIMITER_SETTINGS } from '../../lib/limits/limiter.ts';
import { PLAN_LIMITS, type Limits } from '../../lib/limits/plans.ts';
import { captureObservations } from '../support/faults.ts';
import { countDynamoDbCalls, invokeHttp, proxyEvent, type HttpResult } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

// The functions log at INFO here: the refusal's line is part of what is checked.
process.env.LOG_LEVEL = 'INFO';
const { createCancelOrderHandler } = await import('../../functions/cancel-order.ts');
const { createListOrdersHandler } = await import('../../functions/list-orders.ts');
const { createListOrderPagesHandler } = await import('../../functions/list-order-pages.ts');

let t: TestTables;
let ordersClient: ReturnType<typeof createDocumentClient>;
let limiterClient: ReturnType<typeof createDocumentClient>;
let store: DynamoDbOrderStore;
let limiter: DynamoDbRateLimiter;
let functions: ReturnType<typeof functionsWith>;
/** The functions' clock: a second into a minute, so that a test's requests share its window. */
let clock = 0;
let sequence = 0;

function functionsWith(rateLimiter: () => DynamoDbRateLimiter) {
  const pages = new DynamoDbOrderPages(ordersClient, t.tables.orders, {
    indexes: new Set(ORDER_INDEX_NAMES),
  });
  const deps = {
    orders: () => store,
    limiter: rateLimiter,
    freeAllowance: rateLimiter,
    now: () => clock,
  };
  return {
    cancel: createCancelOrderHandler(deps),
    list: createListOrdersHandler(deps),
    pages: createListOrderPagesHandler({ ...deps, pages: () => pages }),
  };
}

beforeAll(async () => {
  t = await createTestTables('permissions');
  ordersClient = createDocumentClient({ endpoint: t.endpoint });
  limiterClient = createSingleAttemptClient({ endpoint: t.endpoint });
  store = new DynamoDbOrderStore(ordersClient, t.tables.orders);
  limiter = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits);
  functions = functionsWith(() => limiter);
  await store.putOrders([
    { id: 1n, petId: 7n, status: 'pending' },
    { id: 2n, petId: 7n, status: 'shipped', complete: true },
  ]);
  clock = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 1_000;
});
afterAll(async () => {
  ordersClient.destroy();
  limiterClient.destroy();
  await t.drop();
});

const observations = captureObservations();
afterEach(() => observations.reset());
afterAll(() => observations.restore());

/** The authorizer context of a new key with these permissions (none: a context from before). */
function keyWith(permissions: readonly Permission[] | undefined, limits: Limits = PLAN_LIMITS.pro) {
  const keyId = `key_perm${++sequence}`;
  const context = callerToContext({ keyId, plan: 'enterprise', limits, permissions: [] });
  if (permissions) context.permissions = permissions.join(',');
  else delete context.permissions;
  return { keyId, authorizer: { principalId: keyId, ...context } };
}

type Key = ReturnType<typeof keyWith>;

const cancel = (key: Key, orderId: string) =>
  invokeHttp(
    functions.cancel,
    proxyEvent({
      method: 'DELETE',
      resource: '/store/orders/{orderId}',
      path: `/store/orders/${orderId}`,
      pathParameters: { orderId },
      authorizer: key.authorizer,
    }),
  );

/** v1's list or v2's page, conditional when `ifNoneMatch` is given. */
function list(
  version: 'v1' | 'v2',
  key: Key,
  ifNoneMatch?: string,
  query: Record<string, string[]> | null = null,
) {
  const event = proxyEvent({
    method: 'GET',
    resource: '/store/orders',
    path: '/store/orders',
    authorizer: key.authorizer,
  });
  const headers = ifNoneMatch === undefined ? {} : { 'If-None-Match': ifNoneMatch };
  return invokeHttp(version === 'v1' ? functions.list : functions.pages, {
    ...event,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    multiValueQueryStringParameters: query,
  });
}

function expectRefused(answer: HttpResult, permission: Permission): void {
  expect(answer.statusCode).toBe(403);
  expect(answer.headers['Content-Type']).toBe('application/json');
  expect(JSON.parse(answer.body)).toEqual({
    code: 'PERMISSION_DENIED',
    message: `This API key may not ${permission} orders: it lacks the "${permission}" permission.`,
    status: 403,
  });
  for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
    expect(answer.headers[header], header).toMatch(/^\d+$/);
  }
  expect(answer.headers.RateLimit).toMatch(/^"minute";r=\d+;t=\d+, "day";r=\d+;t=\d+$/);
}

async function statusOf(id: bigint): Promise<string | undefined> {
  const [order] = await store.findOrders([id]);
  return order?.status;
}

describe('a request its key may not make', () => {
  it('a cancel by a key that may only read: 403, counted, one line and metric, the order unread and unchanged', async () => {
    const readOnly = keyWith(['read']);
    const orders = countDynamoDbCalls(ordersClient, t.tables.orders);
    const counter = countDynamoDbCalls(limiterClient);
    const first = await cancel(readOnly, '1');
    const second = await cancel(readOnly, '1');
    expectRefused(first, 'cancel');
    expectRefused(second, 'cancel');
    expect(Number(first.headers['X-RateLimit-Remaining'])).toBe(PLAN_LIMITS.pro.perMinute - 1);
    expect(Number(second.headers['X-RateLimit-Remaining'])).toBe(PLAN_LIMITS.pro.perMinute - 2);
    // Nothing of the orders table, the list's version items included; one counter write each.
    expect(orders.calls).toEqual([]);
    expect(counter.calls).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
    expect(await statusOf(1n)).toBe('pending');
    const refusals = observations.logs().filter((line) => line.message === 'Permission refusal');
    expect(refusals).toHaveLength(2);
    expect(refusals[0]).toMatchObject({
      level: 'INFO',
      keyId: readOnly.keyId,
      permission: 'cancel',
      code: 'PERMISSION_DENIED',
      status: 403,
      correlation_id: 'test',
    });
    expect(observations.values('PermissionDenied')).toEqual([1, 1]);
  });

  it('is refused 403 before a malformed id is refused 400 (the key may cancel nothing)', async () => {
    expectRefused(await cancel(keyWith(['read']), 'abc'), 'cancel');
    const mayCancel = await cancel(keyWith(['cancel']), 'abc');
    expect(mayCancel.statusCode).toBe(400);
  });

  it.each(['v1', 'v2'] as const)(
    "%s's list by a key that may only cancel: 403, counted, conditional or not (never a 304), reading nothing of the orders",
    async (version) => {
      const cancelOnly = keyWith(['cancel']);
      const reader = keyWith(['read']);
      const listed = await list(version, reader);
      expect(listed.statusCode).toBe(200);
      const etag = listed.headers.ETag!;
      expect(etag).toMatch(/^W\//);
      // The tag is current: the key that may read gets its 304.
      expect((await list(version, reader, etag)).statusCode).toBe(304);

      const orders = countDynamoDbCalls(ordersClient, t.tables.orders);
      const answers = [
        await list(version, cancelOnly),
        await list(version, cancelOnly, etag),
        await list(version, cancelOnly, '*'),
        // A malformed query too: refused 403, not 400.
        await list(version, cancelOnly, undefined, { status: ['lost'] }),
      ];
      for (const answer of answers) expectRefused(answer, 'read');
      // Each counted (the conditional ones too: a refused request takes no free 304).
      expect(answers.map((a) => Number(a.headers['X-RateLimit-Remaining']))).toEqual([
        PLAN_LIMITS.pro.perMinute - 1,
        PLAN_LIMITS.pro.perMinute - 2,
        PLAN_LIMITS.pro.perMinute - 3,
        PLAN_LIMITS.pro.perMinute - 4,
      ]);
      expect(orders.calls).toEqual([]);
    },
  );

  it('a key from before permissions (its context carries none) may read and cancel', async () => {
    const before = keyWith(undefined);
    expect(before.authorizer).not.toHaveProperty('permissions');
    expect((await list('v1', before)).statusCode).toBe(200);
    expect((await list('v2', before)).statusCode).toBe(200);
    expect((await cancel(before, '2')).statusCode).toBe(409);
  });

  it('a flood of them is limited, then banned, like any other', async () => {
    // A container of its own: a limiter with a ban after 2 early refusals.
    const strict = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits, {
      settings: { ...DEFAULT_LIMITER_SETTINGS, maxRefusalsPerMinute: 2 },
    });
    const saved = functions;
    functions = functionsWith(() => strict);
    try {
      const readOnly = keyWith(['read'], { perMinute: 3, perDay: 100 });
      const codes: string[] = [];
      for (let i = 0; i < 8; i++) {
        const answer = await cancel(readOnly, '1');
        codes.push((JSON.parse(answer.body) as { code: string }).code);
      }
      expect(codes).toEqual([
        ...Array(3).fill('PERMISSION_DENIED'),
        ...Array(3).fill('RATE_LIMITED'),
        ...Array(2).fill('API_KEY_TEMPORARILY_BANNED'),
      ]);
      expect(await statusOf(1n)).toBe('pending');
    } finally {
      functions = saved;
    }
  });
});

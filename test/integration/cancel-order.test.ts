import { GetCommand, NumberValue, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { itemStatus } from '../../lib/dynamodb/order-item.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { orderShard } from '../../lib/dynamodb/tables.ts';
import type { CallOptions } from '../../lib/failures.ts';
import type { Order } from '../../lib/orders/order.ts';
import type { Cancellation, CancelOutcome, OrderStore } from '../../lib/orders/order-store.ts';
import {
  countDynamoDbCalls,
  failDynamoDbCalls,
  invokeHttp,
  proxyEvent,
  TEST_CALLER_CONTEXT,
  timeDynamoDbCalls,
  type TimedCall,
} from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';

let t: TestTables;
let store: DynamoDbOrderStore;
let limiter: DynamoDbRateLimiter;
const handler = createCancelOrderHandler({ orders: () => store, limiter: () => limiter });

const cancel = (orderId: string) =>
  invokeHttp(
    handler,
    proxyEvent({
      method: 'DELETE',
      resource: '/store/orders/{orderId}',
      path: `/store/orders/${orderId}`,
      pathParameters: { orderId },
    }),
  );

/** The order's status, all told (a cancel's trail makes it cancelled: lib/dynamodb/order-item.ts). */
async function statusOf(id: bigint): Promise<string | undefined> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.orders, Key: { shard: orderShard(id), id } }),
  );
  return Item && itemStatus(Item);
}

const ORDERS: Order[] = [
  { id: 1n, petId: 10n, quantity: 1, status: 'pending' },
  { id: 2n, status: 'shipped', complete: true },
  { id: 3n, status: 'cancelled' },
  { id: 9223372036854775807n, petId: 9223372036854775806n, status: 'pending' },
  { id: -9223372036854775808n, status: 'pending' },
];

beforeAll(async () => {
  t = await createTestTables('cancel');
  store = new DynamoDbOrderStore(t.client, t.tables.orders);
  limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
});
afterAll(() => t.drop());
beforeEach(() => store.putOrders(ORDERS));

describe('cancelOrder against DynamoDB', () => {
  it('cancels a pending order with 204 and no body', async () => {
    const response = await cancel('1');
    expect(response).toMatchObject({ statusCode: 204, body: '' });
    expect(await statusOf(1n)).toBe('cancelled');
  });

  it('answers 500 and changes nothing when no caller came with the request (a route without the authorizer)', async () => {
    const answer = await invokeHttp(
      handler,
      proxyEvent({
        method: 'DELETE',
        resource: '/store/orders/{orderId}',
        path: '/store/orders/1',
        pathParameters: { orderId: '1' },
        authorizer: {},
      }),
    );
    expect(answer.statusCode).toBe(500);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'INTERNAL_ERROR', status: 500 });
    expect(answer.headers['RateLimit-Policy']).toBeUndefined();
    expect(await statusOf(1n)).toBe('pending');
  });

  it('answers 204 again for an order already cancelled, changing nothing', async () => {
    expect((await cancel('3')).statusCode).toBe(204);
    expect((await cancel('1')).statusCode).toBe(204);
    expect((await cancel('1')).statusCode).toBe(204);
    expect(await statusOf(1n)).toBe('cancelled');
  });

  it('answers 409 ORDER_ALREADY_SHIPPED and leaves a shipped order shipped', async () => {
    const response = await cancel('2');
    expect(response.statusCode).toBe(409);
    expect(response.headers['Content-Type']).toBe('application/json');
    expect(JSON.parse(response.body)).toEqual({
      code: 'ORDER_ALREADY_SHIPPED',
      message: 'Order 2 has already shipped and cannot be cancelled.',
      status: 409,
    });
    expect(await statusOf(2n)).toBe('shipped');
  });

  it('answers 404 ORDER_NOT_FOUND for an id that does not exist, creating nothing', async () => {
    const response = await cancel('42');
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({
      code: 'ORDER_NOT_FOUND',
      message: 'Order 42 was not found.',
      status: 404,
    });
    expect(await statusOf(42n)).toBeUndefined();
  });

  describe('the trail', () => {
    /** A cancel as a request with its own id, by its own key, at a time the function reads. */
    const cancelAs = (orderId: string, keyId: string, requestId: string, now: number) => {
      const traced = createCancelOrderHandler({
        orders: () => store,
        limiter: () => limiter,
        now: () => now,
      });
      const event = proxyEvent({
        method: 'DELETE',
        resource: '/store/orders/{orderId}',
        path: `/store/orders/${orderId}`,
        pathParameters: { orderId },
        authorizer: { ...TEST_CALLER_CONTEXT, principalId: keyId, keyId },
      });
      return invokeHttp(traced, {
        ...event,
        requestContext: { ...event.requestContext, requestId },
      });
    };

    async function stored(id: bigint): Promise<Record<string, unknown> | undefined> {
      const { Item } = await t.client.send(
        new GetCommand({ TableName: t.tables.orders, Key: { shard: orderShard(id), id } }),
      );
      return Item;
    }
    const trailOf = async (id: bigint) => {
      const item = await stored(id);
      return {
        cancelledAt: item?.cancelledAt === undefined ? undefined : Number(item.cancelledAt),
        cancelledBy: item?.cancelledBy,
        cancelRequestId: item?.cancelRequestId,
      };
    };
    const AT = Date.UTC(2026, 10, 28, 9, 30, 15, 250);

    it('records when, by which key and in which request the order was cancelled, with its status', async () => {
      expect((await cancelAs('1', 'key_WarehouseA', 'req-1', AT)).statusCode).toBe(204);
      expect(await statusOf(1n)).toBe('cancelled');
      expect(await trailOf(1n)).toEqual({
        cancelledAt: AT,
        cancelledBy: 'key_WarehouseA',
        cancelRequestId: 'req-1',
      });
    });

    it("keeps the first cancel's trail: a cancel that changes nothing records nothing", async () => {
      expect((await cancelAs('1', 'key_First', 'req-first', AT)).statusCode).toBe(204);
      expect((await cancelAs('1', 'key_Second', 'req-second', AT + 60_000)).statusCode).toBe(204);
      expect((await cancelAs('2', 'key_Second', 'req-shipped', AT)).statusCode).toBe(409);
      expect(await trailOf(1n)).toEqual({
        cancelledAt: AT,
        cancelledBy: 'key_First',
        cancelRequestId: 'req-first',
      });
      expect(await trailOf(2n)).toEqual({
        cancelledAt: undefined,
        cancelledBy: undefined,
        cancelRequestId: undefined,
      });
      // A ship leaves no cancel's trail either.
      await store.putOrders([{ id: 5n, status: 'pending' }]);
      expect(await store.ship(5n)).toBe('shipped');
      expect(await stored(5n)).not.toHaveProperty('cancelledBy');
    });
  });

  it('cancels the int64 extremes by their exact ids', async () => {
    expect((await cancel('9223372036854775807')).statusCode).toBe(204);
    expect((await cancel('-9223372036854775808')).statusCode).toBe(204);
    expect(await statusOf(9223372036854775807n)).toBe('cancelled');
    // The neighbour that a JS number would round to is not touched.
    expect((await cancel('9223372036854775806')).statusCode).toBe(404);
  });

  it.each(['abc', '1.5', '1e3', '0x10', '9223372036854775808', '-9223372036854775809', ' 1'])(
    'answers 400 INVALID_ORDER_ID for %j without calling DynamoDB',
    async (orderId) => {
      const counter = countDynamoDbCalls(t.client, t.tables.orders);
      const response = await cancel(orderId);
      expect(response.statusCode).toBe(400);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'INVALID_ORDER_ID', status: 400 });
      expect(counter.calls).toEqual([]);
    },
  );

  it('reads the order first, and writes it between a mark and a release of the list version only when the cancel changes it', async () => {
    const keys: unknown[] = [];
    const name = `keys${Math.random()}`;
    t.client.middlewareStack.add(
      (next) => (args) => {
        const input = args.input as { TableName?: string; Key?: { shard?: { N?: string } } };
        if (input.TableName === t.tables.orders) keys.push(Number(input.Key?.shard?.N));
        return next(args);
      },
      { step: 'finalizeRequest', name },
    );
    const counter = countDynamoDbCalls(t.client, t.tables.orders);
    try {
      // A pending order: read, then mark, write, release.
      await cancel('1');
      expect(counter.calls).toEqual([
        'GetItemCommand',
        'UpdateItemCommand',
        'UpdateItemCommand',
        'UpdateItemCommand',
      ]);
      // The order's own partition (shard = id mod 8), between two writes of one version item.
      const [read, mark, order, release] = keys as [number, number, number, number];
      expect([read, order]).toEqual([1, 1]);
      expect(mark).toBeLessThan(0);
      expect(release).toBe(mark);
      // Already cancelled, shipped, unknown: the read alone answers; no mark, no write.
      for (const [id, status] of [
        ['1', 204],
        ['2', 409],
        ['42', 404],
      ] as const) {
        counter.reset();
        keys.splice(0);
        expect((await cancel(id)).statusCode).toBe(status);
        expect(counter.calls).toEqual(['GetItemCommand']);
        expect(keys).toEqual([Number(BigInt(id) % 8n)]);
      }
    } finally {
      t.client.middlewareStack.remove(name);
    }
  });

  it.each([
    ['shipped', 409],
    ['cancelled', 204],
  ] as const)(
    'answers a %s order by its status alone, whatever else is stored in it (a number no JS number holds)',
    async (status, expected) => {
      const id = 77n;
      await t.client.send(
        new PutCommand({
          TableName: t.tables.orders,
          Item: {
            shard: orderShard(id),
            id,
            status,
            quantity: NumberValue.from('123456789012345678901234567890.5'),
            note: NumberValue.from('1e125'),
          },
        }),
      );
      expect((await cancel(String(id))).statusCode).toBe(expected);
      expect(await statusOf(id)).toBe(status);
    },
  );

  it('decides first: the rate limiter has answered before the order is read', async () => {
    const calls = await timeDynamoDbCalls(t.client, async () => {
      expect((await cancel('1')).statusCode).toBe(204);
    });
    expect(calls.map((call) => `${call.command} ${call.table}`)).toEqual([
      `UpdateItemCommand ${t.tables.rateLimits}`,
      `GetItemCommand ${t.tables.orders}`,
      `UpdateItemCommand ${t.tables.orders}`,
      `UpdateItemCommand ${t.tables.orders}`,
      `UpdateItemCommand ${t.tables.orders}`,
    ]);
    const [count, read] = calls as [TimedCall, TimedCall];
    expect(read.sent).toBeGreaterThanOrEqual(count.answered!);
  });

  it('touches nothing of the orders for a request the rate limiter refuses: the list keeps its tag', async () => {
    const refusing = createCancelOrderHandler({
      orders: () => store,
      limiter: () => ({
        consume: (_caller, now) =>
          Promise.resolve({
            decision: {
              outcome: 'limited',
              at: now,
              minute: { start: now - (now % 60_000), current: 60, previous: 0 },
              day: { start: now - (now % 86_400_000), current: 60, previous: 0 },
              retryAfterMs: 1_000,
            },
            degraded: false,
          }),
      }),
    });
    const before = await store.readListVersion();
    const counter = countDynamoDbCalls(t.client, t.tables.orders);
    const response = await invokeHttp(
      refusing,
      proxyEvent({
        method: 'DELETE',
        resource: '/store/orders/{orderId}',
        path: '/store/orders/1',
        pathParameters: { orderId: '1' },
      }),
    );
    expect(response.statusCode).toBe(429);
    expect(counter.calls).toEqual([]);
    expect(await statusOf(1n)).toBe('pending');
    const after = await store.readListVersion();
    expect(after.tag).toBeDefined();
    expect(after.tag).toBe(before.tag);
  });

  it('many parallel cancels of one order all answer 204 and cancel it once', async () => {
    // What this proves is the conditional write under concurrency, not time: 50 invocations in
    // one process against DynamoDB Local on a busy 2-core machine take seconds (the first burst
    // on a cold client up to 6 s with a CPU hog beside it, measured), where 100 Lambda
    // containers on DynamoDB take milliseconds. So the requests get a budget no busy machine
    // exhausts; the time budget itself is proven in faults.test.ts and
    // budget-from-arrival.test.ts.
    const outcomes: CancelOutcome[] = [];
    const counting: OrderStore = Object.assign(Object.create(store) as OrderStore, {
      cancel: async (id: bigint, cancellation: Cancellation, options?: CallOptions) => {
        const outcome = await store.cancel(id, cancellation, options);
        outcomes.push(outcome);
        return outcome;
      },
    });
    const patient = createCancelOrderHandler({
      orders: () => counting,
      limiter: () => limiter,
      requestBudgetMs: 25_000,
    });
    const responses = await Promise.all(
      // 50 at once: each cancel makes four writes (the limiter's, the version mark, the order's,
      // the release), and DynamoDB Local writes one item at a time.
      Array.from({ length: 50 }, () =>
        invokeHttp(
          patient,
          proxyEvent({
            method: 'DELETE',
            resource: '/store/orders/{orderId}',
            path: '/store/orders/1',
            pathParameters: { orderId: '1' },
          }),
        ),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(204));
    expect(await statusOf(1n)).toBe('cancelled');
    // Exactly one of them changed the order; the others found it cancelled.
    expect(outcomes.filter((o) => o === 'cancelled')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already-cancelled')).toHaveLength(49);
  }, 60_000);

  it('cancels racing shipments never leave a shipped order cancelled, and exactly one write wins', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => 1_000n + BigInt(i));
    await store.putOrders(ids.map((id) => ({ id, status: 'pending' as const })));
    const ship = (id: bigint) =>
      t.client
        .send(
          new UpdateCommand({
            TableName: t.tables.orders,
            Key: { shard: orderShard(id), id },
            UpdateExpression: 'SET #s = :shipped',
            ConditionExpression: '#s = :pending',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':pending': 'pending', ':shipped': 'shipped' },
          }),
        )
        .then(
          () => 'shipped',
          () => 'refused',
        );
    const jitter = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
    await Promise.all(
      ids.map(async (id) => {
        const cancels = Array.from({ length: 5 }, () =>
          jitter().then(() => store.cancel(id, TEST_CANCELLATION)),
        );
        const ships = Array.from({ length: 5 }, () => jitter().then(() => ship(id)));
        const [cancelled, shipped] = [await Promise.all(cancels), await Promise.all(ships)];
        const final = await statusOf(id);
        if (final === 'shipped') {
          // The shipment won: every cancel saw it and changed nothing.
          expect(cancelled.every((o) => o === 'shipped')).toBe(true);
          expect(shipped.filter((s) => s === 'shipped')).toHaveLength(1);
        } else {
          expect(final).toBe('cancelled');
          expect(cancelled.filter((o) => o === 'cancelled')).toHaveLength(1);
          expect(cancelled.every((o) => o === 'cancelled' || o === 'already-cancelled')).toBe(true);
          expect(shipped.every((s) => s === 'refused')).toBe(true);
        }
      }),
    );
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After when the orders table is throttling', async () => {
    const restore = failDynamoDbCalls(
      t.client,
      () =>
        Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ThrottlingException',
          $metadata: {},
        }),
      t.tables.orders,
    );
    try {
      const response = await cancel('1');
      expect(response.statusCode).toBe(503);
      expect(response.headers['Retry-After']).toBe('1');
      expect(JSON.parse(response.body)).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        message: 'The service is temporarily unavailable; retry after the indicated time.',
        status: 503,
      });
    } finally {
      restore();
    }
    expect(await statusOf(1n)).toBe('pending');
  });

  it('answers 500 INTERNAL_ERROR without internal detail on a bug', async () => {
    const restore = failDynamoDbCalls(
      t.client,
      () =>
        Object.assign(new Error('One or more parameter values were invalid: secret detail'), {
          name: 'ValidationException',
          $metadata: { httpStatusCode: 400 },
        }),
      t.tables.orders,
    );
    try {
      const response = await cancel('1');
      expect(response.statusCode).toBe(500);
      expect(response.body).toBe(
        '{"code":"INTERNAL_ERROR","message":"An internal error occurred.","status":500}',
      );
    } finally {
      restore();
    }
  });
});

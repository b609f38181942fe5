/**
 * What a cancel costs in request units, as DynamoDB Local reports them (ReturnConsumedCapacity
 * INDEXES on every call the function makes): on a table with the current indexes, a cancel of a
 * pending order writes its trail and moves it in ordersByStatus alone (7 units), a cancel that
 * changes nothing reads once (2); a table upgrading from 1.0.0, which gets its indexes one deploy
 * at a time, gets the same write, which costs what its indexes so far take of it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from '../../lib/dynamodb/tables.ts';
import { invokeHttp, proxyEvent, TEST_CALLER_CONTEXT } from '../support/lambda.ts';
import { LARGEST_ORDER, LONGEST_KEY_ID } from '../support/largest-order.ts';
import { createTestTables } from '../support/tables.ts';

/** What one call consumed: its command, its units, and each index's share. */
interface Consumed {
  readonly command: string;
  readonly units: number;
  readonly indexes: Record<string, number>;
}

/** A table of these indexes, a store, and the cancels' costs. */
async function tableOf(label: string, ordersIndexes: readonly OrderIndexName[]) {
  const t = await createTestTables(label, { ordersIndexes });
  const store = new DynamoDbOrderStore(t.client, t.tables.orders);
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  const handler = createCancelOrderHandler({ orders: () => store, limiter: () => limiter });
  await store.putOrders([
    LARGEST_ORDER,
    { id: 2n, status: 'shipped', complete: true },
    { id: 3n, status: 'cancelled' },
  ]);
  /** Every call one cancel makes, with what it consumed, and its answer's status. */
  const cancel = async (id: bigint): Promise<{ status: number; calls: Consumed[] }> => {
    const calls: Consumed[] = [];
    const name = `capacity${Math.random()}`;
    t.client.middlewareStack.add(
      (next, context) => async (args) => {
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
        const result = await next(args);
        const consumed = (
          result.output as {
            ConsumedCapacity?: {
              CapacityUnits?: number;
              GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
            };
          }
        ).ConsumedCapacity;
        calls.push({
          command: context.commandName ?? '',
          units: consumed?.CapacityUnits ?? Number.NaN,
          indexes: Object.fromEntries(
            Object.entries(consumed?.GlobalSecondaryIndexes ?? {}).map(([index, c]) => [
              index,
              c.CapacityUnits ?? Number.NaN,
            ]),
          ),
        });
        return result;
      },
      { step: 'initialize', name },
    );
    try {
      const orderId = String(id);
      const event = proxyEvent({
        method: 'DELETE',
        resource: '/store/orders/{orderId}',
        path: `/store/orders/${orderId}`,
        pathParameters: { orderId },
        authorizer: { ...TEST_CALLER_CONTEXT, principalId: LONGEST_KEY_ID, keyId: LONGEST_KEY_ID },
      });
      const answer = await invokeHttp(handler, {
        ...event,
        requestContext: { ...event.requestContext, requestId: randomUUID() },
      });
      return { status: answer.statusCode, calls };
    } finally {
      t.client.middlewareStack.remove(name);
    }
  };
  return { t, store, cancel };
}

const total = (calls: readonly Consumed[]) => calls.reduce((sum, c) => sum + c.units, 0);

describe('what a cancel costs on a table with the current indexes', () => {
  let table: Awaited<ReturnType<typeof tableOf>>;
  beforeAll(async () => {
    table = await tableOf('cancel-capacity', ORDER_INDEX_NAMES);
  });
  afterAll(() => table.t.drop());

  it('a pending order: 7 units (limiter 1, read 1, mark 1, order 1 + ordersByStatus 2, release 1)', async () => {
    const { status, calls } = await table.cancel(LARGEST_ORDER.id);
    expect(status).toBe(204);
    expect(calls.map((c) => [c.command, c.units])).toEqual([
      ['UpdateItemCommand', 1],
      ['GetItemCommand', 1],
      ['UpdateItemCommand', 1],
      ['UpdateItemCommand', 3],
      ['UpdateItemCommand', 1],
    ]);
    // The order's write: 1 for the item (under 1 KB with its trail), 2 where its key moves; no
    // other index holds what it changes (the trail, `s`).
    expect(calls[3]!.indexes).toEqual({ ordersByStatus: 2 });
    expect(total(calls)).toBe(7);
    expect((await table.store.findStored(LARGEST_ORDER.id))?.trail.keyId).toBe(LONGEST_KEY_ID);
  });

  it.each([
    ['already cancelled', 3n, 204],
    ['shipped', 2n, 409],
    ['unknown', 42n, 404],
  ] as const)(
    'one that changes nothing (%s): 2 units, the count and the read',
    async (_, id, answered) => {
      const { status, calls } = await table.cancel(id);
      expect(status).toBe(answered);
      expect(calls.map((c) => [c.command, c.units])).toEqual([
        ['UpdateItemCommand', 1],
        ['GetItemCommand', 1],
      ]);
    },
  );
});

describe('what a cancel costs on a table of 1.0.0 while its indexes are added', () => {
  it.each([
    // The upgrade's first deploys (docs/upgrade-from-1.0.0.md): no index yet.
    [[], 5, {}],
    // After its first index: the status index alone takes the move of `s`.
    [['ordersByStatus'], 7, { ordersByStatus: 2 }],
    // Its date index holds nothing a cancel changes.
    [['ordersByStatus', 'ordersByDate'], 7, { ordersByStatus: 2 }],
  ] as const)('%j: %i units', async (indexes, units, written) => {
    const table = await tableOf('cancel-capacity-upgrade', indexes);
    try {
      const { status, calls } = await table.cancel(LARGEST_ORDER.id);
      expect(status).toBe(204);
      expect(calls.map((c) => c.command)).toEqual([
        'UpdateItemCommand',
        'GetItemCommand',
        'UpdateItemCommand',
        'UpdateItemCommand',
        'UpdateItemCommand',
      ]);
      expect(calls[3]!.indexes).toEqual(written);
      expect(total(calls)).toBe(units);
      // The same write on every stage: the trail, and `status` left as it was.
      const stored = await table.store.findStored(LARGEST_ORDER.id);
      expect(stored?.item.status).toBe(LARGEST_ORDER.status);
      expect(stored?.trail.keyId).toBe(LONGEST_KEY_ID);
      // A cancel that changes nothing costs what it does with every index.
      expect(total((await table.cancel(2n)).calls)).toBe(2);
    } finally {
      await table.t.drop();
    }
  });
});

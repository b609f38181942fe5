/**
 * What the store's writes leave in an order's item, on DynamoDB Local (lib/dynamodb/orders-table.ts
 * and order-item.ts): a cancel records its trail and the cancelled status key and leaves `status`
 * alone, on every stage; a ship sets its status; a put writes `s` and `t`; every reader takes an
 * order with a trail for cancelled, and v1's JSON stays as it was; an order as release 1.0.0
 * wrote it (no derived attributes; a cancel in `status`) is read and changed as it was.
 */
import { GetCommand, NumberValue, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { orderShard } from '../../lib/dynamodb/tables.ts';
import { ordersJsonArray } from '../../lib/orders/order-json.ts';
import type { Order } from '../../lib/orders/order.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('order-writes');
});
afterAll(() => t.drop());

const SHIP_DATE = '2026-12-01T09:00:00Z';
const INSTANT = BigInt(Date.UTC(2026, 11, 1, 9)) * 1_000_000n;

const storeWith = () => new DynamoDbOrderStore(t.client, t.tables.orders);

async function item(id: bigint): Promise<Record<string, unknown>> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.orders, Key: { shard: orderShard(id), id } }),
  );
  return Item!;
}

/** An item's attributes as plain values (numbers as their digits), for toEqual. */
async function stored(id: bigint): Promise<Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(await item(id)).map(([name, value]) => [
      name,
      value instanceof NumberValue ? value.toString() : value,
    ]),
  );
}

/** v1's whole list as its body, of a few orders. */
async function v1Body(store: DynamoDbOrderStore): Promise<string> {
  let body = '';
  for await (const chunk of ordersJsonArray(await store.openOrderStream())) body += chunk;
  return body;
}

const order = (id: bigint, fields: Partial<Order> = {}): Order => ({
  id,
  petId: 7n,
  shipDate: SHIP_DATE,
  status: 'pending',
  ...fields,
});

describe('a cancel through the API', () => {
  it("records its trail and the cancelled status's key, and leaves the status as it was", async () => {
    const store = storeWith();
    await store.putOrders([order(11n), { id: 12n }]);
    expect(await store.cancel(11n, TEST_CANCELLATION)).toBe('cancelled');
    expect(await store.cancel(12n, TEST_CANCELLATION)).toBe('cancelled');

    expect(await stored(11n)).toEqual({
      shard: '3',
      id: '11',
      petId: '7',
      shipDate: SHIP_DATE,
      status: 'pending',
      s: 'c3',
      t: String(INSTANT),
      // Its stored status is still pending: it stays in the index of orders not shipped.
      u: '3',
      cancelledAt: String(TEST_CANCELLATION.at),
      cancelledBy: TEST_CANCELLATION.keyId,
      cancelRequestId: TEST_CANCELLATION.requestId,
    });
    // No status stored: none written.
    expect(await stored(12n)).toEqual({
      shard: '4',
      id: '12',
      s: 'c4',
      cancelledAt: String(TEST_CANCELLATION.at),
      cancelledBy: TEST_CANCELLATION.keyId,
      cancelRequestId: TEST_CANCELLATION.requestId,
    });
  });

  it('makes the order cancelled for every reader; v1 shows no trail', async () => {
    const store = storeWith();
    await store.putOrders([order(21n), order(22n)]);
    await store.cancel(21n, TEST_CANCELLATION);

    expect(await store.findOrders([21n, 22n])).toEqual(
      expect.arrayContaining([order(21n, { status: 'cancelled' }), order(22n)]),
    );
    const shown = await store.findStored(21n);
    expect(shown).toMatchObject({
      order: order(21n, { status: 'cancelled' }),
      trail: TEST_CANCELLATION,
      item: { status: 'pending' },
    });
    const body = await v1Body(store);
    expect(body).toContain(
      `{"id":21,"petId":7,"shipDate":"${SHIP_DATE}","status":"cancelled"},{"id":22,`,
    );
    expect(body).not.toMatch(/cancelledAt|cancelledBy|cancelRequestId|key_test/);
    // Cancelled: a cancel again changes nothing, a ship is refused.
    expect(await store.cancel(21n, { ...TEST_CANCELLATION, keyId: 'key_again' })).toBe(
      'already-cancelled',
    );
    expect(await store.ship(21n)).toBe('cancelled');
    expect((await item(21n)).cancelledBy).toBe(TEST_CANCELLATION.keyId);
  });

  it('takes any item with a trail for cancelled, whatever its status, and refuses to write over it', async () => {
    const store = storeWith();
    // As this code's cancel leaves an order: a trail, the status as it was (here none, and pending).
    for (const status of [undefined, 'pending']) {
      const id = status ? 31n : 32n;
      await t.client.send(
        new PutCommand({
          TableName: t.tables.orders,
          Item: {
            shard: orderShard(id),
            id,
            ...(status ? { status } : {}),
            cancelledAt: TEST_CANCELLATION.at,
          },
        }),
      );
      const before = await item(id);
      expect(await store.cancel(id, TEST_CANCELLATION)).toBe('already-cancelled');
      expect(await store.ship(id)).toBe('cancelled');
      expect(await item(id)).toEqual(before);
      expect((await store.findOrders([id]))[0]?.status).toBe('cancelled');
    }
  });

  it('reads and cancels orders as release 1.0.0 wrote them (no s, t or u; its cancel in status)', async () => {
    const store = storeWith();
    const v100 = (id: bigint, status: string) =>
      t.client.send(
        new PutCommand({
          TableName: t.tables.orders,
          Item: { shard: orderShard(id), id, petId: 7n, shipDate: SHIP_DATE, status },
        }),
      );
    await v100(41n, 'cancelled');
    await v100(42n, 'pending');
    expect((await store.findOrders([41n]))[0]?.status).toBe('cancelled');
    expect(await store.cancel(41n, TEST_CANCELLATION)).toBe('already-cancelled');
    expect(await store.cancel(42n, TEST_CANCELLATION)).toBe('cancelled');
    // The trail and the new status key; `t` and `u` wait for `orders reindex`.
    expect(await stored(42n)).toMatchObject({
      status: 'pending',
      s: 'c2',
      cancelledBy: TEST_CANCELLATION.keyId,
    });
    expect(await item(42n)).not.toHaveProperty('t');
  });
});

describe('a ship', () => {
  it("sets shipped, complete and the shipped status's key, and takes the order out of the unshipped index", async () => {
    const store = storeWith();
    await store.putOrders([order(51n, { complete: false }), { id: 52n }]);
    expect(await item(51n)).toHaveProperty('u');
    expect(await store.ship(51n)).toBe('shipped');
    expect(await stored(51n)).toMatchObject({ status: 'shipped', complete: true, s: 's3' });
    expect(await item(51n)).not.toHaveProperty('u');
    expect(await store.ship(52n)).toBe('shipped');
    expect(await stored(52n)).toEqual({
      shard: '4',
      id: '52',
      status: 'shipped',
      complete: true,
      s: 's4',
    });
  });
});

describe('a put (seeds, imports)', () => {
  it('writes s and t with every order', async () => {
    await storeWith().putOrders([order(61n, { status: 'shipped' }), { id: 62n }]);
    expect(await stored(61n)).toEqual({
      shard: '5',
      id: '61',
      petId: '7',
      shipDate: SHIP_DATE,
      status: 'shipped',
      s: 's5',
      t: String(INSTANT),
    });
    expect(await stored(62n)).toEqual({ shard: '6', id: '62', s: 'p6' });
  });

  it('replaces the whole item: an order put pending again after a cancel is pending, its trail gone', async () => {
    const store = storeWith();
    await store.putOrders([order(71n)]);
    await store.cancel(71n, TEST_CANCELLATION);
    await store.putOrders([order(71n)]);
    expect(await item(71n)).not.toHaveProperty('cancelledAt');
    expect(await item(71n)).toMatchObject({ s: 'p7' });
    expect((await store.findOrders([71n]))[0]?.status).toBe('pending');
  });
});

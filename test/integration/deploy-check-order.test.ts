/**
 * The deploy check's order (lib/deploy-check.ts) in its partition of the orders table
 * (lib/dynamodb/tables.ts, DEPLOY_CHECK_PARTITIONS), on DynamoDB Local: the store's own writes
 * and cancel work there as anywhere, and nothing a client reads ever shows it or changes with
 * it — not v1's list, not its version (ETag), not v2's pages, filtered by status or not.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import {
  DEPLOY_CHECK_PARTITIONS,
  DEPLOY_CHECK_SHARD,
  ORDER_INDEX_NAMES,
} from '../../lib/dynamodb/tables.ts';
import { DEPLOY_CHECK_ORDER, DEPLOY_CHECK_ORDER_ID } from '../../lib/deploy-check.ts';
import { ORDER_STATUSES, type Order } from '../../lib/orders/order.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
let orders: DynamoDbOrderStore;
let check: DynamoDbOrderStore;
let pages: DynamoDbOrderPages;

/** Orders of the service, one of them with the deploy check's order's id. */
const STORED: Order[] = [
  { id: 3n, status: 'cancelled' },
  { id: DEPLOY_CHECK_ORDER_ID, petId: 7n, status: 'pending' },
];

async function everythingClientsRead() {
  const listed: Order[] = [];
  for await (const batch of await orders.openOrderStream()) listed.push(...batch);
  const filtered = await Promise.all(
    [undefined, ...ORDER_STATUSES].map((status) =>
      pages.readPage({
        plan: pages.plan(status ? { statuses: [status] } : {}),
        pageSize: 100,
      }),
    ),
  );
  return {
    listed,
    version: (await orders.readListVersion()).tag,
    pages: filtered.map((page) => page.orders),
  };
}

beforeAll(async () => {
  t = await createTestTables('deploycheck');
  orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  check = new DynamoDbOrderStore(t.client, t.tables.orders, {
    partitions: DEPLOY_CHECK_PARTITIONS,
  });
  pages = new DynamoDbOrderPages(t.client, t.tables.orders, {
    indexes: new Set(ORDER_INDEX_NAMES),
  });
  await orders.putOrders(STORED);
});
afterAll(() => t.drop());

describe("the deploy check's order", () => {
  it('is written, cancelled, cancelled again and written back by the store, in its own partition', async () => {
    await check.putOrders([DEPLOY_CHECK_ORDER]);
    expect(await check.findOrders([DEPLOY_CHECK_ORDER_ID])).toEqual([DEPLOY_CHECK_ORDER]);
    expect(await check.cancel(DEPLOY_CHECK_ORDER_ID, TEST_CANCELLATION)).toBe('cancelled');
    expect(await check.cancel(DEPLOY_CHECK_ORDER_ID, TEST_CANCELLATION)).toBe('already-cancelled');
    expect(await check.cancel(45n, TEST_CANCELLATION)).toBe('not-found');
    await check.putOrders([DEPLOY_CHECK_ORDER]);
    expect(await check.cancel(DEPLOY_CHECK_ORDER_ID, TEST_CANCELLATION)).toBe('cancelled');
    // The service's order with the same id is another item, untouched.
    expect(await orders.findOrders([DEPLOY_CHECK_ORDER_ID])).toEqual([STORED[1]]);
  });

  it('is never shown to a client, and a check changes nothing a client reads (the list, its ETag, v2 pages)', async () => {
    const before = await everythingClientsRead();
    expect(before.listed).toEqual(STORED);
    await check.putOrders([DEPLOY_CHECK_ORDER]);
    expect(await check.cancel(DEPLOY_CHECK_ORDER_ID, TEST_CANCELLATION)).toBe('cancelled');
    const after = await everythingClientsRead();
    expect(after).toEqual(before);
    // It is there all the same: the table holds it, with its index key in a partition of its own.
    const { Item } = await t.client.send(
      new GetCommand({
        TableName: t.tables.orders,
        Key: { shard: DEPLOY_CHECK_SHARD, id: DEPLOY_CHECK_ORDER_ID },
      }),
    );
    // A cancel leaves `status` as it was and records its trail; its `s`, a partition of its own.
    expect(Item).toMatchObject({
      status: 'pending',
      s: 'c-200',
      cancelledBy: TEST_CANCELLATION.keyId,
    });
  });

  it("cannot be reached by a client's cancel: the service's store addresses its own partitions", async () => {
    await check.putOrders([DEPLOY_CHECK_ORDER]);
    await orders.cancel(DEPLOY_CHECK_ORDER_ID, TEST_CANCELLATION);
    expect(await check.findOrders([DEPLOY_CHECK_ORDER_ID])).toEqual([DEPLOY_CHECK_ORDER]);
  });
});

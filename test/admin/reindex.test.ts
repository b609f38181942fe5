/**
 * `orders reindex` on DynamoDB Local: the orders stored before the v2 list's indexes (no derived
 * attributes, or stale ones) get the attributes their values give; a cancel or a ship racing a
 * write never leaves a stale key; the readiness marker and the version items' change times are
 * written, no order field and no ETag changes; a second run writes nothing.
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readIndexReadiness } from '../../lib/dynamodb/index-readiness.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { derivedIndexAttributes } from '../../lib/dynamodb/order-index-keys.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { reindexOrders } from '../../lib/dynamodb/reindex.ts';
import {
  INDEX_READINESS_KEY,
  LIST_VERSION_SLOTS,
  listVersionKey,
  ORDER_INDEX_NAMES,
  orderShard,
} from '../../lib/dynamodb/tables.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { expectOneLineError, runCli, scanAll, tableFlags } from './support.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('admin-reindex');
});
afterAll(() => t.drop());

/** Orders as the code before the indexes stored them: their fields, no derived attributes. */
const OLD_ORDERS: Record<string, unknown>[] = [
  { id: 1n, petId: 7n, shipDate: '2026-11-02T00:00:00+01:00', status: 'pending' },
  { id: 2n, petId: 7n, shipDate: '2026-11-03T00:00:00.5Z', status: 'shipped', complete: true },
  { id: -3n, status: 'cancelled' },
  // No status: pending.
  { id: 9223372036854775807n, shipDate: '2026-11-04T00:00:00Z' },
  // A ship date that is no RFC 3339 instant: no dateKey.
  { id: 5n, shipDate: '2026-02-30T00:00:00Z', status: 'pending' },
  // A status the service does not know: no statusKey.
  { id: 6n, status: 'lost' },
];

const key = (id: bigint) => ({ shard: orderShard(id), id });

async function item(id: bigint): Promise<Record<string, unknown> | undefined> {
  return (await t.client.send(new GetCommand({ TableName: t.tables.orders, Key: key(id) }))).Item;
}

/** The table as the deploy before the indexes left it: old orders, no marker, nonces without times. */
async function storeAsBefore(): Promise<void> {
  for (const old of await scanAll(t.client, t.tables.orders)) {
    await t.client.send(
      new DeleteCommand({ TableName: t.tables.orders, Key: { shard: old.shard, id: old.id } }),
    );
  }
  for (const order of OLD_ORDERS) {
    await t.client.send(
      new PutCommand({
        TableName: t.tables.orders,
        Item: { shard: orderShard(order.id as bigint), ...order },
      }),
    );
  }
  // Stale keys, as a write by code that did not move them would leave: a cancel that kept the
  // pending key, and a dateKey on an order whose ship date is gone.
  await t.client.send(
    new UpdateCommand({
      TableName: t.tables.orders,
      Key: key(-3n),
      UpdateExpression: 'SET statusKey = :k',
      ExpressionAttributeValues: { ':k': derivedIndexAttributes({ id: -3n }).statusKey },
    }),
  );
  await t.client.send(
    new UpdateCommand({
      TableName: t.tables.orders,
      Key: key(6n),
      UpdateExpression: 'SET dateKey = :k',
      ExpressionAttributeValues: {
        ':k': derivedIndexAttributes({ id: 6n, shipDate: '2026-11-02T00:00:00Z' }).dateKey,
      },
    }),
  );
  await t.client.send(new DeleteCommand({ TableName: t.tables.orders, Key: INDEX_READINESS_KEY }));
  for (let index = 0; index < LIST_VERSION_SLOTS; index++) {
    await t.client.send(
      new PutCommand({
        TableName: t.tables.orders,
        Item: { ...listVersionKey(index), ...(index % 2 === 0 ? { n: `old${index}` } : {}) },
      }),
    );
  }
}
beforeEach(storeAsBefore);

const reindex = (...args: string[]) => runCli(['orders', 'reindex', ...args, ...tableFlags(t)]);

/** What each order's attributes must be: those its stored values give. */
async function expectDerivedAttributes(): Promise<void> {
  for (const order of OLD_ORDERS) {
    const stored = (await item(order.id as bigint))!;
    const wanted = derivedIndexAttributes({
      id: order.id as bigint,
      status: stored.status,
      shipDate: stored.shipDate,
    });
    expect({ statusKey: stored.statusKey, dateKey: stored.dateKey }, String(order.id)).toEqual({
      statusKey: wanted.statusKey,
      dateKey: wanted.dateKey,
    });
  }
}

describe('orders reindex', () => {
  it('writes the attributes every order lacks or holds stale, the change times and the marker; no field and no ETag changes', async () => {
    const version = new DynamoDbListVersion(t.client, t.tables.orders);
    const tagBefore = (await version.read()).tag;
    const fieldsBefore = (await scanAll(t.client, t.tables.orders)).map(
      ({ statusKey: _s, dateKey: _d, ...fields }) => fields,
    );
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(false);

    const result = await reindex();
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      new RegExp(
        `^Reindexed ${t.tables.orders} on http\\S+ in [\\d.]+ s: 6 orders read, 6 written \\(0 again after a concurrent change\\), 16 version items given a change time; the indexes are marked ready\\.\n$`,
      ),
    );
    await expectDerivedAttributes();
    expect((await item(5n))?.dateKey).toBeUndefined();
    expect((await item(6n))?.statusKey).toBeUndefined();
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
    const after = await version.read();
    expect(after.tag).toBe(tagBefore);
    expect(after.lastChangeAt).toBeGreaterThan(Date.now() - 60_000);
    expect(
      (await scanAll(t.client, t.tables.orders)).map(
        ({ statusKey: _s, dateKey: _d, ...fields }) => fields,
      ),
    ).toEqual(fieldsBefore);

    // The indexes keyed by the attributes now serve every order.
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, {
      indexes: new Set(ORDER_INDEX_NAMES),
    });
    const pending = await pages.readPage({
      plan: pages.plan({ statuses: ['pending'] }),
      pageSize: 10,
    });
    expect(pending.orders.map((o) => o.id)).toEqual([1n, 5n, 9223372036854775807n]);
    const dated = await pages.readPage({
      plan: pages.plan({ shipDate: { from: 0n } }),
      pageSize: 10,
    });
    expect(dated.orders.map((o) => o.id)).toEqual([1n, 2n, 9223372036854775807n]);
  });

  it('is idempotent: a second run writes nothing but the marker', async () => {
    expect((await reindex()).code).toBe(0);
    const before = await scanAll(t.client, t.tables.orders);
    const again = await reindex();
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /: 6 orders read, 0 written \(0 again after a concurrent change\), 0 version items/,
    );
    expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
  });

  it('never leaves a stale key when a cancel, a ship or an import races its write', async () => {
    const store = new DynamoDbOrderStore(t.client, t.tables.orders);
    const raced = new Set<bigint>();
    const result = await reindexOrders(t.client, t.tables.orders, {
      // Between the scan and the write of each of these orders, the service changes it.
      beforeWrite: async (id) => {
        if (raced.has(id)) return;
        raced.add(id);
        if (id === 1n) await store.cancel(1n, TEST_CANCELLATION);
        if (id === 9223372036854775807n) await store.ship(id);
        if (id === 5n)
          await store.putOrders([{ id: 5n, shipDate: '2026-12-01T00:00:00Z', status: 'pending' }]);
      },
    });
    expect(result.raced).toBe(3);
    expect((await item(1n))?.statusKey).toBe('cancelled#1');
    expect((await item(9223372036854775807n))?.statusKey).toBe('shipped#7');
    expect((await item(5n))?.dateKey).toBe(
      derivedIndexAttributes({ id: 5n, shipDate: '2026-12-01T00:00:00Z' }).dateKey,
    );
    await expectDerivedAttributes();
  });

  it('needs a target, and says in one line what failed', async () => {
    const none = await runCli(['orders', 'reindex']);
    expectOneLineError(none, 2, /no target/);
    const missing = await runCli([
      'orders',
      'reindex',
      '--endpoint',
      t.endpoint,
      '--table-orders',
      'no-such-table',
    ]);
    expectOneLineError(missing, 1, /table no-such-table on http\S+: ResourceNotFoundException/);
  });
});

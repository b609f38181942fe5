/**
 * `orders reindex` on DynamoDB Local, on the two shapes of table a stage upgrading from release
 * 1.0.0 has when it runs (docs/upgrade-from-1.0.0.md): without any index yet, and with every
 * index (a reindex after changes by hand). The orders stored by 1.0.0 (their fields, no `s`, `t`
 * or `u`; its cancels in `status`), by this code's cancels (a trail, the status left pending) and
 * with stale attributes get the attributes their values give; a cancel, ship, import or delete
 * racing a write never leaves a stale key; the readiness marker (format 1) is written, no order
 * field and no ETag changes; a second run writes nothing. (That an index added after it holds every
 * order, the upgrade's rehearsal shows: test/e2e/upgrade-from-1.0.0.test.ts.)
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readIndexReadiness } from '../../lib/dynamodb/index-readiness.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { reindexOrders } from '../../lib/dynamodb/reindex.ts';
import {
  INDEX_READINESS_KEY,
  ORDER_INDEX_NAMES,
  ORDER_SHARDS,
  orderShard,
  type OrderIndexName,
} from '../../lib/dynamodb/tables.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import { createTestTables, dynamodbEndpoint, type TestTables } from '../support/tables.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';
import { expectOneLineError, runCli, scanAll, tableFlags } from './support.ts';

const MAX = 9223372036854775807n;
const instant = (shipDate: string) => parseInstant(shipDate)!;
const statusAndShard = (initial: string, id: bigint) => `${initial}${orderShard(id)}`;
const TRAIL = {
  cancelledAt: TEST_CANCELLATION.at,
  cancelledBy: TEST_CANCELLATION.keyId,
  cancelRequestId: TEST_CANCELLATION.requestId,
};

/** The orders as earlier code, or hands, left them. */
const OLD_ORDERS: Record<string, unknown>[] = [
  // As release 1.0.0 stored them: their fields, no s, t or u.
  { id: 1n, petId: 7n, shipDate: '2026-11-02T00:00:00+01:00', status: 'pending' },
  {
    id: 2n,
    petId: 7n,
    shipDate: '2026-11-03T00:00:00.5Z',
    status: 'shipped',
    complete: true,
  },
  // Cancelled by 1.0.0's code: its status, no trail.
  { id: -3n, status: 'cancelled' },
  // No status: pending.
  { id: MAX, shipDate: '2026-11-04T00:00:00Z' },
  // A ship date that is no RFC 3339 instant: no t.
  { id: 5n, shipDate: '2026-02-30T00:00:00Z', status: 'pending' },
  // A status the service does not know: no s; a t whose ship date is gone (changed by hand).
  { id: 6n, status: 'lost', t: instant('2026-11-02T00:00:00Z') },
  // Cancelled through the API by this code: its trail, the status as it was, and an `s` written
  // before the cancel (the pending one: a hand change put it back).
  { id: 15n, status: 'pending', s: 'p7', ...TRAIL },
  // The same with no status stored and nothing derived.
  { id: 16n, ...TRAIL },
  // Written by this code: s and t right.
  {
    id: 10n,
    shipDate: '2026-11-05T00:00:00Z',
    status: 'shipped',
    s: 's2',
    t: instant('2026-11-05T00:00:00Z'),
  },
];

/** What each order's attributes must be once reindexed, from the values it holds now. */
function expectedAttributes(item: Record<string, unknown>): Record<'s' | 't' | 'u', unknown> {
  const id = BigInt(String(item.id));
  const cancelled = item.cancelledAt !== undefined;
  const status = cancelled ? 'cancelled' : item.status === undefined ? 'pending' : item.status;
  const known = ['pending', 'shipped', 'cancelled'].includes(status as string);
  const at = typeof item.shipDate === 'string' ? parseInstant(item.shipDate) : undefined;
  // The stored status (the trail aside), as the index of orders not shipped is keyed.
  const stored = item.status ?? 'pending';
  const unshipped = ['pending', 'cancelled'].includes(stored as string) && at !== undefined;
  return {
    s: known ? statusAndShard((status as string)[0]!, id) : undefined,
    t: at?.toString(),
    u: unshipped ? String(orderShard(id)) : undefined,
  };
}

/** The two shapes of table: 1.0.0's, before any index is added; every index. */
const SHAPES = [
  { shape: 'no index yet (upgrading from 1.0.0)', indexes: [] },
  { shape: 'every index', indexes: ORDER_INDEX_NAMES },
] as const satisfies readonly { shape: string; indexes: readonly OrderIndexName[] }[];

/** Orders the reindex writes: all but 10, which holds what its values give already. */
const WRITTEN = 8;

describe.each(SHAPES)('orders reindex on a table with $shape', ({ indexes }) => {
  let t: TestTables;
  beforeAll(async () => {
    t = await createTestTables('admin-reindex', { ordersIndexes: indexes });
  });
  afterAll(() => t.drop());

  const key = (id: bigint) => ({ shard: orderShard(id), id });

  async function item(id: bigint): Promise<Record<string, unknown> | undefined> {
    return (await t.client.send(new GetCommand({ TableName: t.tables.orders, Key: key(id) }))).Item;
  }

  /** The table as earlier code left it: old orders, no marker. */
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
    await t.client.send(
      new DeleteCommand({ TableName: t.tables.orders, Key: INDEX_READINESS_KEY }),
    );
  }
  beforeEach(storeAsBefore);

  const reindex = () => runCli(['orders', 'reindex', ...tableFlags(t)]);

  /** Every order's derived attributes are what its stored values give, on this table. */
  async function expectDerivedAttributes(): Promise<void> {
    for (const stored of await scanAll(t.client, t.tables.orders)) {
      if (Number(String(stored.shard)) < 0) continue;
      const { s, t: at, u } = stored;
      expect({ s, t: at?.toString(), u: u?.toString() }, String(stored.id)).toEqual(
        expectedAttributes(stored),
      );
    }
  }

  /** The ids an index holds under one partition key value, each of the shards' for `s`. */
  async function idsIn(
    index: OrderIndexName,
    partitionKey: string,
    values: readonly (string | number)[],
  ): Promise<string[]> {
    const ids: string[] = [];
    for (const value of values) {
      const { Items } = await t.client.send(
        new QueryCommand({
          TableName: t.tables.orders,
          IndexName: index,
          KeyConditionExpression: '#k = :v',
          ExpressionAttributeNames: { '#k': partitionKey },
          ExpressionAttributeValues: { ':v': value },
        }),
      );
      ids.push(...(Items ?? []).map((i) => String(i.id)));
    }
    return ids.sort();
  }
  const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);

  it('takes a marker of another format as not ready, until it has run', async () => {
    await t.client.send(
      new PutCommand({
        TableName: t.tables.orders,
        Item: { ...INDEX_READINESS_KEY, format: 0, source: 'reindex' },
      }),
    );
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(false);
    expect((await reindex()).code).toBe(0);
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
  });

  it('writes what every order lacks or holds stale, and the marker (format 1); no field changes, the ETag does (what the indexes show changed)', async () => {
    const version = new DynamoDbListVersion(t.client, t.tables.orders);
    const tagBefore = (await version.read()).tag;
    const fields = (items: Record<string, unknown>[]) =>
      items
        .filter((item) => Number(String(item.shard)) >= 0)
        .map(({ s: _s, t: _t, u: _u, ...rest }) => rest);
    const fieldsBefore = fields(await scanAll(t.client, t.tables.orders));
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(false);

    const result = await reindex();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      new RegExp(
        `^Reindexed ${t.tables.orders} on http\\S+ in [\\d.]+ s: 9 orders read, ${WRITTEN} written \\(0 again after a concurrent change\\); the indexes are marked ready\\.\n$`,
      ),
    );
    await expectDerivedAttributes();
    // The cancelled through the API: cancelled, whatever their status.
    expect(await item(15n)).toMatchObject({ status: 'pending', s: 'c7' });
    expect((await item(16n))?.s).toBe('c0');
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
    // A page tagged before the reindex is never confirmed after it.
    const tagAfter = (await version.read()).tag;
    expect(tagAfter).toBeDefined();
    expect(tagAfter).not.toBe(tagBefore);
    expect(fields(await scanAll(t.client, t.tables.orders))).toEqual(fieldsBefore);
    if (indexes.length === 0) return;

    // The indexes keyed by the attributes now hold every order they should.
    const byStatus = (initial: string) =>
      idsIn(
        'ordersByStatus',
        's',
        shards.map((shard) => `${initial}${shard}`),
      );
    expect(await byStatus('p')).toEqual(['1', '5', String(MAX)].sort());
    expect(await byStatus('c')).toEqual(['-3', '15', '16'].sort());
    expect(await byStatus('s')).toEqual(['10', '2']);
    expect(await idsIn('ordersByDate', 'shard', shards)).toEqual(['1', '10', '2', String(MAX)]);
    expect(await idsIn('ordersUnshippedByDate', 'u', shards)).toEqual(['1', String(MAX)]);
  });

  it('is idempotent: a second run writes nothing but the marker', async () => {
    expect((await reindex()).code).toBe(0);
    const before = await scanAll(t.client, t.tables.orders);
    const again = await reindex();
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /: 9 orders read, 0 written \(0 again after a concurrent change\); the indexes are marked ready/,
    );
    // Nothing written: not even the list's version (the ETag stays).
    expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
  });

  it('never leaves a stale key when a cancel, a ship, an import or a delete races its write', async () => {
    // The service's writes, as a function makes them.
    const store = new DynamoDbOrderStore(t.client, t.tables.orders);
    const raced = new Set<bigint>();
    const result = await reindexOrders(t.client, t.tables.orders, {
      // Between the scan and the write of each of these orders, the service changes it.
      beforeWrite: async (id) => {
        if (raced.has(id)) return;
        raced.add(id);
        if (id === 1n) await store.cancel(1n, TEST_CANCELLATION);
        if (id === MAX) await store.ship(id);
        if (id === 5n)
          await store.putOrders([{ id: 5n, shipDate: '2026-12-01T00:00:00Z', status: 'pending' }]);
        if (id === 6n) {
          await t.client.send(new DeleteCommand({ TableName: t.tables.orders, Key: key(6n) }));
        }
      },
    });
    expect(result.raced).toBe(4);
    expect(await item(1n)).toMatchObject({ s: 'c1', cancelledBy: TEST_CANCELLATION.keyId });
    expect((await item(MAX))?.s).toBe('s7');
    expect((await item(5n))?.t?.toString()).toBe(instant('2026-12-01T00:00:00Z').toString());
    expect(await item(6n)).toBeUndefined();
    await expectDerivedAttributes();
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
  });
});

describe('orders reindex, its target', () => {
  it('needs a target, and says in one line what failed', async () => {
    const none = await runCli(['orders', 'reindex']);
    expectOneLineError(none, 2, /no target/);
    const missing = await runCli([
      'orders',
      'reindex',
      '--endpoint',
      dynamodbEndpoint(),
      '--table-orders',
      'no-such-table',
    ]);
    expectOneLineError(missing, 1, /table no-such-table on http\S+: ResourceNotFoundException/);
  });
});

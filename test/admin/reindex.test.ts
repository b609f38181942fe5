/**
 * `orders reindex` on DynamoDB Local, on both shapes of table a stage has on its way from the
 * first release's indexes (docs/deploy.md): one that still has an index keyed by the first
 * release's statusKey and dateKey, and one with the current indexes only. The orders stored by
 * the first release (statusKey and dateKey, no s and t), by this release's cancels (a trail, the
 * status left pending) and with stale attributes get the attributes their values give, the first
 * release's kept or removed as the table needs; a cancel, ship, import or delete racing a write
 * never leaves a stale key; the version items' change times and the readiness marker (format 3)
 * are written, no order field and no ETag changes; a second run writes nothing.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readIndexReadiness } from '../../lib/dynamodb/index-readiness.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { dateKey } from '../../lib/dynamodb/order-index-keys.ts';
import { firstReleaseWrites } from '../../lib/dynamodb/order-indexes.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { reindexOrders } from '../../lib/dynamodb/reindex.ts';
import {
  INDEX_READINESS_KEY,
  LIST_VERSION_SLOTS,
  listVersionKey,
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

/** The orders as earlier code left them. */
const OLD_ORDERS: Record<string, unknown>[] = [
  // As the first release stored them: their fields, statusKey and dateKey, no s or t.
  {
    id: 1n,
    petId: 7n,
    shipDate: '2026-11-02T00:00:00+01:00',
    status: 'pending',
    statusKey: 'pending#1',
    dateKey: dateKey(instant('2026-11-02T00:00:00+01:00'), 1n),
  },
  {
    id: 2n,
    petId: 7n,
    shipDate: '2026-11-03T00:00:00.5Z',
    status: 'shipped',
    complete: true,
    statusKey: 'shipped#2',
    dateKey: dateKey(instant('2026-11-03T00:00:00.5Z'), 2n),
  },
  // Cancelled by the first release's code, its key left stale by a write that did not move it.
  { id: -3n, status: 'cancelled', statusKey: 'pending#5' },
  // No status: pending.
  {
    id: MAX,
    shipDate: '2026-11-04T00:00:00Z',
    statusKey: 'pending#7',
    dateKey: dateKey(instant('2026-11-04T00:00:00Z'), MAX),
  },
  // A ship date that is no RFC 3339 instant: no t, no dateKey.
  { id: 5n, shipDate: '2026-02-30T00:00:00Z', status: 'pending', statusKey: 'pending#5' },
  // A status the service does not know: no s, no statusKey; a dateKey whose ship date is gone.
  { id: 6n, status: 'lost', dateKey: dateKey(instant('2026-11-02T00:00:00Z'), 6n) },
  // Cancelled through the API by this release's code: its trail, the status as it was, and an
  // `s` written before the cancel (the pending one).
  { id: 15n, status: 'pending', s: 'p7', ...TRAIL },
  // The same with no status stored and nothing derived.
  { id: 16n, ...TRAIL },
  // Written by this release's code while the stage had byStatus: s and t right, and the keys.
  {
    id: 10n,
    shipDate: '2026-11-05T00:00:00Z',
    status: 'shipped',
    s: 's2',
    t: instant('2026-11-05T00:00:00Z'),
    statusKey: 'shipped#2',
    dateKey: dateKey(instant('2026-11-05T00:00:00Z'), 10n),
  },
];

/**
 * What each order's attributes must be once reindexed, from the values it holds now: `s` and `t`
 * always, the first release's keys only on a table with an index keyed by them.
 */
function expectedAttributes(
  item: Record<string, unknown>,
  keys: boolean,
): Record<'s' | 't' | 'u' | 'statusKey' | 'dateKey', unknown> {
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
    statusKey: keys && known ? `${status as string}#${orderShard(id)}` : undefined,
    dateKey: keys && at !== undefined ? dateKey(at, id) : undefined,
  };
}

/** The two shapes of table: with the first release's keyed indexes beside the current ones, or not. */
const SHAPES = [
  {
    shape: 'the current indexes only',
    indexes: ORDER_INDEX_NAMES,
    keys: false,
    written: 9,
  },
  {
    shape: "the current indexes and the first release's",
    indexes: [...ORDER_INDEX_NAMES, 'byPet', 'byStatus', 'byStatusDate', 'byPetDate'],
    keys: true,
    // Order 10 holds what this table needs already.
    written: 8,
  },
] as const satisfies readonly {
  shape: string;
  indexes: readonly OrderIndexName[];
  keys: boolean;
  written: number;
}[];

describe.each(SHAPES)('orders reindex on a table with $shape', ({ indexes, keys, written }) => {
  let t: TestTables;
  beforeAll(async () => {
    t = await createTestTables('admin-reindex', { ordersIndexes: indexes });
  });
  afterAll(() => t.drop());

  const key = (id: bigint) => ({ shard: orderShard(id), id });

  async function item(id: bigint): Promise<Record<string, unknown> | undefined> {
    return (await t.client.send(new GetCommand({ TableName: t.tables.orders, Key: key(id) }))).Item;
  }

  /** The table as earlier code left it: old orders, the old marker, nonces without times. */
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
    // The first release's marker: its attributes complete in format 1.
    await t.client.send(
      new PutCommand({
        TableName: t.tables.orders,
        Item: { ...INDEX_READINESS_KEY, format: 1, source: 'reindex' },
      }),
    );
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

  const reindex = () => runCli(['orders', 'reindex', ...tableFlags(t)]);

  /** Every order's derived attributes are what its stored values give, on this table. */
  async function expectDerivedAttributes(): Promise<void> {
    for (const stored of await scanAll(t.client, t.tables.orders)) {
      const { s, t: at, u, statusKey, dateKey: date } = stored;
      expect(
        { s, t: at?.toString(), u: u?.toString(), statusKey, dateKey: date },
        String(stored.id),
      ).toEqual(expectedAttributes(stored, keys));
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

  it('takes a marker of an earlier format (2: `s` and `t`, written before `u` existed) as not ready, until it has run', async () => {
    await t.client.send(
      new PutCommand({
        TableName: t.tables.orders,
        Item: { ...INDEX_READINESS_KEY, format: 2, source: 'reindex' },
      }),
    );
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(false);
    expect((await reindex()).code).toBe(0);
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
  });

  it('writes what every order lacks or holds stale, the change times and the marker (format 3); no field and no ETag changes', async () => {
    const version = new DynamoDbListVersion(t.client, t.tables.orders);
    const tagBefore = (await version.read()).tag;
    const fields = (items: Record<string, unknown>[]) =>
      items.map(({ s: _s, t: _t, u: _u, statusKey: _k, dateKey: _d, ...rest }) => rest);
    const fieldsBefore = fields(await scanAll(t.client, t.tables.orders));
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(false);

    const result = await reindex();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      new RegExp(
        `^Reindexed ${t.tables.orders} on http\\S+ in [\\d.]+ s: 9 orders read, ${written} written \\(0 again after a concurrent change\\), the first release's statusKey and dateKey ${keys ? 'kept \\(the table has an index keyed by them\\)' : 'removed \\(the table has no index keyed by them\\)'}, 16 version items given a change time; the indexes are marked ready\\.\n$`,
      ),
    );
    await expectDerivedAttributes();
    // The cancelled through the API: cancelled, whatever their status.
    expect(await item(15n)).toMatchObject({ status: 'pending', s: 'c7' });
    expect((await item(16n))?.s).toBe('c0');
    expect(await readIndexReadiness(t.client, t.tables.orders)).toBe(true);
    const after = await version.read();
    expect(after.tag).toBe(tagBefore);
    expect(after.lastChangeAt).toBeGreaterThan(Date.now() - 60_000);
    expect(fields(await scanAll(t.client, t.tables.orders))).toEqual(fieldsBefore);

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
    if (keys) {
      expect(
        await idsIn(
          'byStatus',
          'statusKey',
          shards.map((shard) => `cancelled#${shard}`),
        ),
      ).toEqual(['-3', '15', '16'].sort());
    }
  });

  it('is idempotent: a second run writes nothing but the marker', async () => {
    expect((await reindex()).code).toBe(0);
    const before = await scanAll(t.client, t.tables.orders);
    const again = await reindex();
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /: 9 orders read, 0 written \(0 again after a concurrent change\), .*, 0 version items/,
    );
    expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
  });

  it('never leaves a stale key when a cancel, a ship, an import or a delete races its write', async () => {
    // The service's writes as a function of this table's stage makes them.
    const store = new DynamoDbOrderStore(t.client, t.tables.orders, {
      firstRelease: firstReleaseWrites(new Set(indexes)),
    });
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

/**
 * The list's version items on DynamoDB Local (lib/dynamodb/list-version.ts): which items a stage's
 * writes mark and its readers read (lib/dynamodb/list-version-items.ts), the notes of recent
 * writes that tell the v2 pages which orders to read again by key, how they are dropped once
 * INDEX_SETTLE_MS old, the cap that keeps an item under 1 KB, and what a mark and a release cost.
 */
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  OPERATOR_LIST_VERSION_ITEMS,
  type ListVersionItems,
} from '../../lib/dynamodb/list-version-items.ts';
import { RECENT_WRITES_CAP } from '../../lib/dynamodb/list-version-item.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { listVersionKey, LIST_VERSION_SLOTS } from '../../lib/dynamodb/tables.ts';
import { INDEX_SETTLE_MS } from '../../lib/orders/page-tag.ts';
import { createTestTables, markVersionItem, type TestTables } from '../support/tables.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('list-version');
});
afterAll(() => t.drop());

let clock = 1_800_000_000_000;
const version = (items?: ListVersionItems) =>
  new DynamoDbListVersion(t.client, t.tables.orders, {
    now: () => clock,
    ...(items ? { items } : {}),
  });

/** The version items as stored, by index (absent ones left out). */
async function storedItems(): Promise<Map<number, Record<string, unknown>>> {
  const { Items = [] } = await t.client.send(
    new ScanCommand({
      TableName: t.tables.orders,
      FilterExpression: '#s < :zero AND #s >= :lowest',
      ExpressionAttributeNames: { '#s': 'shard' },
      ExpressionAttributeValues: { ':zero': 0, ':lowest': -LIST_VERSION_SLOTS },
    }),
  );
  return new Map(Items.map((item) => [-1 - Number(String(item.shard)), item]));
}

const write = (v: DynamoDbListVersion, orderId?: bigint, changed = true) =>
  v.around(
    () => Promise.resolve('done'),
    () => changed,
    orderId === undefined ? {} : { orderId },
  );

/** Clears the version items between tests. */
beforeEach(async () => {
  clock += 10 * INDEX_SETTLE_MS;
  await Promise.all(
    Array.from({ length: LIST_VERSION_SLOTS }, (_, index) =>
      t.client.send(
        new UpdateCommand({
          TableName: t.tables.orders,
          Key: listVersionKey(index),
          UpdateExpression: 'SET #n = :n, #c = :c',
          ExpressionAttributeNames: { '#n': 'n', '#c': 'c' },
          ExpressionAttributeValues: { ':n': 'fresh', ':c': clock - INDEX_SETTLE_MS },
        }),
      ),
    ),
  );
  const items = await storedItems();
  for (const [index, item] of items) {
    const stale = Object.keys(item).filter((name) => /^(r_|o$|w_)/.test(name));
    if (stale.length === 0) continue;
    await t.client.send(
      new UpdateCommand({
        TableName: t.tables.orders,
        Key: listVersionKey(index),
        UpdateExpression: `REMOVE ${stale.map((_, i) => `#x${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(stale.map((name, i) => [`#x${i}`, name])),
      }),
    );
  }
});

describe('the items a stage uses', () => {
  it('marks only the first `write` items, at random', async () => {
    const v = version({ write: 2, read: 4 });
    // 30 writes: both items marked but for a chance of 2 in 2^30.
    for (let i = 0; i < 30; i++) await write(v, BigInt(i));
    const items = await storedItems();
    const changed = [...items].filter(([, item]) => item.n !== 'fresh').map(([index]) => index);
    expect(changed.sort()).toEqual([0, 1]);
  });

  it("the operator's writes mark item 0, which every stage reads", async () => {
    const v = version(OPERATOR_LIST_VERSION_ITEMS);
    for (let i = 0; i < 5; i++) await write(v);
    const items = await storedItems();
    const changed = [...items].filter(([, item]) => item.n !== 'fresh').map(([index]) => index);
    expect(changed).toEqual([0]);
    expect((await version({ write: 1, read: 1 }).read()).recentWrites).toBe('all');
  });

  it('a reader of fewer items than a writer marks misses its write in flight (why a deploy lowers `read` last)', async () => {
    // What a writer of 32 items (the service before the count was a setting) leaves on item 5
    // while its write is in flight.
    await markVersionItem(t, 5, 'w_oldwriter', clock + 60_000);
    expect((await version({ write: 4, read: 4 }).read()).tag).toBeDefined();
    expect((await version({ write: 4, read: 32 }).read()).tag).toBeUndefined();
  });
});

describe('the notes of recent writes', () => {
  it('name the order a release changed, until INDEX_SETTLE_MS after it', async () => {
    const v = version({ write: 1, read: 1 });
    await write(v, 42n);
    expect((await v.read()).recentWrites).toEqual(new Set(['42']));
    clock += INDEX_SETTLE_MS - 1;
    expect((await v.read()).recentWrites).toEqual(new Set(['42']));
    clock += 1;
    expect((await v.read()).recentWrites).toEqual(new Set());
  });

  it('are not written by a write that changed nothing', async () => {
    const v = version({ write: 1, read: 1 });
    await write(v, 42n, false);
    expect((await v.read()).recentWrites).toEqual(new Set());
    const item = (await storedItems()).get(0)!;
    expect(Object.keys(item).filter((name) => /^(r_|o$|w_)/.test(name))).toEqual([]);
  });

  it('say `all` for INDEX_SETTLE_MS after a write of many orders', async () => {
    const v = version({ write: 1, read: 1 });
    await write(v);
    expect((await v.read()).recentWrites).toBe('all');
    clock += INDEX_SETTLE_MS;
    expect((await v.read()).recentWrites).toEqual(new Set());
  });

  it('older than INDEX_SETTLE_MS are dropped by the next write of the item', async () => {
    const v = version({ write: 1, read: 1 });
    await write(v, 1n);
    await write(v);
    clock += INDEX_SETTLE_MS;
    await write(v, 2n);
    const item = (await storedItems()).get(0)!;
    expect(Object.keys(item).filter((name) => /^(r_|o$)/.test(name))).toEqual(['r_2']);
  });

  it("of a writer whose clock may be off (the operator's CLI) are stamped that far ahead, and drop no note another's clock still holds", async () => {
    const skew = 5 * 60_000;
    const own = version({ write: 1, read: 1 });
    // A function's note, then 20 s later a write by a CLI whose clock is 30 s ahead.
    await write(own, 1n);
    clock += 20_000;
    const operator = new DynamoDbListVersion(t.client, t.tables.orders, {
      now: () => clock + 30_000,
      clockSkewMs: skew,
      items: { write: 1, read: 1 },
    });
    await write(operator, 2n);
    // The CLI's clock says the function's note is 50 s old, but it may be 5 minutes ahead: kept.
    const item = (await storedItems()).get(0)!;
    expect(
      Object.keys(item)
        .filter((name) => /^(r_|o$)/.test(name))
        .sort(),
    ).toEqual(['r_1', 'r_2']);
    // Its own note is read as recent for INDEX_SETTLE_MS past its clock and the skew.
    clock += 30_000 + skew + INDEX_SETTLE_MS - 1;
    expect((await own.read()).recentWrites).toEqual(new Set(['2']));
    clock += 1;
    expect((await own.read()).recentWrites).toEqual(new Set());
  });

  it(`stop at ${RECENT_WRITES_CAP} an item: the next write notes \`o\`, and the item stays under 1 KB`, async () => {
    const v = version({ write: 1, read: 1 });
    for (let i = 0; i < RECENT_WRITES_CAP; i++) await write(v, 9223372036854775807n - BigInt(i));
    expect((await v.read()).recentWrites).toEqual(
      new Set(
        Array.from({ length: RECENT_WRITES_CAP }, (_, i) =>
          String(9223372036854775807n - BigInt(i)),
        ),
      ),
    );
    await write(v, 5n);
    expect((await v.read()).recentWrites).toBe('all');
    // A mark on the full item, as a cancel makes it: 1 WCU, so under 1 KB.
    const { ConsumedCapacity } = await markVersionItem(
      t,
      0,
      'w_AAAAAAAAAAAA#-9223372036854775808',
      clock + 1,
    );
    expect(ConsumedCapacity?.CapacityUnits).toBe(1);
  });
});

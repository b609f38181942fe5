/**
 * The v2 list's pages on DynamoDB Local (lib/dynamodb/order-pages.ts): every walk of random
 * filters and page sizes over a random store gives the sorted, filtered reference; what a page
 * costs; an index that lags a write never shows an order that no longer matches; and an index
 * that is not there yet, still backfilling or not yet complete fails transient, not as a bug.
 */
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTables } from '../../lib/dynamodb/create-table.ts';
import { IndexReadiness, markIndexesReady } from '../../lib/dynamodb/index-readiness.ts';
import { derivedIndexAttributes, statusShard } from '../../lib/dynamodb/order-index-keys.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { PAGE_READ_BUDGET } from '../../lib/dynamodb/page-limits.ts';
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { orderToItem } from '../../lib/dynamodb/order-item.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import {
  INDEX_READINESS_KEY,
  ORDER_INDEX_NAMES,
  ORDER_SHARDS,
  orderShard,
} from '../../lib/dynamodb/tables.ts';
import { DependencyFailure } from '../../lib/failures.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import {
  comparePositions,
  orderMatches,
  positionOf,
  sortOrderOf,
  type OrderFilter,
  type PagePosition,
} from '../../lib/orders/order-filter.ts';
import { INT64_MAX, INT64_MIN, ORDER_STATUSES, type Order } from '../../lib/orders/order.ts';
import type { PageRequest } from '../../lib/orders/order-page-reader.ts';
import { INDEX_SETTLE_MS, pageEntityTag } from '../../lib/orders/page-tag.ts';
import { localTableNames } from '../../local/local-stack.ts';
import { loadOrders } from '../../bench/raw-orders.ts';
import { seeded } from '../../bench/statistics.ts';
import { countDynamoDbCalls, failDynamoDbCalls } from '../support/lambda.ts';
import { createTestTables, uniquePrefix, type TestTables } from '../support/tables.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';

let t: TestTables;
const ALL = new Set(ORDER_INDEX_NAMES);
const DAY = 86_400_000_000_000n;
const FIRST_DAY = parseInstant('2026-11-01T00:00:00Z')!;

/**
 * 300 orders as a store may hold them: ids of both signs and at both ends of int64; 12 pets,
 * skewed; most shipped; ship dates over 30 days written with offsets and fractions, some equal
 * (ties broken by id), some absent or not a date; some without a status (pending), a petId or
 * `complete`.
 */
function randomStore(count = 300): Order[] {
  const next = seeded(36);
  const pick = (n: number) => Math.floor(next() * n);
  const ids = new Set<bigint>([INT64_MAX, INT64_MIN, 0n, -1n]);
  while (ids.size < count) ids.add(BigInt(pick(4000) - 1000) * (next() < 0.05 ? 2n ** 50n : 1n));
  return [...ids].map((id) => {
    const r = next();
    const status = r < 0.15 ? 'pending' : r < 0.25 ? 'cancelled' : r < 0.3 ? undefined : 'shipped';
    const hour = pick(30 * 24);
    const minutes = [0, 60, -90, 330][pick(4)]!;
    const local = new Date(Date.UTC(2026, 10, 1) + hour * 3_600_000 + minutes * 60_000);
    const sign = minutes < 0 ? '-' : '+';
    const offset =
      minutes === 0
        ? 'Z'
        : `${sign}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0')}:${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
    const fraction = next() < 0.2 ? `.${String(pick(1e9)).padStart(9, '0')}` : '';
    const shipDate =
      next() < 0.05
        ? undefined
        : next() < 0.02
          ? '2026-02-30T00:00:00Z'
          : `${local.toISOString().slice(0, 19)}${fraction}${offset}`;
    return {
      id,
      ...(next() < 0.95 ? { petId: BigInt(Math.floor(next() ** 2 * 12)) } : {}),
      quantity: 1 + pick(3),
      ...(shipDate ? { shipDate } : {}),
      ...(next() < 0.9 ? { complete: status === 'shipped' } : {}),
      ...(status ? { status } : {}),
    };
  });
}

const STORE = randomStore();

/** What a walk must give: the orders matching, sorted as the filter sorts them. */
function reference(filter: OrderFilter): Order[] {
  const order = sortOrderOf(filter);
  return STORE.map((o) => ({ ...o, status: o.status ?? 'pending' }))
    .filter((o) => orderMatches(filter, o))
    .sort((a, b) => comparePositions(positionOf(a, order)!, positionOf(b, order)!));
}

/** What a page sees of a store that has not changed for the settle time: its index is trusted. */
async function settled(client: DynamoDBDocumentClient, table: string): Promise<Seen> {
  const version = await new DynamoDbOrderStore(client, table).readListVersion();
  return { version, at: (version.lastChangeAt ?? 0) + INDEX_SETTLE_MS };
}

type Seen = NonNullable<PageRequest['seen']>;

async function walk(
  pages: DynamoDbOrderPages,
  filter: OrderFilter,
  pageSize: number,
  seen?: Seen,
): Promise<{ orders: Order[]; pages: number; cost: { fetched: number; candidates: number } }> {
  const orders: Order[] = [];
  const cost = { fetched: 0, candidates: 0 };
  let start: PagePosition | undefined;
  for (let n = 1; ; n++) {
    const page = await pages.readPage({
      plan: pages.plan(filter),
      pageSize,
      ...(start ? { start } : {}),
      ...(seen ? { seen } : {}),
    });
    cost.fetched += page.cost.fetched;
    cost.candidates += page.orders.length;
    expect(page.orders.length).toBeLessThanOrEqual(pageSize);
    orders.push(...page.orders);
    if (!page.next) return { orders, pages: n, cost };
    if (start) expect(comparePositions(page.next, start)).toBe(1);
    start = page.next;
  }
}

const ids = (orders: readonly Order[]) => orders.map((o) => o.id.toString());

async function failure(work: () => Promise<unknown>): Promise<DependencyFailure> {
  const error = await work().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof DependencyFailure))
    throw new Error(`expected a DependencyFailure, got ${String(error)}`);
  return error;
}

beforeAll(async () => {
  t = await createTestTables('pages');
  await loadOrders(t.client, t.tables.orders, STORE);
});
afterAll(() => t.drop());

describe('walking every page of a filter', () => {
  const status = fc.subarray([...ORDER_STATUSES], { minLength: 1 });
  const day = fc.integer({ min: -2, max: 32 }).map((d) => FIRST_DAY + BigInt(d) * DAY);
  const range = fc
    .tuple(fc.option(day, { nil: undefined }), fc.option(day, { nil: undefined }))
    .filter(
      ([from, to]) =>
        (from !== undefined || to !== undefined) &&
        !(from !== undefined && to !== undefined && from >= to),
    )
    .map(([from, to]) => ({
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
    }));
  const filter: fc.Arbitrary<OrderFilter> = fc.record(
    {
      statuses: status,
      petId: fc.integer({ min: 0, max: 12 }).map(BigInt),
      shipDate: range,
      complete: fc.boolean(),
    },
    { requiredKeys: [] },
  );

  it('gives every matching order once, in order: the sorted, filtered store (random filters and page sizes)', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const seen = await settled(t.client, t.tables.orders);
    await fc.assert(
      fc.asyncProperty(filter, fc.integer({ min: 4, max: 60 }), async (f, pageSize) => {
        // The index trusted (a settled store), and trusted for nothing (every candidate read
        // again by key): the same walk.
        for (const trust of [seen, undefined]) {
          const { orders } = await walk(pages, f, pageSize, trust);
          expect(ids(orders)).toEqual(ids(reference(f)));
          // Every field as stored, int64 exact.
          expect(orders).toEqual(reference(f));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('with one order a page, and with a page larger than the filter, gives the same', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const f: OrderFilter = { statuses: ['cancelled'], shipDate: { from: FIRST_DAY + 3n * DAY } };
    const expected = ids(reference(f));
    expect(expected.length).toBeGreaterThan(5);
    expect(ids((await walk(pages, f, 1)).orders)).toEqual(expected);
    const whole = await walk(pages, f, 100);
    expect(ids(whole.orders)).toEqual(expected);
    expect(whole.pages).toBe(1);
  });
});

describe('what a page costs', () => {
  it('reads one partition per status and shard, per shard for a date range, or one per pet, and evaluates 2N + k a page on average', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const seen = await settled(t.client, t.tables.orders);
    const cases: [OrderFilter, string, number][] = [
      [{ statuses: ['shipped'] }, 'ordersByStatus', ORDER_SHARDS],
      [{ statuses: ['shipped', 'pending'] }, 'ordersByStatus', 2 * ORDER_SHARDS],
      [{ petId: 0n }, 'ordersByPet', 1],
      [{ petId: 0n, shipDate: { to: FIRST_DAY + 20n * DAY } }, 'ordersByPetDate', 1],
      [{ shipDate: { from: FIRST_DAY } }, 'ordersByDate', ORDER_SHARDS],
      [
        { statuses: ['pending'], shipDate: { from: FIRST_DAY } },
        'ordersUnshippedByDate',
        ORDER_SHARDS,
      ],
      [{}, 'table', ORDER_SHARDS],
    ];
    const N = 20;
    for (const [filter, source, k] of cases) {
      let start: PagePosition | undefined;
      const costs = [];
      do {
        const page = await pages.readPage({
          plan: pages.plan(filter),
          pageSize: N,
          seen,
          ...(start ? { start } : {}),
        });
        expect(page.plan).toMatchObject({ source, partitions: k, consistent: source === 'table' });
        costs.push(page.cost);
        start = page.next;
      } while (start);
      const rounds = costs.map((c) => c.rounds);
      const evaluated = costs.map((c) => c.evaluated);
      // One partition: one round of N + 1 keys, always. Several: a first round of at most
      // 2N + k keys, then, on the pages whose merge still waits for a partition (several
      // statuses of other sizes), a second (a third, rarely) for the few it needs.
      if (k === 1) expect(rounds.every((r) => r === 1)).toBe(true);
      if (k === 1) expect(Math.max(...evaluated)).toBeLessThanOrEqual(N + 1);
      expect(Math.max(...rounds), source).toBeLessThanOrEqual(3);
      const mean = evaluated.reduce((a, b) => a + b, 0) / costs.length;
      expect(mean, source).toBeLessThanOrEqual(2 * N + k);
    }
  });

  it('in a settled store reads by key only the orders an index holds as pending: none from the status index', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const seen = await settled(t.client, t.tables.orders);
    const stored = (o: Order) => STORE.find((s) => s.id === o.id)!;
    const heldPending = (orders: readonly Order[]) =>
      orders.filter((o) => (stored(o).status ?? 'pending') === 'pending').length;
    for (const filter of [
      { statuses: ['pending', 'cancelled'] },
      { statuses: ['shipped'], complete: true },
    ] as OrderFilter[]) {
      expect((await walk(pages, filter, 25, seen)).cost.fetched).toBe(0);
    }
    for (const filter of [
      { petId: 1n },
      { shipDate: { from: FIRST_DAY + 5n * DAY } },
      { petId: 2n, shipDate: { to: FIRST_DAY + 25n * DAY } },
    ] as OrderFilter[]) {
      const walked = await walk(pages, filter, 25, seen);
      expect(
        walked.cost.fetched,
        JSON.stringify(filter, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
      ).toBe(heldPending(walked.orders));
      expect(walked.cost.fetched).toBeGreaterThan(0);
      expect(walked.cost.fetched).toBeLessThan(walked.orders.length);
    }
    // Trusted for nothing: every candidate read again.
    const blind = await walk(pages, { statuses: ['shipped'] }, 25);
    expect(blind.cost.fetched).toBe(blind.orders.length);
  });

  it('with a filter its index does not hold reads on until the page is full: a pet’s pending orders', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const filter: OrderFilter = { petId: 0n, statuses: ['pending'] };
    const expected = reference(filter);
    expect(expected.length).toBeGreaterThan(4);
    const seen = await settled(t.client, t.tables.orders);
    const page = await pages.readPage({ plan: pages.plan(filter), pageSize: 2, seen });
    expect(ids(page.orders)).toEqual(ids(expected.slice(0, 2)));
    // The index filters on the status it holds; the orders it holds as pending are read by key
    // (they may have been cancelled since): two, the page's.
    expect(page.cost.fetched).toBe(2);
    expect(page.next).toEqual({ id: expected[1]!.id });
    const { orders, pages: walked } = await walk(pages, filter, 2, seen);
    expect(ids(orders)).toEqual(ids(expected));
    // Every page full but the last (which may be empty: only a missing token is the end).
    expect(walked).toBeGreaterThanOrEqual(Math.ceil(expected.length / 2));
    expect(walked).toBeLessThanOrEqual(Math.ceil(expected.length / 2) + 1);
  });

  it('of `complete` alone is read from the table and may evaluate far more than it holds, up to its budget', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const page = await pages.readPage({ plan: pages.plan({ complete: false }), pageSize: 30 });
    expect(page.plan.source).toBe('table');
    expect(page.orders.every((o) => o.complete === false)).toBe(true);
    expect(page.cost.evaluated).toBeGreaterThan(2 * 30 + ORDER_SHARDS);
    expect(page.cost.rounds).toBeLessThanOrEqual(PAGE_READ_BUDGET.rounds);
  });
});

describe("a page's read budget", () => {
  it('caps every round by what is left of it: the page is served short, its next page starting where every partition has read to', async () => {
    // A first round of 2N/k + 1 = 11 items from each of the 8 shards (88), then 12 left: the
    // store's incomplete orders (about a quarter) cannot fill a page of 40 within it.
    const budget = { rounds: 50, evaluated: 100, fetched: 2_500 };
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL, budget });
    const filter: OrderFilter = { complete: false };
    const expected = reference(filter);
    expect(expected.length).toBeGreaterThan(40);
    const page = await pages.readPage({ plan: pages.plan(filter), pageSize: 40 });
    expect(page.plan.source).toBe('table');
    expect(page.cost.evaluated).toBeLessThanOrEqual(budget.evaluated);
    // Stopped by what it evaluated, not by its rounds.
    expect(page.cost.rounds).toBeLessThan(budget.rounds);
    expect(page.orders.length).toBeLessThan(40);
    // Its next page starts at the bound: every matching order up to it is on this page.
    const next = page.next!;
    expect(next).toBeDefined();
    const upTo = expected.filter((o) => comparePositions(positionOf(o, 'id')!, next) <= 0);
    expect(ids(page.orders)).toEqual(ids(upTo));
    const { orders, pages: walked } = await walk(pages, filter, 40);
    expect(ids(orders)).toEqual(ids(expected));
    expect(walked).toBeGreaterThan(Math.ceil(expected.length / 40));
  });
});

describe('an index that lags a write', () => {
  it('never puts an order that no longer matches on a page while the version says it was written: the page reads it again and reads on past it', async () => {
    const own = await createTestTables('pages-lag');
    try {
      const orders: Order[] = Array.from({ length: 30 }, (_, i) => ({
        id: BigInt(i + 1),
        status: 'pending',
        shipDate: '2026-11-02T00:00:00Z',
      }));
      // Written 20 s ago: the store had settled before the write of order 8 below.
      const before = new DynamoDbOrderStore(own.client, own.tables.orders, {
        listVersion: { now: () => Date.now() - 2 * INDEX_SETTLE_MS },
      });
      await before.putOrders(orders);
      const store = new DynamoDbOrderStore(own.client, own.tables.orders);
      // Order 8 is cancelled, but the status index still holds it as pending, as a lagging index
      // would: its item holds the cancel's trail and the pending status's `s`. The write goes
      // through the list's version, as every write of the service does.
      const version = new DynamoDbListVersion(own.client, own.tables.orders);
      await version.around(
        () =>
          own.client.send(
            new PutCommand({
              TableName: own.tables.orders,
              Item: {
                ...orderToItem(orders[7]!),
                cancelledAt: 1_800_000_000_000,
                cancelledBy: 'key_lagging',
                cancelRequestId: 'r-1',
              },
            }),
          ),
        () => true,
        { orderId: 8n },
      );
      const pages = new DynamoDbOrderPages(own.client, own.tables.orders, { indexes: ALL });
      const now = { version: await store.readListVersion(), at: Date.now() };
      expect(now.version.recentWrites).toEqual(new Set(['8']));
      for (const filter of [
        { statuses: ['pending'] },
        { statuses: ['pending'], shipDate: { from: 0n } },
      ] as OrderFilter[]) {
        const first = await pages.readPage({ plan: pages.plan(filter), pageSize: 10, seen: now });
        expect(ids(first.orders)).toEqual(['1', '2', '3', '4', '5', '6', '7', '9', '10', '11']);
        expect(first.next?.id).toBe(11n);
        const { orders: rest } = await walk(pages, filter, 10, now);
        expect(rest).toHaveLength(29);
        expect(ids(rest)).not.toContain('8');
      }
      // From the status index only order 8 was read by key: the version named it. From the date
      // index every order it holds as pending is (a cancel may have left it so).
      const byStatus = await pages.readPage({
        plan: pages.plan({ statuses: ['pending'] }),
        pageSize: 10,
        seen: now,
      });
      expect(byStatus.cost.fetched).toBe(1);
      // A version that cannot name the orders written (a write of many) has every one read again.
      await version.around(
        () => Promise.resolve(),
        () => true,
      );
      const blind = { version: await store.readListVersion(), at: Date.now() };
      expect(blind.version.recentWrites).toBe('all');
      const again = await pages.readPage({
        plan: pages.plan({ statuses: ['pending'] }),
        pageSize: 10,
        seen: blind,
      });
      expect(ids(again.orders)).not.toContain('8');
      expect(again.cost.fetched).toBeGreaterThanOrEqual(10);
    } finally {
      await own.drop();
    }
  });
});

describe('an order whose status changes between the Queries of one round', () => {
  const DAY_ONE = '2026-11-02T00:00:00Z';
  // The status index holds an order in the partition of its status: one that is shipped between
  // the Query of its pending partition and that of its shipped one is given by both. (The date
  // index holds an order in its shard's partition whatever its status: a round reads it once.)
  it.each([
    ['shipped', { statuses: ['pending', 'shipped'] }, DAY_ONE],
    ['shipped and re-dated', { statuses: ['pending', 'shipped'] }, '2026-11-09T00:00:00Z'],
  ] as [string, OrderFilter, string][])(
    '%s: read once and listed once, in the partition of its status now',
    async (_, filter, movedTo) => {
      const own = await createTestTables('pages-moved');
      try {
        const store = new DynamoDbOrderStore(own.client, own.tables.orders);
        const orders: Order[] = Array.from({ length: 12 }, (_, i) => ({
          id: BigInt(i + 1),
          shipDate: DAY_ONE,
          status: i % 2 === 0 ? 'pending' : 'shipped',
        }));
        await store.putOrders(orders);
        // Order 5 changes between the Query of its pending partition (which still holds it) and
        // that of its shipped partition (which already does): both give it.
        const moved: Order = { id: 5n, shipDate: movedTo, status: 'shipped' };
        const pk = (input: object) =>
          (input as { ExpressionAttributeValues?: Record<string, unknown> })
            .ExpressionAttributeValues?.[':pk'];
        let pendingRead!: () => void;
        const pendingQueried = new Promise<void>((resolve) => (pendingRead = resolve));
        own.client.middlewareStack.add(
          (next, context) => async (args) => {
            if (context.commandName !== 'QueryCommand') return next(args);
            if (pk(args.input) === statusShard('shipped', orderShard(5n))) {
              await pendingQueried;
              await store.putOrders([moved]);
            }
            const result = await next(args);
            if (pk(args.input) === statusShard('pending', orderShard(5n))) pendingRead();
            return result;
          },
          { step: 'initialize', name: 'changeBetweenPartitions' },
        );
        const pages = new DynamoDbOrderPages(own.client, own.tables.orders, { indexes: ALL });
        const page = await pages.readPage({ plan: pages.plan(filter), pageSize: 20 });
        expect(ids(page.orders).sort()).toEqual(orders.map((o) => o.id.toString()).sort());
        expect(page.orders.find((o) => o.id === 5n)).toMatchObject(moved);
      } finally {
        await own.drop();
      }
    },
  );
});

describe('a cancel and a ship', () => {
  const raw = async (client: DynamoDBDocumentClient, table: string, id: bigint) =>
    (await client.send(new GetCommand({ TableName: table, Key: { shard: orderShard(id), id } })))
      .Item;

  it("move an order to its new status's partition: the pages of each status follow, trusted or not", async () => {
    const own = await createTestTables('pages-writes');
    try {
      const store = new DynamoDbOrderStore(own.client, own.tables.orders);
      await store.putOrders([
        { id: -3n, shipDate: '2026-11-02T00:00:00.5+01:00' },
        { id: 4n, status: 'pending', shipDate: '2026-11-03T00:00:00Z' },
      ]);
      const put = await raw(own.client, own.tables.orders, -3n);
      expect(put?.s).toBe(statusShard('pending', orderShard(-3n)));
      expect(String(put?.t)).toBe(
        String(derivedIndexAttributes({ id: -3n, shipDate: '2026-11-02T00:00:00.5+01:00' }).t),
      );
      await store.cancel(-3n, TEST_CANCELLATION);
      await store.ship(4n);
      // The cancel leaves `status` as it was (none: pending) and `u`, and moves `s`; the ship
      // moves `s` and takes the order out of the index of those not shipped (no `u`).
      const cancelled = await raw(own.client, own.tables.orders, -3n);
      expect(cancelled).toMatchObject({ s: 'c5' });
      expect(String(cancelled?.u)).toBe('5');
      expect(cancelled).not.toHaveProperty('status');
      const shipped = await raw(own.client, own.tables.orders, 4n);
      expect(shipped?.s).toBe('s4');
      expect(shipped).not.toHaveProperty('u');
      const pages = new DynamoDbOrderPages(own.client, own.tables.orders, { indexes: ALL });
      const seen = await settled(own.client, own.tables.orders);
      for (const trust of [seen, undefined]) {
        const page = async (filter: OrderFilter) =>
          ids(
            (
              await pages.readPage({
                plan: pages.plan(filter),
                pageSize: 5,
                ...(trust ? { seen: trust } : {}),
              })
            ).orders,
          );
        expect(await page({ statuses: ['cancelled'] })).toEqual(['-3']);
        expect(await page({ statuses: ['shipped'] })).toEqual(['4']);
        expect(await page({ statuses: ['pending'] })).toEqual([]);
        // The index of orders not shipped holds -3 as it was put (no status: pending): read
        // again, it is cancelled; 4 has left it, and the date index holds it as shipped.
        expect(await page({ statuses: ['cancelled'], shipDate: { from: 0n } })).toEqual(['-3']);
        expect(await page({ statuses: ['pending'], shipDate: { from: 0n } })).toEqual([]);
        expect(await page({ statuses: ['shipped'], shipDate: { from: 0n } })).toEqual(['4']);
        expect(await page({ shipDate: { from: 0n } })).toEqual(['-3', '4']);
      }
    } finally {
      await own.drop();
    }
  });
});

describe('an index that is not ready', () => {
  it('not in ORDERS_INDEXES: transient index-not-ready, before any read', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, {
      indexes: new Set(['ordersByPet']),
    });
    for (const filter of [
      { statuses: ['pending'] },
      { petId: 1n, shipDate: { from: 0n } },
    ] as OrderFilter[]) {
      const error = await failure(() => Promise.resolve().then(() => pages.plan(filter)));
      expect(error).toMatchObject({ kind: 'transient', reason: 'index-not-ready' });
      expect(error.message).toContain('not deployed yet');
    }
    // What is deployed serves: ordersByPet, and the table.
    expect(
      (await pages.readPage({ plan: pages.plan({ petId: 1n }), pageSize: 5 })).orders.length,
    ).toBeGreaterThan(0);
    expect((await pages.readPage({ plan: pages.plan({}), pageSize: 5 })).orders).toHaveLength(5);
  });

  it('still backfilling: transient index-not-ready, as DynamoDB refuses the Query', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    await pages.readPage({ plan: pages.plan({ statuses: ['shipped'] }), pageSize: 5 });
    const remove = failDynamoDbCalls(
      t.client,
      () =>
        Object.assign(
          new Error('Cannot read from backfilling global secondary index: ordersByStatus'),
          {
            name: 'ValidationException',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
          },
        ),
      t.tables.orders,
    );
    try {
      const error = await failure(() =>
        pages.readPage({ plan: pages.plan({ statuses: ['shipped'] }), pageSize: 5 }),
      );
      expect(error).toMatchObject({ kind: 'transient', reason: 'index-not-ready' });
      expect(error.message).toContain('backfilling');
    } finally {
      remove();
    }
  });

  it('named in ORDERS_INDEXES but missing from the table: permanent index-missing (a misconfigured stage)', async () => {
    const names = localTableNames(uniquePrefix('pages-one-index'));
    await ensureTables(t.client, names, { ordersIndexes: ['ordersByPet'] });
    try {
      const pages = new DynamoDbOrderPages(t.client, names.orders, { indexes: ALL });
      const error = await failure(() =>
        pages.readPage({ plan: pages.plan({ statuses: ['pending'] }), pageSize: 5 }),
      );
      expect(error).toMatchObject({ kind: 'permanent', reason: 'index-missing' });
      expect(
        (await pages.readPage({ plan: pages.plan({ petId: 1n }), pageSize: 5 })).orders,
      ).toEqual([]);
    } finally {
      const { DeleteTableCommand } = await import('@aws-sdk/client-dynamodb');
      await Promise.all(
        Object.values(names).map((TableName) =>
          t.client.send(new DeleteTableCommand({ TableName })),
        ),
      );
    }
  });

  it('on a stage that awaits the reindex, without its marker: transient for the indexes keyed by derived attributes, ordersByPet and the table serve', async () => {
    const own = await createTestTables('pages-marker');
    try {
      await new DynamoDbOrderStore(own.client, own.tables.orders).putOrders(STORE.slice(0, 40));
      const pages = new DynamoDbOrderPages(own.client, own.tables.orders, {
        indexes: ALL,
        awaitReindex: true,
      });
      const counter = countDynamoDbCalls(own.client, own.tables.orders);
      for (const [i, filter] of (
        [
          { statuses: ['pending'] },
          { shipDate: { from: 0n } },
          { petId: 1n, shipDate: { from: 0n } },
        ] as OrderFilter[]
      ).entries()) {
        counter.reset();
        const error = await failure(() =>
          pages.readPage({ plan: pages.plan(filter), pageSize: 5 }),
        );
        expect(error).toMatchObject({ kind: 'transient', reason: 'index-not-ready' });
        expect(error.message).toContain('run orders reindex');
        // The first read finds no marker; the container then refuses before any call.
        if (i > 0) expect(counter.calls).toEqual([]);
        else expect(counter.calls).toContain('GetItemCommand');
      }
      expect(
        (await pages.readPage({ plan: pages.plan({ petId: 1n }), pageSize: 50 })).plan.source,
      ).toBe('ordersByPet');
      expect((await pages.readPage({ plan: pages.plan({}), pageSize: 5 })).orders).toHaveLength(5);
      // The same table on a stage that does not await it (a table created with its indexes).
      const ready = new DynamoDbOrderPages(own.client, own.tables.orders, { indexes: ALL });
      counter.reset();
      expect(
        (await ready.readPage({ plan: ready.plan({ statuses: ['pending'] }), pageSize: 5 })).orders
          .length,
      ).toBeGreaterThan(0);
      expect(counter.calls).not.toContain('GetItemCommand');
    } finally {
      await own.drop();
    }
  });
});

describe("a container's view of the readiness marker", () => {
  it('reads it again at most every recheckMs while it is missing, and keeps ready once seen', async () => {
    const own = await createTestTables('pages-readiness');
    try {
      let now = 0;
      const counter = countDynamoDbCalls(own.client, own.tables.orders);
      const reads = () => counter.calls.filter((c) => /^Get(Item)?Command$/.test(c)).length;
      const readiness = new IndexReadiness(own.client, own.tables.orders, {
        recheckMs: 5_000,
        now: () => now,
      });
      expect(await readiness.isReady()).toBe(false);
      now = 4_999;
      expect(await readiness.isReady()).toBe(false);
      expect(reads()).toBe(1);
      await markIndexesReady(own.client, own.tables.orders);
      now = 5_000;
      expect(await readiness.isReady()).toBe(true);
      expect(reads()).toBe(2);
      await own.client.send(
        new DeleteCommand({ TableName: own.tables.orders, Key: INDEX_READINESS_KEY }),
      );
      now = 1e9;
      expect(await readiness.isReady()).toBe(true);
      expect(reads()).toBe(2);
    } finally {
      await own.drop();
    }
  });

  it('is not written with a new table (ready as created), and the reindex writes it in a partition the list never reads', async () => {
    const read = () =>
      t.client.send(new GetCommand({ TableName: t.tables.orders, Key: INDEX_READINESS_KEY }));
    expect((await read()).Item).toBeUndefined();
    await markIndexesReady(t.client, t.tables.orders);
    expect((await read()).Item).toMatchObject({ source: 'reindex' });
    expect(String((await read()).Item?.format)).toBe('1');
    const all = await walk(
      new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL }),
      {},
      100,
    );
    expect(all.orders).toHaveLength(STORE.length);
  });
});

describe('the tag of a page', () => {
  it('by version for a page of the table, at once after a write; never for a page of an index', async () => {
    const own = await createTestTables('pages-tag');
    try {
      const store = new DynamoDbOrderStore(own.client, own.tables.orders);
      await loadOrders(own.client, own.tables.orders, [{ id: 1n, status: 'pending' }]);
      const before = Date.now();
      await store.cancel(1n, TEST_CANCELLATION);
      const version = await store.readListVersion();
      expect(version.lastChangeAt).toBeGreaterThanOrEqual(before);
      expect(version.lastChangeAt).toBeLessThanOrEqual(Date.now());
      const pages = new DynamoDbOrderPages(own.client, own.tables.orders, { indexes: ALL });
      const tag = (filter: OrderFilter) =>
        pageEntityTag({ version, filter, pageSize: 50, plan: pages.plan(filter) });
      expect(tag({ statuses: ['cancelled'] })).toBeUndefined();
      expect(tag({})).toMatch(/^[\w-]{22}$/);
      expect(tag({ complete: true })).toMatch(/^[\w-]{22}$/);
    } finally {
      await own.drop();
    }
  });
});

describe('a page past its deadline', () => {
  it('fails transient (timeout), as every read of lib/dynamodb', async () => {
    const pages = new DynamoDbOrderPages(t.client, t.tables.orders, { indexes: ALL });
    const error = await failure(() =>
      pages.readPage(
        { plan: pages.plan({ statuses: ['pending'] }), pageSize: 5 },
        { signal: AbortSignal.abort() },
      ),
    );
    expect(error).toMatchObject({ kind: 'transient', reason: 'timeout' });
  });
});

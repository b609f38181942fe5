/**
 * Where a v2 page ends (lib/dynamodb/order-pages.ts): a page is short only at the end of its
 * filter or of its read budget, also where many orders share a ship-date instant (the partitions'
 * frontiers then stand at one instant, and only the id tells them apart), and no round of a page
 * is counted that queries nothing.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { PAGE_READ_BUDGET } from '../../lib/dynamodb/page-limits.ts';
import type { DynamoDbPagePlan } from '../../lib/dynamodb/page-plan.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import {
  comparePositions,
  orderMatches,
  positionOf,
  type OrderFilter,
  type PagePosition,
} from '../../lib/orders/order-filter.ts';
import type { OrderPage } from '../../lib/orders/order-page-reader.ts';
import { ORDER_STATUSES, type Order } from '../../lib/orders/order.ts';
import { loadOrders } from '../../bench/raw-orders.ts';
import { seeded } from '../../bench/statistics.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

const ALL = new Set(ORDER_INDEX_NAMES);
/** One instant, written three ways. */
const SAME_INSTANT = [
  '2026-03-01T00:00:00Z',
  '2026-03-01T01:00:00+01:00',
  '2026-03-01T00:00:00.000Z',
];
const YEAR: OrderFilter = {
  shipDate: {
    from: parseInstant('2026-01-01T00:00:00Z')!,
    to: parseInstant('2026-12-01T00:00:00Z')!,
  },
};

/** The store: ids 1–300 at one instant (statuses rotating), ids 301–400 at distinct ones. */
function tiedStore(): Order[] {
  return Array.from({ length: 400 }, (_, i): Order => {
    const id = BigInt(i + 1);
    const shipDate =
      i < 300
        ? SAME_INSTANT[i % 3]!
        : new Date(Date.UTC(2026, 0, 2) + (i - 300) * 3 * 86_400_000).toISOString();
    const status = ORDER_STATUSES[Math.floor(i / 3) % 3]!;
    return { id, petId: 7n, quantity: 1, shipDate, status, complete: false };
  });
}

/**
 * A store of 3,000 orders whose ship dates are drawn from 120 instants of one month (about 25
 * orders each, written with other offsets and fractions) and, for a third of them, from any
 * second of it; most shipped.
 */
function mixedStore(): Order[] {
  const next = seeded(4205);
  const pick = (n: number) => Math.floor(next() * n);
  const base = Date.UTC(2026, 4, 1);
  const instants = Array.from({ length: 120 }, () => base + pick(30 * 86_400) * 1000);
  return Array.from({ length: 3_000 }, (_, i): Order => {
    const r = next();
    const status = r < 0.1 ? 'pending' : r < 0.15 ? 'cancelled' : 'shipped';
    const ms = next() < 0.67 ? instants[pick(instants.length)]! : base + pick(30 * 86_400) * 1000;
    const iso = new Date(ms).toISOString();
    const shipDate = [
      iso,
      iso.replace('.000Z', 'Z'),
      new Date(ms + 3_600_000).toISOString().replace('.000Z', '+01:00'),
    ][pick(3)]!;
    return {
      id: BigInt(10_000 + i * 3),
      quantity: 1,
      shipDate,
      status,
      complete: status === 'shipped',
    };
  });
}

function sorted(store: readonly Order[], filter: OrderFilter): Order[] {
  return store
    .filter((o) => orderMatches(filter, o))
    .sort((a, b) => comparePositions(positionOf(a, 'shipDate')!, positionOf(b, 'shipDate')!));
}

/**
 * What every page here must show: no round that queried nothing, and few rounds (these stores
 * are small: a second round, a third rarely, reads what the first left) — but where the index
 * filters on what it holds (a status in the date index, which holds every status): it evaluates
 * the orders that do not match too, and reads on by the share that matched, within its budget.
 */
function expectFewRoundsThatQuery(page: OrderPage & { plan: DynamoDbPagePlan }): void {
  expect(page.cost.rounds).toBeLessThanOrEqual(page.cost.queries);
  expect(page.cost.rounds).toBeLessThanOrEqual(
    page.plan.storedStatuses ? PAGE_READ_BUDGET.rounds : 3,
  );
}

/** Tables of their own holding `orders`, made before the describe's tests, dropped after. */
function tablesHolding(label: string, orders: readonly Order[]): () => TestTables {
  let t: TestTables;
  beforeAll(async () => {
    t = await createTestTables(label);
    await loadOrders(t.client, t.tables.orders, orders);
  });
  afterAll(() => t.drop());
  return () => t;
}

describe('many orders at one ship-date instant', () => {
  const store = tiedStore();
  const tables = tablesHolding('page-ties', store);

  it.each([
    ['without a status', YEAR],
    ['of two statuses', { ...YEAR, statuses: ['pending', 'shipped'] }],
  ] as [string, OrderFilter][])(
    'a date range %s gives full pages to the end, each from rounds that query',
    async (_, filter) => {
      const { client, tables: names } = tables();
      const pages = new DynamoDbOrderPages(client, names.orders, { indexes: ALL });
      const expected = sorted(store, filter);
      const sizes: number[] = [];
      const listed: Order[] = [];
      let start: PagePosition | undefined;
      do {
        const page = await pages.readPage({
          plan: pages.plan(filter),
          pageSize: 17,
          ...(start ? { start } : {}),
        });
        expectFewRoundsThatQuery(page);
        sizes.push(page.orders.length);
        listed.push(...page.orders);
        start = page.next;
      } while (start);
      expect(listed.map((o) => o.id)).toEqual(expected.map((o) => o.id));
      const full = Math.floor(expected.length / 17);
      expect(sizes.slice(0, full)).toEqual(Array.from({ length: full }, () => 17));
      expect(sizes.length).toBeLessThanOrEqual(full + 1);
    },
  );
});

describe('a store with mixed ship dates, many of them shared', () => {
  const store = mixedStore();
  const tables = tablesHolding('page-mixed', store);

  it('gives a full page from anywhere, of any size, unless the filter ends first (random starts and sizes)', async () => {
    const { client, tables: names } = tables();
    const pages = new DynamoDbOrderPages(client, names.orders, { indexes: ALL });
    const filters: OrderFilter[] = [
      { shipDate: { from: parseInstant('2026-05-03T00:00:00Z')! } },
      { shipDate: { to: parseInstant('2026-05-28T00:00:00Z')! }, statuses: ['pending', 'shipped'] },
      { shipDate: { from: parseInstant('2026-05-01T00:00:00Z')! }, statuses: ['cancelled'] },
    ];
    const references = filters.map((filter) => sorted(store, filter));
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: filters.length - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 60 }),
        async (which, where, pageSize) => {
          const filter = filters[which]!;
          const expected = references[which]!;
          // Start after the order at `where` of the way through (or at the beginning).
          const at = Math.floor(where * expected.length) - 1;
          const start = at >= 0 ? positionOf(expected[at]!, 'shipDate') : undefined;
          const page = await pages.readPage({
            plan: pages.plan(filter),
            pageSize,
            ...(start ? { start } : {}),
          });
          expectFewRoundsThatQuery(page);
          const rest = expected.slice(at + 1);
          expect(page.orders.map((o) => o.id)).toEqual(rest.slice(0, pageSize).map((o) => o.id));
          if (rest.length > pageSize) expect(page.next).toBeDefined();
        },
      ),
      { numRuns: 150 },
    );
  });
});

/**
 * `npm run bench:list-v2 [-- --orders N] [--runs R] [--dynamodb-endpoint URL]`: what a page of the
 * v2 list costs, against a floor, in one run. Loads N orders (default 200,000) into DynamoDB Local
 * with the v2 list's indexes: 2% pending, 1% cancelled, the rest shipped (shipped ⇒ complete, else
 * not); 5,000 pets, Zipf-skewed; ship dates over two years. Then, for each filter, the page
 * reader in this process (lib/dynamodb/order-pages.ts, one reader for the run, as a warm
 * container has) against a floor of raw SDK calls that fetch the same items from the same
 * source: per page, one Query per partition bounded exactly to the page's range (no Limit, no
 * merge), all at once, then the BatchGetItems of what no reader may take from the index as it
 * stands (an order it holds as pending outside the status index; 100 keys each, at once) — what a
 * reader that knew in advance where the page ends would send. Pages are read as the function reads
 * them in a store unchanged for the settle time (its list version read first). Printed per filter: a first page's time
 * (median of R runs, taken in turns with the floor's) and items DynamoDB evaluated, and a full
 * walk's time, pages and evaluated items, each against the floor's, and the ratio; then the
 * v1 list of the whole store (DynamoDbOrderStore.openOrderStream drained, best of R) in the same
 * run, and how much faster the first page of status=pending is. The walk's orders are checked
 * against the floor's (the same orders, in the same order); a difference fails the run.
 */
import {
  QueryCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { valueFlag } from '../lib/config/flags.ts';
import { GET_BATCH, getInBatches } from '../lib/dynamodb/batch-write.ts';
import { benchDynamoDb } from './dynamodb.ts';
import { ensureTables } from '../lib/dynamodb/create-table.ts';
import { DynamoDbListVersion } from '../lib/dynamodb/list-version.ts';
import { DynamoDbOrderPages } from '../lib/dynamodb/order-pages.ts';
import type { DynamoDbPagePlan } from '../lib/dynamodb/page-plan.ts';
import { readOrderItem } from '../lib/dynamodb/order-item.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import { ORDER_INDEX_NAMES } from '../lib/dynamodb/tables.ts';
import { parseInstant } from '../lib/orders/instant.ts';
import {
  comparePositions,
  orderMatches,
  positionOf,
  type OrderFilter,
  type PagePosition,
} from '../lib/orders/order-filter.ts';
import { PAGE_SIZE_DEFAULT } from '../lib/orders/list-query.ts';
import { INDEX_SETTLE_MS, isSettled } from '../lib/orders/page-tag.ts';
import type { OrderPage } from '../lib/orders/order-page-reader.ts';
import type { Order } from '../lib/orders/order.ts';
import { localTableNames } from '../local/local-stack.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { floorQuery, pageReadTo } from './page-floor.ts';
import { loadOrders } from './raw-orders.ts';
import { percentile, seeded } from './statistics.ts';

const PETS = 5_000;
const FIRST_DAY = Date.UTC(2025, 0, 1);
const DAYS = 730;
const DAY_MS = 86_400_000;
/** Walks of at most this many pages are repeated (`--runs`), the median counting. */
const SHORT_WALK = 20;

/**
 * The benchmark's store: ids rising with gaps from a 13-digit base; 5,000 pets drawn by Zipf's
 * law (the pet of rank r with weight 1/r: the first holds about 11% of the orders); ship dates
 * uniform over 2025–2026, to the second; 2% pending, 1% cancelled, the rest shipped and complete
 * (other shares of pending and cancelled orders may be given: the cost benchmark's store has 10%
 * pending, the rest drawn the same way).
 */
export function v2BenchOrders(
  count: number,
  shares: { readonly pending: number; readonly cancelled: number } = {
    pending: 0.02,
    cancelled: 0.01,
  },
): Order[] {
  const next = seeded(20261126);
  const pick = (n: number) => Math.floor(next() * n);
  const pets = Array.from({ length: PETS }, (_, rank) => BigInt(1_000 + rank * 7 + pick(7)));
  const cumulative: number[] = [];
  let total = 0;
  for (let rank = 1; rank <= PETS; rank++) cumulative.push((total += 1 / rank));
  const zipfPet = () => {
    const target = next() * total;
    let low = 0;
    let high = PETS - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return pets[low]!;
  };
  let id = 1_000_000_000_000n;
  return Array.from({ length: count }, () => {
    id += BigInt(1 + pick(16));
    const r = next();
    const status =
      r < shares.pending
        ? 'pending'
        : r < shares.pending + shares.cancelled
          ? 'cancelled'
          : 'shipped';
    return {
      id,
      petId: zipfPet(),
      quantity: 1 + pick(5),
      shipDate: new Date(FIRST_DAY + pick(DAYS * 86_400) * 1000)
        .toISOString()
        .replace('.000Z', 'Z'),
      complete: status === 'shipped',
      status,
    };
  });
}

/** A page as the reader reads it, with its plan. */
type Page = OrderPage<DynamoDbPagePlan>;

interface Measured {
  readonly ms: number;
  readonly evaluated: number;
}

/** The floor of one page: the page's range of every partition, then its items (see above). */
async function floorPage(
  client: DynamoDBDocumentClient,
  table: string,
  filter: OrderFilter,
  page: Page,
  start: PagePosition | undefined,
): Promise<Measured & { orders: Order[] }> {
  const started = performance.now();
  let evaluated = 0;
  const { plan } = page;
  const end = pageReadTo(page);
  const inputs = end
    ? plan.partitionValues.flatMap((value) => floorQuery(table, plan, value, start, end) ?? [])
    : [];
  const found = (
    await Promise.all(
      inputs.map(async (input: QueryCommandInput) => {
        const items: Record<string, unknown>[] = [];
        let startKey: Record<string, unknown> | undefined;
        do {
          const result = await client.send(
            new QueryCommand({ ...input, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
          );
          evaluated += result.ScannedCount ?? 0;
          items.push(...(result.Items ?? []));
          startKey = result.LastEvaluatedKey;
        } while (startKey);
        return items;
      }),
    )
  ).flat();
  // The unsure orders eventually consistent, as a reader of a settled store reads them again.
  const byKey = async (wanted: Record<string, unknown>[], consistent = true) =>
    wanted.length === 0
      ? []
      : getInBatches(
          client,
          table,
          wanted.map((item) => ({ shard: item.shard, id: item.id })),
          { concurrency: Math.ceil(wanted.length / GET_BATCH), consistent },
        );
  // Read again by key: what no reader can take from the index as it stands (an index whose
  // `status` is not in its key: the orders it holds as pending, which a cancel may have
  // cancelled since; lib/dynamodb/page-check.ts).
  const unsure = (item: Record<string, unknown>) =>
    plan.items === 'fields' &&
    !plan.statusInKey &&
    (item.status === undefined || item.status === 'pending');
  await byKey(found.filter(unsure), false);
  const ms = performance.now() - started;
  // Not timed: every order of the page as stored, to check the reader's against.
  const items = plan.source === 'table' ? found : await byKey(found);
  const orders = items
    .flatMap((item) => readOrderItem(item).order ?? [])
    .filter((order) => orderMatches(filter, order))
    .sort((a, b) => comparePositions(positionOf(a, plan.order)!, positionOf(b, plan.order)!));
  return { ms, evaluated, orders };
}

interface Case {
  readonly name: string;
  readonly filter: OrderFilter;
}

interface Row {
  readonly name: string;
  readonly source: string;
  readonly partitions: number;
  readonly first: {
    reader: number;
    floor: number;
    evaluated: number;
    floorEvaluated: number;
    fetched: number;
    rounds: number;
  };
  readonly walk: {
    pages: number;
    orders: number;
    reader: number;
    floor: number;
    evaluated: number;
    floorEvaluated: number;
    meanRounds: number;
  };
}

async function main(): Promise<void> {
  const values = benchFlags(
    'bench:list-v2',
    'Pages of the v2 list, per filter, against a floor of raw Queries and BatchGets; and the v1 list.',
    {
      orders: countFlag('orders to load', 200_000),
      runs: countFlag('runs of each first page (medians) and of the v1 list (best)', 5),
      'dynamodb-endpoint': valueFlag('URL', 'use a running DynamoDB instead of starting one'),
    },
  );
  const count = countOf('bench:list-v2', 'orders', values.orders, 200_000);
  const runs = countOf('bench:list-v2', 'runs', values.runs, 5);
  const dynamo = await benchDynamoDb(values['dynamodb-endpoint']);
  const { client } = dynamo;
  const tables = localTableNames(`bench-list-v2-${Date.now().toString(36)}`);
  try {
    await ensureTables(client, tables);
    const orders = v2BenchOrders(count);
    const loadStarted = performance.now();
    await loadOrders(client, tables.orders, orders);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    console.log(`loaded ${count} orders with the v2 list's indexes in ${loadSeconds.toFixed(1)} s`);

    const byPet = new Map<bigint, number>();
    for (const order of orders) byPet.set(order.petId!, (byPet.get(order.petId!) ?? 0) + 1);
    const ranked = [...byPet].sort((a, b) => b[1] - a[1]);
    const [popular, popularCount] = ranked[0]!;
    const [typical, typicalCount] = ranked[Math.floor(ranked.length / 2)]!;
    const at = (day: number) => parseInstant(new Date(FIRST_DAY + day * DAY_MS).toISOString())!;
    const cases: Case[] = [
      { name: 'status=pending', filter: { statuses: ['pending'] } },
      { name: 'status=cancelled', filter: { statuses: ['cancelled'] } },
      { name: 'status=pending&status=cancelled', filter: { statuses: ['pending', 'cancelled'] } },
      { name: `petId (most popular, ${popularCount} orders)`, filter: { petId: popular } },
      { name: `petId (median pet, ${typicalCount} orders)`, filter: { petId: typical } },
      { name: 'a week of ship dates', filter: { shipDate: { from: at(300), to: at(307) } } },
      {
        name: 'status=pending + a month of ship dates',
        filter: { statuses: ['pending'], shipDate: { from: at(300), to: at(330) } },
      },
      {
        name: 'petId (most popular) + a month of ship dates',
        filter: { petId: popular, shipDate: { from: at(300), to: at(330) } },
      },
      {
        name: 'petId (most popular) + status=pending (re-checked)',
        filter: { petId: popular, statuses: ['pending'] },
      },
      { name: 'complete=false (the table, filtered)', filter: { complete: false } },
      { name: 'no filter (the table)', filter: {} },
    ];

    const pages = new DynamoDbOrderPages(client, tables.orders, {
      indexes: new Set(ORDER_INDEX_NAMES),
    });
    // Pages as the function reads them in a store unchanged for the settle time: with the list's
    // version it read first (for the page's ETag), so that the index is trusted for what it holds
    // (a store that changes every second re-reads more: bench:cost measures both).
    const listVersion = new DynamoDbListVersion(client, tables.orders);
    const loadedAt = (await listVersion.read()).lastChangeAt ?? Date.now();
    const settle = loadedAt + INDEX_SETTLE_MS + 1_000 - Date.now();
    if (settle > 0) {
      console.log(
        `waiting ${(settle / 1000).toFixed(1)} s for the store to settle (INDEX_SETTLE_MS)`,
      );
      await sleep(settle);
    }
    const version = await listVersion.read();
    if (!isSettled(version, Date.now())) throw new Error('the store did not settle after its load');
    const seen = () => ({ version, at: Date.now() });
    // The version read each page makes first, timed apart (the pages' figures are the reader's).
    const versionTimes: number[] = [];
    const N = PAGE_SIZE_DEFAULT;
    const rows: Row[] = [];
    const problems: string[] = [];
    for (const { name, filter } of cases) {
      // A first page: the reader and the floor in turns, after one of each to warm up.
      const readerTimes: number[] = [];
      const floorTimes: number[] = [];
      let first: Page | undefined;
      let firstFloor: Measured | undefined;
      for (let run = 0; run <= runs; run++) {
        const versionStarted = performance.now();
        const read = await listVersion.read();
        if (run > 0) versionTimes.push(performance.now() - versionStarted);
        const started = performance.now();
        const page = await pages.readPage({
          plan: pages.plan(filter),
          pageSize: N,
          seen: { version: read, at: Date.now() },
        });
        const ms = performance.now() - started;
        const floor = await floorPage(client, tables.orders, filter, page, undefined);
        if (run === 0) continue;
        readerTimes.push(ms);
        floorTimes.push(floor.ms);
        first = page;
        firstFloor = floor;
      }
      // The walk: each page, then its floor, in turns (so that a change in the machine's load
      // weighs on both alike). A short walk is repeated up to `runs` times: the median counts.
      const walks: { reader: number; floor: number }[] = [];
      let walked: Page[] = [];
      let floorEvaluated = 0;
      let readerOrders: Order[] = [];
      let floorOrders: Order[] = [];
      do {
        walked = [];
        floorEvaluated = 0;
        readerOrders = [];
        floorOrders = [];
        let readerMs = 0;
        let floorMs = 0;
        let start: PagePosition | undefined;
        do {
          const started = performance.now();
          const page = await pages.readPage({
            plan: pages.plan(filter),
            pageSize: N,
            seen: seen(),
            ...(start ? { start } : {}),
          });
          readerMs += performance.now() - started;
          const floor = await floorPage(client, tables.orders, filter, page, start);
          floorMs += floor.ms;
          floorEvaluated += floor.evaluated;
          walked.push(page);
          readerOrders.push(...page.orders);
          floorOrders.push(...floor.orders);
          start = page.next;
        } while (start);
        walks.push({ reader: readerMs, floor: floorMs });
      } while (walks.length < runs && walked.length <= SHORT_WALK);
      const median = (f: (walk: { reader: number; floor: number }) => number) =>
        percentile(
          walks.map(f).sort((a, b) => a - b),
          50,
        );
      if (readerOrders.map((o) => o.id).join() !== floorOrders.map((o) => o.id).join()) {
        problems.push(`${name}: the walk's orders differ from the floor's`);
      }
      const expected = orders.filter((o) => orderMatches(filter, o)).length;
      if (readerOrders.length !== expected) {
        problems.push(`${name}: the walk gave ${readerOrders.length} orders, not ${expected}`);
      }
      const sum = (f: (page: Page) => number) => walked.reduce((total, page) => total + f(page), 0);
      rows.push({
        name,
        source: first!.plan.source,
        partitions: first!.plan.partitions,
        first: {
          reader: percentile(
            [...readerTimes].sort((a, b) => a - b),
            50,
          ),
          floor: percentile(
            [...floorTimes].sort((a, b) => a - b),
            50,
          ),
          evaluated: first!.cost.evaluated,
          floorEvaluated: firstFloor!.evaluated,
          fetched: first!.cost.fetched,
          rounds: first!.cost.rounds,
        },
        walk: {
          pages: walked.length,
          orders: readerOrders.length,
          reader: median((walk) => walk.reader),
          floor: median((walk) => walk.floor),
          evaluated: sum((page) => page.cost.evaluated),
          floorEvaluated,
          meanRounds: sum((page) => page.cost.rounds) / walked.length,
        },
      });
      console.error(`measured ${name}`);
    }

    // The v1 list of the whole store, drained in this process: the best of `runs`.
    let v1Ms = Infinity;
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      let listed = 0;
      for await (const batch of await new DynamoDbOrderStore(
        client,
        tables.orders,
      ).openOrderStream())
        listed += batch.length;
      v1Ms = Math.min(v1Ms, performance.now() - started);
      if (listed !== count) problems.push(`the v1 list gave ${listed} orders, not ${count}`);
    }

    const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');
    console.log(
      `\nbench:list-v2 — ${count} orders, pages of ${N}; first page: median of ${runs} runs; walk: every page once\n`,
    );
    console.log(
      '| filter | source (partitions) | first page ms: reader / floor | × floor | evaluated: reader / floor (2N + k) | read by key | rounds | walk: pages, orders | walk s: reader / floor | × floor | walk evaluated: reader / floor | rounds a page |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) {
      const { first, walk } = row;
      console.log(
        `| ${row.name} | ${row.source} (${row.partitions}) | ${first.reader.toFixed(1)} / ${first.floor.toFixed(1)} | ${ratio(first.reader, first.floor)} | ${first.evaluated} / ${first.floorEvaluated} (${2 * N + row.partitions}) | ${first.fetched} | ${first.rounds} | ${walk.pages}, ${walk.orders} | ${(walk.reader / 1000).toFixed(2)} / ${(walk.floor / 1000).toFixed(2)} | ${ratio(walk.reader, walk.floor)} | ${walk.evaluated} / ${walk.floorEvaluated} | ${walk.meanRounds.toFixed(2)} |`,
      );
    }
    console.log(
      `\nBefore every page the function reads the list's version (its items, strongly consistent, for the page's ETag and what the index may be trusted for): median ${percentile(
        [...versionTimes].sort((a, b) => a - b),
        50,
      ).toFixed(1)} ms, on top of each first page above.`,
    );
    const pending = rows[0]!;
    console.log(
      `\nv1 list of the whole store (openOrderStream drained, best of ${runs}): ${(v1Ms / 1000).toFixed(2)} s; ` +
        `the first page of status=pending (${pending.first.reader.toFixed(1)} ms) is ${(v1Ms / pending.first.reader).toFixed(0)}× faster (goal ≥ 50×).`,
    );
    const over = rows.filter(
      (row) => !row.name.startsWith('complete') && row.first.reader > 1.3 * row.first.floor,
    );
    console.log(
      over.length === 0
        ? "Every named filter's first page within 1.3× its floor."
        : `Over 1.3× the floor on the first page: ${over.map((row) => row.name).join('; ')}.`,
    );
    if (problems.length > 0) {
      for (const problem of problems) console.error(`FAIL ${problem}`);
      process.exitCode = 1;
    }
  } finally {
    await dynamo.stop();
  }
}

if (import.meta.main) await main();

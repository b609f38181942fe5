/**
 * The v2 list's pages on DynamoDB (the port: lib/orders/order-page-reader.ts). A filter's plan is
 * made once, without I/O (`plan`: ./page-plan.ts, which source and partitions serve the filter);
 * a page of it is read in one direction, from the rooms beside this file, each handed what it
 * needs:
 *
 *   1. the Queries (./page-plan.ts pageQueries): each partition's key condition from the page's
 *      start, with its first round's Limit (./page-limits.ts firstLimit), and how their keys read
 *      as positions;
 *   2. candidates (./candidate-stream.ts): those Queries sent and merged in sort order, read on
 *      round by round within the page's budget (./page-limits.ts: PAGE_READ_BUDGET, readOnLimit,
 *      roundLimits);
 *   3. readiness, on a stage that waits for `orders reindex` (a table of release 1.0.0): an index
 *      keyed by derived attributes serves once its marker is there (./index-readiness.ts), read
 *      beside the first take; a table created with its indexes is ready as created;
 *   4. the check (./page-check.ts), handed what the list's version lets the index be trusted
 *      for: each candidate listed as the index holds it, but for those it may hold as they no
 *      longer are, read by key and re-checked (from the table, checked as read); a candidate that
 *      is not listed makes the page read on, by the share that was listed so far
 *      (./page-limits.ts recheckCount);
 *   5. where the page ends (pageEnd): full, at the end of the filter, or at its budget, served
 *      short; the next page starts after the last candidate checked, or, cut by the budget,
 *      where every partition had read to.
 *
 * Exactness: a table page is strongly consistent. An index page shows no order that does not
 * match when read; an order whose change to match is younger than the index's propagation lag
 * (usually under a second; lib/orders/page-tag.ts) can be missing from the page that covers it.
 * DynamoDB Local updates its indexes synchronously. Failures: ./page-failures.ts.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { OrderFilter, PagePosition } from '../orders/order-filter.ts';
import type { OrderPage, OrderPageReader, PageRequest } from '../orders/order-page-reader.ts';
import type { OrderStreamOptions } from '../orders/order-store.ts';
import type { Order } from '../orders/order.ts';
import { isSettled } from '../orders/page-tag.ts';
import { CandidateStream, sendQueries, type Taken } from './candidate-stream.ts';
import { IndexReadiness } from './index-readiness.ts';
import { candidateCheck, NOTHING_CHECKED, type CheckCost, type IndexTrust } from './page-check.ts';
import { indexNotDeployed, ordersNotIndexed } from './page-failures.ts';
import { PAGE_READ_BUDGET, recheckCount, type PageReadBudget } from './page-limits.ts';
import { pageQueries, planPages, type DynamoDbPagePlan } from './page-plan.ts';
import type { OrderIndexName } from './tables.ts';

/** Where a page ends: `next`, where the next page starts after; absent at the end of the filter. */
export interface PageEnd {
  readonly next?: PagePosition;
}

/** What a page knows once it has checked a take's candidates, to decide whether it ends. */
export interface PageSoFar {
  /** It holds the page size. */
  readonly full: boolean;
  /** Candidates of the take are left after the one that filled it. */
  readonly leftOver: boolean;
  /** The last candidate checked; absent while none was. */
  readonly last?: PagePosition;
  readonly taken: Pick<Taken, 'more' | 'cutAt'>;
  /** Its budget of orders read by key is spent. */
  readonly fetchSpent: boolean;
}

/**
 * Where a page ends, or undefined while it reads on: full (a next page after its last candidate
 * when anything may follow it); at the end of the filter (none); cut by the budget of rounds or
 * evaluated keys (the next page after where every partition had read to) or of orders read by
 * key (after its last candidate).
 */
export function pageEnd(page: PageSoFar): PageEnd | undefined {
  const { last, taken } = page;
  if (page.full) return page.leftOver || taken.more ? { next: last! } : {};
  if (!taken.more) return {};
  if (taken.cutAt) return { next: taken.cutAt };
  if (page.fetchSpent && last) return { next: last };
  return undefined;
}

/** Adds `orders` that are listed to `page` until it holds `pageSize`: how many it looked at. */
function fill(page: Order[], orders: readonly (Order | undefined)[], pageSize: number): number {
  let looked = 0;
  for (const order of orders) {
    if (page.length === pageSize) break;
    looked++;
    if (order) page.push(order);
  }
  return looked;
}

/** What the version read before a page lets its index be trusted for (nothing, unseen). */
function trustOf(seen: PageRequest['seen']): IndexTrust {
  if (!seen) return { settled: false, recentWrites: 'all' };
  const settled = isSettled(seen.version, seen.at);
  return { settled, recentWrites: settled ? new Set() : seen.version.recentWrites };
}

const addCost = (a: CheckCost, b: CheckCost): CheckCost => ({
  fetched: a.fetched + b.fetched,
  batchGets: a.batchGets + b.batchGets,
});

export interface DynamoDbOrderPagesOptions {
  /** The indexes the stage has (lib/dynamodb/order-indexes.ts, from ORDERS_INDEXES). */
  readonly indexes: ReadonlySet<OrderIndexName>;
  /**
   * Whether an index keyed by derived attributes waits for the readiness marker of `orders
   * reindex` (./index-readiness.ts: a stage upgrading from 1.0.0); not by default: a table
   * created with its indexes holds every order in them once they are ACTIVE.
   */
  readonly awaitReindex?: boolean;
  /** What a page may read before it is served short; PAGE_READ_BUDGET by default. */
  readonly budget?: PageReadBudget;
}

/**
 * The v2 list's page reader on the orders table and its indexes (see above): a filter planned
 * once, without I/O, then its pages read one after another, each starting after the last one's
 * `next`.
 *
 * @example
 * ```typescript
 * import { createDocumentClient } from './client.ts';
 * import { DynamoDbOrderPages } from './order-pages.ts';
 * import { ORDER_INDEX_NAMES } from './tables.ts';
 *
 * const [client, tableName] = [createDocumentClient(), 'store-orders-dev-orders'];
 * const pages = new DynamoDbOrderPages(client, tableName, { indexes: new Set(ORDER_INDEX_NAMES) });
 * const plan = pages.plan({ statuses: ['pending'] }); // ordersByStatus, 8 partitions
 * let page = await pages.readPage({ plan, pageSize: 50 });
 * while (page.next) page = await pages.readPage({ plan, start: page.next, pageSize: 50 });
 * ```
 */
export class DynamoDbOrderPages implements OrderPageReader<DynamoDbPagePlan> {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly indexes: ReadonlySet<OrderIndexName>;
  private readonly readiness: IndexReadiness | undefined;
  private readonly budget: PageReadBudget;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: DynamoDbOrderPagesOptions,
  ) {
    this.client = client;
    this.tableName = tableName;
    this.indexes = options.indexes;
    this.readiness = options.awaitReindex ? new IndexReadiness(client, tableName) : undefined;
    this.budget = options.budget ?? PAGE_READ_BUDGET;
  }

  /**
   * The plan of a filter's pages, without I/O (./page-plan.ts): the index or table that serves
   * it and the partitions a page reads. Throws a transient failure (`index-not-ready`) when the
   * index it needs is not deployed on this stage.
   */
  plan(filter: OrderFilter): DynamoDbPagePlan {
    const plan = planPages(filter, this.indexes);
    if (plan.source !== 'table' && !this.indexes.has(plan.source)) {
      throw indexNotDeployed(plan.source);
    }
    return plan;
  }

  /**
   * One page of a plan, after `start`, by `signal`'s deadline: at most `pageSize` orders, short
   * only at the end of the filter or of its budget; `next` says where the next page starts.
   * `seen`, the list's version read before the page, says what an index may be trusted for
   * (without it, every order the index may hold stale is read again by key).
   *
   * @example
   * ```typescript
   * import { DynamoDbListVersion } from './list-version.ts';
   *
   * const version = await new DynamoDbListVersion(client, tableName).read();
   * const page = await pages.readPage(
   *   { plan: pages.plan({ petId: 7n }), pageSize: 50, seen: { version, at: Date.now() } },
   *   { signal: AbortSignal.timeout(5_000) },
   * );
   * console.log(page.orders.length, page.cost.evaluated, page.next);
   * ```
   */
  async readPage(
    { plan, start, pageSize, seen }: PageRequest<DynamoDbPagePlan>,
    options: OrderStreamOptions = {},
  ): Promise<OrderPage<DynamoDbPagePlan>> {
    const { budget } = this;
    const send = sendQueries(this.client, plan.source, options.signal);
    const candidates = new CandidateStream({
      queries: pageQueries(this.tableName, plan, start, pageSize),
      budget,
      send,
    });
    const check = candidateCheck(this.client, this.tableName, plan, trustOf(seen), options);
    const orders: Order[] = [];
    let checkCost = NOTHING_CHECKED;
    let checked = 0;
    let last: PagePosition | undefined;
    let taken = await this.firstTake(plan, candidates, pageSize, options.signal);
    for (;;) {
      const listed = await check(taken.candidates);
      checkCost = addCost(checkCost, listed.cost);
      const looked = fill(orders, listed.orders, pageSize);
      checked += looked;
      last = taken.candidates[looked - 1]?.position ?? last;
      const end = pageEnd({
        full: orders.length === pageSize,
        leftOver: looked < taken.candidates.length,
        ...(last ? { last } : {}),
        taken,
        fetchSpent: checkCost.fetched >= budget.fetched,
      });
      if (end) return { orders, ...end, plan, cost: { ...taken.spent, ...checkCost } };
      const needed = pageSize - orders.length;
      const fetchLeft = budget.fetched - checkCost.fetched;
      taken = await candidates.take(recheckCount(needed, orders.length, checked, fetchLeft));
    }
  }

  /**
   * The page's first take, and, for an index keyed by derived attributes on a stage that waits
   * for the reindex, its readiness marker read beside it (from memory once the container has seen
   * it). A marker the container knows to be missing refuses the page before any Query.
   */
  private async firstTake(
    plan: DynamoDbPagePlan,
    candidates: CandidateStream,
    pageSize: number,
    signal: AbortSignal | undefined,
  ): Promise<Taken> {
    const readiness = plan.needsReadiness ? this.readiness : undefined;
    const known = readiness ? readiness.known() : true;
    const [ready, first] =
      known === false
        ? [false]
        : await Promise.all([known ?? readiness!.isReady(signal), candidates.take(pageSize)]);
    if (!ready) throw ordersNotIndexed(plan.source);
    return first!;
  }
}

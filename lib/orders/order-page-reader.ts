/**
 * The port the v2 list needs from storage: one page of a filtered list, starting after a
 * position, and what reading it cost. lib/dynamodb/order-pages.ts implements it on the table and
 * its indexes.
 *
 * A page holds at most `pageSize` orders, in the filter's sort order (./order-filter.ts), each
 * matching the filter when it was read; it may be short, even empty, and still have a next page:
 * only a missing `next` means the end. Walking every page of a filter, an order that matches it
 * for the whole walk appears once, in order; one that starts or stops matching appears at most
 * once (positions only move forward, and each order stands at one position) — with the limits
 * the implementation states (eventually consistent indexes).
 */
import type { ListVersion, OrderStreamOptions } from './order-store.ts';
import type { Order } from './order.ts';
import type { OrderFilter, PagePosition } from './order-filter.ts';

/** Where a filter's pages come from, known before any page is read (OrderPageReader.plan). */
export interface PagePlan {
  /** The filter whose pages these are. */
  readonly filter: OrderFilter;
  /** The table, or the name of the index that serves the filter. */
  readonly source: string;
  /**
   * Whether its reads are strongly consistent (the table). A page read from an index (eventually
   * consistent) may lag a write for a moment: its entity tag waits until the list's last change
   * has settled (./page-tag.ts).
   */
  readonly consistent: boolean;
  /** How many partitions a page reads from. */
  readonly partitions: number;
}

/** One page of a plan's filter. */
export interface PageRequest<Plan extends PagePlan = PagePlan> {
  readonly plan: Plan;
  /** Start after this position; the first page when absent. */
  readonly start?: PagePosition;
  /** 1 to PAGE_SIZE_MAX (./list-query.ts). */
  readonly pageSize: number;
  /**
   * The list's version, read before the page, and when it was read: how far a page read from an
   * eventually consistent index may trust what the index holds (./page-tag.ts isSettled, and the
   * version's recent writes). Absent: the index is trusted for nothing it may hold stale.
   */
  readonly seen?: { readonly version: ListVersion; readonly at: number };
}

/** What one page cost storage. */
export interface PageCost {
  /** Items the storage evaluated for the page (DynamoDB's ScannedCount, summed). */
  readonly evaluated: number;
  /** Orders read by key to check them (BatchGetItem). */
  readonly fetched: number;
  readonly queries: number;
  readonly batchGets: number;
  /** Rounds of queries sent one after another. */
  readonly rounds: number;
}

export interface OrderPage<Plan extends PagePlan = PagePlan> {
  readonly orders: readonly Order[];
  /** Where the next page starts after; absent on the last page. */
  readonly next?: PagePosition;
  readonly plan: Plan;
  readonly cost: PageCost;
}

export interface OrderPageReader<Plan extends PagePlan = PagePlan> {
  /**
   * The plan of a filter's pages, without I/O. Throws a transient DependencyFailure (reason
   * `index-not-ready`) when the index it needs is not deployed.
   */
  plan(filter: OrderFilter): Plan;
  /**
   * One page of a plan, by `signal`'s deadline. Fails transient (`index-not-ready`) while the
   * index it needs is backfilling or its orders are not all indexed yet.
   */
  readPage(request: PageRequest<Plan>, options?: OrderStreamOptions): Promise<OrderPage<Plan>>;
}

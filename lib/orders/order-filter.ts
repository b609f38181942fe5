/**
 * The v2 list's filters, as the domain knows them: which orders match, in what order a filtered
 * list comes, and where a page ends (its position). No HTTP and no storage here: the query
 * parameters are read in ./list-query.ts, the pages on DynamoDB in lib/dynamodb/order-pages.ts.
 *
 * Filters combine with AND; several statuses with OR. An order matches a filter on a field only
 * when it has that field: an order without a petId matches no petId, one without a ship date (or
 * with one that is not an RFC 3339 date-time) no date range, one without `complete` neither
 * `complete=true` nor `complete=false`. An order stored without a status is pending.
 */
import { createHash } from 'node:crypto';
import { parseInstant } from './instant.ts';
import { compareIds, ORDER_STATUSES, type Order, type OrderStatus } from './order.ts';

/** Ship dates from `from` (inclusive) to `to` (exclusive), as instants (./instant.ts); at least one. */
export interface ShipDateRange {
  readonly from?: bigint;
  readonly to?: bigint;
}

export interface OrderFilter {
  /** In ORDER_STATUSES order, each once; absent: any status. */
  readonly statuses?: readonly OrderStatus[];
  readonly petId?: bigint;
  readonly shipDate?: ShipDateRange;
  readonly complete?: boolean;
}

/** How a filtered list is sorted: by id, or by ship date (then id) when a date range is given. */
export type OrderSortOrder = 'id' | 'shipDate';

export function sortOrderOf(filter: OrderFilter): OrderSortOrder {
  return filter.shipDate ? 'shipDate' : 'id';
}

/**
 * Where an order stands in a list's sort order: its id, and in ship-date order its ship date's
 * instant before it. A page ends at a position; the next page starts after it.
 */
export interface PagePosition {
  /** Present exactly in ship-date order. */
  readonly instant?: bigint;
  readonly id: bigint;
}

export function comparePositions(a: PagePosition, b: PagePosition): number {
  if (a.instant !== undefined && b.instant !== undefined && a.instant !== b.instant) {
    return a.instant < b.instant ? -1 : 1;
  }
  return compareIds(a.id, b.id);
}

/** The position of an order in a sort order; undefined in ship-date order for an order without a date. */
export function positionOf(order: Order, order_: OrderSortOrder): PagePosition | undefined {
  if (order_ === 'id') return { id: order.id };
  const instant = order.shipDate === undefined ? undefined : parseInstant(order.shipDate);
  return instant === undefined ? undefined : { instant, id: order.id };
}

/** Whether an order matches every filter given. */
export function orderMatches(filter: OrderFilter, order: Order): boolean {
  if (filter.statuses && !(order.status && filter.statuses.includes(order.status))) return false;
  if (filter.petId !== undefined && order.petId !== filter.petId) return false;
  if (filter.complete !== undefined && order.complete !== filter.complete) return false;
  if (filter.shipDate) {
    const instant = order.shipDate === undefined ? undefined : parseInstant(order.shipDate);
    if (instant === undefined) return false;
    const { from, to } = filter.shipDate;
    if (from !== undefined && instant < from) return false;
    if (to !== undefined && instant >= to) return false;
  }
  return true;
}

/** The statuses as a filter holds them: known ones, each once, in ORDER_STATUSES order. */
export function normalizedStatuses(statuses: Iterable<OrderStatus>): OrderStatus[] {
  const given = new Set(statuses);
  return ORDER_STATUSES.filter((status) => given.has(status));
}

/**
 * The canonical text of a v2 list's filter (format 1): equal filters, equal text. A page's
 * entity tag by version hashes it (./page-tag.ts), and page tokens of version 1 carry a
 * fingerprint of it (filterFingerprintV1, ./page-token.ts), so it must never change: a new form
 * is a new token version, and this one stays for the tokens already issued.
 */
export function canonicalFilterText(filter: OrderFilter): string {
  const text = (value: { toString(): string } | undefined) =>
    value === undefined ? '' : value.toString();
  return [
    `status=${(filter.statuses ?? []).join(',')}`,
    `petId=${text(filter.petId)}`,
    `from=${text(filter.shipDate?.from)}`,
    `to=${text(filter.shipDate?.to)}`,
    `complete=${text(filter.complete)}`,
  ].join('&');
}

/** 8 bytes that stand for a filter (format 1): equal filters, equal bytes. */
export function filterFingerprintV1(filter: OrderFilter): Buffer {
  return createHash('sha256')
    .update(`orders-filter-1\n${canonicalFilterText(filter)}`)
    .digest()
    .subarray(0, 8);
}

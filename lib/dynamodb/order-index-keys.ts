/**
 * The attributes an order item carries for the v2 list's indexes (tables.ts,
 * ORDER_INDEX_ATTRIBUTES), computed in this one place for every write of orders: a put
 * (orderToItem), a cancel and a ship (their new status), and the reindex command.
 *
 * - `s` = the effective status's initial and the order's shard (`p3`: pending, shard 3): an order
 *   stored without a status is pending, one that holds a cancel's trail is cancelled; spread over
 *   ORDER_SHARDS index partitions a status, as the table is, so that no partition takes every
 *   pending order.
 * - `t` = the ship date's instant (lib/orders/instant.ts), nanoseconds since the epoch: a Number,
 *   exact to 38 digits, ordered as the instants are. With the id it is the sort key of the date
 *   indexes (a multi-attribute key: (t, id)). An order whose ship date is absent or not an RFC
 *   3339 date-time has no `t` and is in no date index: no date range matches it.
 * - `u` = the order's shard, when it has a `t` and its stored status is not shipped (pending,
 *   absent or cancelled; a cancel through the API leaves the stored status, and so `u`, as they
 *   were): the sparse key of ordersUnshippedByDate, which a ship removes.
 */
import { parseInstant } from '../orders/instant.ts';
import { isOrderStatus, type OrderStatus } from '../orders/order.ts';
import { orderShard } from './tables.ts';

/**
 * The format of the derived attributes a readiness marker vouches for (./index-readiness.ts): 1,
 * `s`, `t` and `u` as computed here. A release that changes which are written or how bumps it: a
 * marker of another format no longer matches, and on a stage that waits for the marker the
 * indexes keyed by them wait for `orders reindex` again.
 */
export const DERIVED_ATTRIBUTES_FORMAT = 1;

/** The `s` of an order with this (effective) status in this shard: the status's initial, the shard. */
export function statusShard(status: OrderStatus, shard: number): string {
  return `${STATUS_INITIALS[status]}${shard}`;
}

const STATUS_INITIALS: Readonly<Record<OrderStatus, string>> = {
  pending: 'p',
  shipped: 's',
  cancelled: 'c',
};

/** The status an `s` value names, or undefined when it names none. */
export function statusOfShard(value: unknown): OrderStatus | undefined {
  if (typeof value !== 'string') return undefined;
  return (Object.keys(STATUS_INITIALS) as OrderStatus[]).find(
    (status) => STATUS_INITIALS[status] === value.charAt(0),
  );
}

/** What the derived attributes are computed from: the id, the status as stored, the ship date. */
export interface IndexedFields {
  readonly id: bigint;
  /** As stored: undefined (pending), a status, or anything else (no status index holds it). */
  readonly status?: unknown;
  readonly shipDate?: unknown;
  /** Whether the order holds a cancel's trail: then it is cancelled, whatever its `status`. */
  readonly cancelled?: boolean;
}

/**
 * The status an order holds, all told: cancelled with a trail, pending without a status;
 * undefined when its stored status is not one the service knows (and it holds no trail).
 */
export function effectiveStatus(
  order: Pick<IndexedFields, 'status' | 'cancelled'>,
): OrderStatus | undefined {
  if (order.cancelled) return 'cancelled';
  const status = order.status === undefined ? 'pending' : order.status;
  return isOrderStatus(status) ? status : undefined;
}

/**
 * The derived attributes of an order: `s` unless its stored status is not one the service knows;
 * `t` when its ship date is an RFC 3339 date-time; `u` with `t`, while its stored status is a
 * known one other than shipped. `shard`: the partition the order stands in (its id's, but in the
 * deploy check's partition: tables.ts).
 */
export function derivedIndexAttributes(
  order: IndexedFields,
  shard = orderShard(order.id),
): { s?: string; t?: bigint; u?: number } {
  const status = effectiveStatus(order);
  const instant = typeof order.shipDate === 'string' ? parseInstant(order.shipDate) : undefined;
  const stored = effectiveStatus({ status: order.status });
  return {
    ...(status !== undefined ? { s: statusShard(status, shard) } : {}),
    ...(instant !== undefined ? { t: instant } : {}),
    ...(instant !== undefined && stored !== undefined && stored !== 'shipped' ? { u: shard } : {}),
  };
}

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
 * And, while a stage still has the first release's indexes (./order-indexes.ts):
 * - `statusKey` = `<status>#<shard>`;
 * - `dateKey` = `<instant>#<id>`: the instant plus 10^20 in 21 digits, and the id plus 2^63 in
 *   20 digits. Fixed widths of digits, so the keys' byte order (how DynamoDB orders a string sort
 *   key) is the order of (instant, id).
 */
import { parseInstant } from '../orders/instant.ts';
import { INT64_MAX, INT64_MIN, isOrderStatus, type OrderStatus } from '../orders/order.ts';
import { orderShard } from './tables.ts';

/**
 * The format of the derived attributes a readiness marker vouches for:
 * - 1: `statusKey` and `dateKey`;
 * - 2: `s` and `t`;
 * - 3: `s`, `t` and `u` (this code).
 * A release that changes which are written or how bumps it: a marker of another format no longer
 * matches (./index-readiness.ts), and the indexes keyed by them wait for `orders reindex`.
 */
export const DERIVED_ATTRIBUTES_FORMAT = 3;

const INSTANT_OFFSET = 10n ** 20n;
const INSTANT_DIGITS = 21;
const ID_OFFSET = 2n ** 63n;
const ID_DIGITS = 20;
const SEPARATOR = '#';

/** An instant as fixed-width digits whose byte order is the instants' order. */
function encodeInstant(instant: bigint): string {
  const shifted = instant + INSTANT_OFFSET;
  if (shifted < 0n || shifted >= 10n ** BigInt(INSTANT_DIGITS)) {
    throw new RangeError(`instant ${instant} is outside what a date-time can write`);
  }
  return shifted.toString().padStart(INSTANT_DIGITS, '0');
}

/** An int64 as fixed-width digits whose byte order is the ids' order. */
function encodeId(id: bigint): string {
  if (id < INT64_MIN || id > INT64_MAX) throw new RangeError(`id ${id} is not an int64`);
  return (id + ID_OFFSET).toString().padStart(ID_DIGITS, '0');
}

/** The dateKey of an order shipping at `instant`. */
export function dateKey(instant: bigint, id: bigint): string {
  return `${encodeInstant(instant)}${SEPARATOR}${encodeId(id)}`;
}

/** The index partition of one status in one shard. */
function statusPartition(status: OrderStatus, shard: number): string {
  return `${status}${SEPARATOR}${shard}`;
}

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
 * known one other than shipped; and with `firstRelease`, the first release's
 * `statusKey` and `dateKey` likewise. `shard`: the partition the order stands in (its id's, but
 * in the deploy check's partition: tables.ts).
 */
export function derivedIndexAttributes(
  order: IndexedFields,
  firstRelease = false,
  shard = orderShard(order.id),
): { s?: string; t?: bigint; u?: number; statusKey?: string; dateKey?: string } {
  const status = effectiveStatus(order);
  const instant = typeof order.shipDate === 'string' ? parseInstant(order.shipDate) : undefined;
  const stored = effectiveStatus({ status: order.status });
  return {
    ...(status !== undefined ? { s: statusShard(status, shard) } : {}),
    ...(instant !== undefined ? { t: instant } : {}),
    ...(instant !== undefined && stored !== undefined && stored !== 'shipped' ? { u: shard } : {}),
    ...(firstRelease && status !== undefined ? { statusKey: statusPartition(status, shard) } : {}),
    ...(firstRelease && instant !== undefined ? { dateKey: dateKey(instant, order.id) } : {}),
  };
}

/**
 * An order as one item of the orders table: what a put writes (orderToItem), what a cancel or a
 * ship writes (departureUpdate), what an item says of its order (readOrderItem; its status all
 * told: itemStatus), the cancel's trail, and which items are orders.
 *
 * The status an item holds is in two places: `status` is what an import or a ship gave the order;
 * a cancel through the API records itself in its trail (tables.ts, CANCEL_TRAIL_ATTRIBUTES) and
 * leaves `status` as it was (a cancel of release 1.0.0 wrote `status` cancelled and no trail: the
 * same order, read the same way). So an order is cancelled when its item holds a trail, whatever its
 * `status`; else its `status`, pending when absent. Every reader of an item's status asks
 * itemStatus.
 */
import { ORDER_FIELDS, readOrderFields, type Order, type OrderField } from '../orders/order.ts';
import type { Cancellation, UnreadableOrder } from '../orders/order-store.ts';
import type { OrderStatus } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import { derivedIndexAttributes, effectiveStatus } from './order-index-keys.ts';
import { CANCEL_TRAIL_ATTRIBUTES, ORDER_INDEX_ATTRIBUTES, orderShard } from './tables.ts';
import { UpdateBuilder } from './update-builder.ts';

type Item = Record<string, unknown>;

/**
 * The item of an order as a put writes it: its key, its fields, and the attributes the indexes
 * are keyed by (`s`, `t`, `u`). A put replaces the whole item: a trail the order held is gone
 * with it.
 */
export function orderToItem(order: Order, shard: number = orderShard(order.id)): Item {
  return { shard, ...order, ...derivedIndexAttributes(order, shard) };
}

/** Whether an item holds a cancel's trail (its time, at least): its order is then cancelled. */
export function hasCancelTrail(item: Readonly<Item>): boolean {
  return item[CANCEL_TRAIL_ATTRIBUTES.at] !== undefined;
}

/**
 * The status of the order an item holds: cancelled with a trail, else its `status` (pending
 * when absent); undefined when that is not a status the service knows.
 */
export function itemStatus(item: Readonly<Item>): OrderStatus | undefined {
  return effectiveStatus({ status: item.status, cancelled: hasCancelTrail(item) });
}

/**
 * A stored item as an order, as far as it can be read: its status as itemStatus reads it; a
 * field whose value has the wrong type is left out and named in `unreadable` (a stored status
 * the service does not know, unless a trail makes the order cancelled). No order at all
 * (`order` undefined) when even the id is unreadable.
 */
export function readOrderItem(item: Item): { order?: Order; unreadable: OrderField[] } {
  const { fields, unreadable } = readOrderFields(item, numberText);
  if (fields.id === undefined) return { unreadable: ['id'] };
  const order = fields as { -readonly [F in keyof Order]: Order[F] };
  const status = itemStatus(item);
  if (status !== undefined) order.status = status;
  return { order, unreadable: status === undefined ? unreadable : unreadableBut(unreadable) };
}

/** `unreadable` without `status` (a trail gave the order its status). */
function unreadableBut(unreadable: OrderField[]): OrderField[] {
  return unreadable.includes('status') ? unreadable.filter((f) => f !== 'status') : unreadable;
}

/** What a reader that cannot stop to complain does with an item: the order, and the problem. */
export function readForList(
  item: Item,
  onUnreadable: ((problem: UnreadableOrder) => void) | undefined,
): Order | undefined {
  const { order, unreadable } = readOrderItem(item);
  if (unreadable.length > 0) {
    const id = numberText(item.id);
    onUnreadable?.({
      ...(id !== undefined ? { id } : {}),
      fields: unreadable,
      skipped: order === undefined,
    });
  }
  return order;
}

/**
 * What a list reads of an item: its key, the order's fields (ORDER_FIELDS) and the trail's time
 * (which makes the order cancelled; no list shows it), not the attributes the indexes are keyed
 * by (./order-index-keys.ts) nor the rest of the trail, which would add to what is read and
 * parsed (DynamoDB charges the whole item either way).
 */
export const LISTED_ATTRIBUTES = {
  projection: ['#fs', ...ORDER_FIELDS.map((_, i) => `#f${i}`), '#fc'].join(', '),
  names: {
    '#fs': 'shard',
    ...Object.fromEntries(ORDER_FIELDS.map((field, i) => [`#f${i}`, field])),
    '#fc': CANCEL_TRAIL_ATTRIBUTES.at,
  },
};

/**
 * What an item's trail records, each part that is stored and readable (none on an order no cancel
 * through the API cancelled, or one cancelled before the trail existed).
 */
export function readCancelTrail(item: Readonly<Item>): Partial<Cancellation> {
  const at = Number(numberText(item[CANCEL_TRAIL_ATTRIBUTES.at]));
  const { [CANCEL_TRAIL_ATTRIBUTES.by]: keyId, [CANCEL_TRAIL_ATTRIBUTES.request]: requestId } =
    item;
  return {
    ...(Number.isFinite(at) ? { at } : {}),
    ...(typeof keyId === 'string' ? { keyId } : {}),
    ...(typeof requestId === 'string' ? { requestId } : {}),
  };
}

/**
 * Whether an item of the orders table is an order: the list's version items and the indexes'
 * readiness marker stand in partitions no order uses (a negative `shard`).
 */
export function isOrderItem(item: Item): boolean {
  return Number(numberText(item.shard)) >= 0;
}

/** The attributes a write of an order's state names. */
type OrderAttribute =
  | 'id'
  | OrderField
  | keyof ReturnType<typeof derivedIndexAttributes>
  | (typeof CANCEL_TRAIL_ATTRIBUTES)[keyof typeof CANCEL_TRAIL_ATTRIBUTES];

/** Where an order goes when it leaves pending, and what the write records besides. */
export type Departure =
  | { readonly status: 'cancelled'; readonly cancellation: Cancellation }
  | { readonly status: 'shipped' };

/**
 * The conditional write of an order leaving pending. The condition: the order exists (an update
 * must never create one), holds no cancel's trail, and its status is pending or absent.
 * - A ship: `status` shipped, `complete` true, the new status's index key `s`, and no `u`
 *   (ordersUnshippedByDate's key).
 * - A cancel: its trail (when, which key, which request) and `s`, and not `status`: the indexes
 *   that hold `status` (all but ordersByStatus) are then not written (above).
 * No ship date changes, so `t` does not.
 */
export function departureUpdate(
  departure: Departure,
  id: bigint,
  shard: number,
): UpdateBuilder<OrderAttribute> {
  const b = new UpdateBuilder<OrderAttribute>();
  const status = b.name('status');
  b.condition(
    `attribute_exists(${b.name('id')}) AND attribute_not_exists(${b.name(CANCEL_TRAIL_ATTRIBUTES.at)}) AND (${status} = ${b.value('pending')} OR attribute_not_exists(${status}))`,
  );
  const cancelled = departure.status === 'cancelled';
  const derived = derivedIndexAttributes({ id, status: departure.status, cancelled }, shard);
  b.assign('s', derived.s);
  if (!cancelled) {
    b.assign('status', departure.status);
    b.assign('complete', true);
    // A shipped order leaves the index of those not shipped.
    b.remove(ORDER_INDEX_ATTRIBUTES.unshipped);
    return b;
  }
  const { cancellation } = departure;
  b.assign(CANCEL_TRAIL_ATTRIBUTES.at, cancellation.at);
  b.assign(CANCEL_TRAIL_ATTRIBUTES.by, cancellation.keyId);
  b.assign(CANCEL_TRAIL_ATTRIBUTES.request, cancellation.requestId);
  return b;
}

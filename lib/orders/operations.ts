/** The two operations of the API, as domain functions over an OrderStore. */
import { ApiError } from '../api/errors.ts';
import { parseInt64, type Order } from './order.ts';
import type { OrderStore } from './order-store.ts';

/** The orderId path parameter as an int64, or 400 INVALID_ORDER_ID. */
export function parseOrderId(raw: string | undefined): bigint {
  const id = raw === undefined ? undefined : parseInt64(raw);
  if (id === undefined) {
    const shown = raw === undefined ? '' : ` "${raw.length > 40 ? `${raw.slice(0, 40)}…` : raw}"`;
    throw new ApiError('INVALID_ORDER_ID', {
      message: `The order id${shown} is not a base-10 integer in the int64 range.`,
    });
  }
  return id;
}

export async function listOrders(store: OrderStore): Promise<AsyncIterable<Order>> {
  return store.openOrderStream();
}

/** Cancels a pending order; a cancelled one stays cancelled (DELETE is idempotent). */
export async function cancelOrder(store: OrderStore, id: bigint): Promise<void> {
  const outcome = await store.cancel(id);
  switch (outcome) {
    case 'cancelled':
    case 'already-cancelled':
      return;
    case 'shipped':
      throw new ApiError('ORDER_ALREADY_SHIPPED', {
        message: `Order ${id} has already shipped and cannot be cancelled.`,
      });
    case 'not-found':
      throw new ApiError('ORDER_NOT_FOUND', { message: `Order ${id} was not found.` });
  }
}

/** The operations on orders — the API's two and the operator's ship — over an OrderStore. */
import { ApiError } from '../api/errors.ts';
import { quotableInput } from '../keys/api-key.ts';
import { parseInt64, type Order } from './order.ts';
import type { OrderStore } from './order-store.ts';

/**
 * An order id as a caller or an operator gives it (a path parameter, a command-line argument):
 * the int64 (parseInt64), or what an error message may quote of the text — at most 40
 * characters, an API key cut to its hint — which is undefined when there was no text at all.
 */
export function readOrderId(
  raw: string | undefined,
): { readonly id: bigint } | { readonly id: undefined; readonly shown: string | undefined } {
  const id = raw === undefined ? undefined : parseInt64(raw);
  if (id !== undefined) return { id };
  return { id, shown: raw === undefined ? undefined : quotableInput(raw) };
}

/** The orderId path parameter as an int64, or 400 INVALID_ORDER_ID. */
export function parseOrderId(raw: string | undefined): bigint {
  const read = readOrderId(raw);
  if (read.id === undefined) {
    const shown = read.shown === undefined ? '' : ` "${read.shown}"`;
    throw new ApiError('INVALID_ORDER_ID', {
      message: `The order id${shown} is not a base-10 integer in the int64 range.`,
    });
  }
  return read.id;
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

/** Why an operator's change to an order was refused; nothing was changed. */
export class OrderRefused extends Error {
  readonly reason: 'cancelled' | 'not-found';
  constructor(reason: 'cancelled' | 'not-found', message: string) {
    super(message);
    this.name = 'OrderRefused';
    this.reason = reason;
  }
}

/**
 * Ships a pending order: status → shipped and complete → true, in one conditional write, so a
 * ship racing a cancel can never ship a cancelled order. Shipping a shipped order changes
 * nothing and is not an error; a cancelled or unknown order is refused.
 */
export async function shipOrder(
  store: OrderStore,
  id: bigint,
): Promise<'shipped' | 'already-shipped'> {
  const outcome = await store.ship(id);
  switch (outcome) {
    case 'shipped':
    case 'already-shipped':
      return outcome;
    case 'cancelled':
      throw new OrderRefused('cancelled', `order ${id} is cancelled and cannot be shipped`);
    case 'not-found':
      throw new OrderRefused('not-found', `order ${id} was not found`);
  }
}

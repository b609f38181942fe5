/**
 * The operations on orders that have rules of their own — the cancel and the operator's ship —
 * over an OrderStore, and the order id as callers give it. They throw domain errors (below, and
 * DependencyFailure from the store); the edge decides what a client or an operator is told.
 */
import type { CallOptions } from '../failures.ts';
import { quotableInput } from '../keys/api-key.ts';
import { parseInt64 } from './order.ts';
import type { Cancellation, OrderStore } from './order-store.ts';

/** The text given as an order id is not an int64. `shown` is what a message may quote of it. */
export class InvalidOrderId extends Error {
  readonly shown: string | undefined;
  constructor(shown: string | undefined) {
    super(
      `The order id${shown === undefined ? '' : ` "${shown}"`} is not a base-10 integer in the int64 range.`,
    );
    this.name = 'InvalidOrderId';
    this.shown = shown;
  }
}

export class OrderNotFound extends Error {
  readonly id: bigint;
  constructor(id: bigint) {
    super(`Order ${id} was not found.`);
    this.name = 'OrderNotFound';
    this.id = id;
  }
}

export class OrderAlreadyShipped extends Error {
  readonly id: bigint;
  constructor(id: bigint) {
    super(`Order ${id} has already shipped and cannot be cancelled.`);
    this.name = 'OrderAlreadyShipped';
    this.id = id;
  }
}

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

/** The orderId path parameter as an int64, or InvalidOrderId. */
export function parseOrderId(raw: string | undefined): bigint {
  const read = readOrderId(raw);
  if (read.id === undefined) throw new InvalidOrderId(read.shown);
  return read.id;
}

/**
 * Cancels a pending order, recording who asked, when and in which request (`cancellation`); a
 * cancelled one stays cancelled, with the trail of the cancel that cancelled it (DELETE is
 * idempotent).
 */
export async function cancelOrder(
  store: OrderStore,
  id: bigint,
  cancellation: Cancellation,
  options: CallOptions = {},
): Promise<void> {
  const outcome = await store.cancel(id, cancellation, options);
  switch (outcome) {
    case 'cancelled':
    case 'already-cancelled':
      return;
    case 'shipped':
      throw new OrderAlreadyShipped(id);
    case 'not-found':
      throw new OrderNotFound(id);
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

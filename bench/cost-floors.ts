/**
 * The floor of each kind of request the cost benchmark measures: the fewest request units any
 * design that keeps the contract (docs in openapi/, and the ceilings the service promises) could
 * spend on it, with the argument. A floor is a lower bound, not a plan: where it rests on a
 * design choice the derivation says which. The numbers it rests on:
 *  - AWS: a strongly consistent read costs 1 read unit per 4 KB of an item (of a Query's items
 *    together), an eventually consistent one half that; a write 1 write unit per KB; an index
 *    entry whose key changes costs 2 (a delete and a put); one partition, and one item, takes at
 *    most 1,000 write units a second.
 *  - The service: every request of an identified caller is counted by one atomic write (the rate
 *    limiter, or a conditional request's free allowance); a 304 is never wrong, also while a
 *    write is in flight (openapi.yaml, "Conditional requests"); the store takes as many cancels
 *    a second as the production stage lets requests through (lib/deployment.ts), 2,000.
 */
import { STAGE_THROTTLES } from '../lib/deployment.ts';
import { itemSize, type WireValue } from './item-size.ts';

/** What one partition (and one item) of DynamoDB takes, in write units a second. */
const PARTITION_WRITES_PER_SECOND = 1_000;

/** Cancels a second the store must take: every request the production stage lets through. */
export const CANCELS_PER_SECOND = STAGE_THROTTLES.production.rateLimit;

/**
 * Version items a list's tag needs at least: each cancel marks and releases one (2 write units),
 * and each item takes 1,000 a second.
 */
export const VERSION_ITEMS = Math.ceil((2 * CANCELS_PER_SECOND) / PARTITION_WRITES_PER_SECOND);

/** Partitions an index (or the table) that each cancel writes needs at least. */
export const WRITTEN_PARTITIONS = Math.ceil(CANCELS_PER_SECOND / PARTITION_WRITES_PER_SECOND);

const READ_BLOCK = 4096;

/** A number as the derivations write it (1,000). */
const n = (value: number) => value.toLocaleString('en-US');

export interface Floor {
  readonly read: number;
  readonly write: number;
  readonly derivation: string;
}

/** The order's fields as the API shows them (exact digits of its int64s). */
export interface OrderFields {
  readonly id: string;
  readonly petId?: string;
  readonly quantity?: string;
  readonly shipDate?: string;
  readonly complete?: boolean;
  readonly status?: string;
}

/**
 * The fewest bytes an order takes as an item by DynamoDB's size rules: its six fields, each under
 * a one-byte name, the numbers as numbers and the strings as the contract returns them.
 */
export function minimalOrderBytes(order: OrderFields): number {
  const item: Record<string, WireValue> = { i: { N: order.id } };
  if (order.petId !== undefined) item.p = { N: order.petId };
  if (order.quantity !== undefined) item.q = { N: order.quantity };
  if (order.shipDate !== undefined) item.d = { S: order.shipDate };
  if (order.complete !== undefined) item.c = { BOOL: order.complete };
  if (order.status !== undefined) item.s = { S: order.status };
  return itemSize(item);
}

const COUNT = '1 W: the request counted, one atomic write of its key’s counter';
const VERSION = `${VERSION_ITEMS} R: the list’s version read strongly consistent, ${VERSION_ITEMS} items of under 4 KB in partitions of their own (each cancel marks and releases one, 2 W, and an item takes ${n(PARTITION_WRITES_PER_SECOND)} W/s: ⌈2 × ${n(CANCELS_PER_SECOND)} cancels/s ÷ ${n(PARTITION_WRITES_PER_SECOND)}⌉; under one partition key a Query could read them for 1 R, but that partition would take ${n(PARTITION_WRITES_PER_SECOND)} W/s for all of them)`;

export const FLOORS = {
  conditionalHit: (): Floor => ({
    read: VERSION_ITEMS,
    write: 1,
    derivation: `${COUNT} + ${VERSION}`,
  }),

  /**
   * A page of orders (their minimal sizes) from `partitions` partitions, read eventually
   * consistent in a store unchanged for the settle time (or changed only outside the page, when
   * the version items name the orders changed within it).
   */
  page: (orderBytes: readonly number[], partitions: number, why: string): Floor => {
    const bytes = orderBytes.reduce((sum, n) => sum + n, 0);
    const data = 0.5 * Math.max(partitions, Math.ceil(bytes / READ_BLOCK));
    return {
      read: VERSION_ITEMS + data,
      write: 1,
      derivation:
        `${COUNT} + ${VERSION_ITEMS} R: the version, as a 304’s (the page’s tag) + ${data} R: ` +
        `its ${orderBytes.length} orders (at least ${n(bytes)} B: six fields under one-byte names) ` +
        `read eventually consistent, 0.5 R per 4 KB a Query, from ${partitions} partition${partitions === 1 ? '' : 's'} (${why}). ` +
        'The same while the store changes if the version items also name the orders changed ' +
        'within the settle time (those on the page re-read by key, 1 R each: none here); ' +
        'without such a list, an index page re-reads its candidates by key, 1 R an order',
    };
  },

  /** The whole list: every order once, in a store unchanged for the settle time. */
  list: (totalOrderBytes: number, orders: number): Floor => {
    const eventually = 0.5 * Math.ceil(totalOrderBytes / READ_BLOCK);
    return {
      read: VERSION_ITEMS + eventually,
      write: 1,
      derivation:
        `${COUNT} + ${VERSION_ITEMS} R: the version (the list’s tag) + ${eventually} R: ${n(orders)} orders, ` +
        `at least ${n(totalOrderBytes)} B (six fields under one-byte names), read eventually consistent ` +
        `in a store unchanged for the settle time (0.5 R per 4 KB); strongly consistent, as a ` +
        `tag needs while the store changes, ${2 * eventually} R`,
    };
  },

  cancel: (): Floor => ({
    read: 0,
    write: 6,
    derivation:
      `${COUNT} + 1 W: the order’s conditional write (under 1 KB) + 2 W: an index serving ` +
      '`status` pages moves the order from pending to cancelled (a delete and a put) + 2 W: ' +
      'the version’s mark and release (no 304 while the write is in flight). No read: a failed ' +
      'condition returns the old item. Reading first, so that a cancel that changes nothing ' +
      'marks nothing, costs 1 R more (7); an index that projects the status (for pages read ' +
      'from it alone) costs 1 W more for each',
  }),

  noopCancel: (): Floor => ({
    read: 1,
    write: 1,
    derivation: `${COUNT} + 1 R: the order read strongly consistent (a 404 or a 409 must see every acknowledged write)`,
  }),

  malformed: (): Floor => ({
    read: 0,
    write: 1,
    derivation: `${COUNT} (a 400 is counted like any answer of a function)`,
  }),

  refused: (): Floor => ({
    read: 0,
    write: 1,
    derivation:
      '1 W: the refusal recorded on the key’s counter (a refusal that did not wait counts ' +
      'towards the ban, and the next refusal is judged by the wait this one told)',
  }),

  banned: (): Floor => ({
    read: 0,
    write: 0,
    derivation:
      '0: the container that saw the ban knows when it ends (today’s check of an operator’s ' +
      'unban, once a second a container, aside)',
  }),

  authorizer: (): Floor => ({
    read: 0.5,
    write: 0,
    derivation:
      '0.5 R: the key’s record (under 4 KB) read eventually consistent; a key not found read ' +
      'again strongly consistent, so that a new key works at once; a revoked key stops within ' +
      'the cache TTL either way',
  }),
};

/** Why a page's source has the partitions it has, at least. */
export const PARTITIONS = {
  written: {
    count: WRITTEN_PARTITIONS,
    why: `each cancel writes its order’s partition of it, at ${n(PARTITION_WRITES_PER_SECOND)} W/s a partition: ⌈${n(CANCELS_PER_SECOND)} ÷ ${n(PARTITION_WRITES_PER_SECOND)}⌉`,
  },
  pet: {
    count: 1,
    why: `a pet’s partition takes only its own orders’ writes, under ${n(PARTITION_WRITES_PER_SECOND)} W/s`,
  },
} as const;

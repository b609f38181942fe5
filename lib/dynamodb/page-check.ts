/**
 * How a page's candidates become its orders: the one step of a page's assembly
 * (./order-pages.ts) that decides, candidate by candidate, whether it is listed, and as what.
 * An order is listed when it matches every filter and stands where its partition put it (an
 * order whose ship date changed since would stand elsewhere in the order).
 *
 * - An index's candidates are keys: each is read by key, strongly consistent (BatchGetItem, 100
 *   keys a call, the calls at once; each order once, also when two partitions gave it), and the
 *   filters and its position are checked on the fresh item. So a page never lists an order that
 *   no longer matches, however far the index lags.
 * - The table's candidates are its own items, read strongly consistent with `complete` as a
 *   FilterExpression: they are checked as read, with nothing more to fetch.
 *
 * Another way to check (an index that carries the orders' fields, trusted while the store is
 * settled) is another CandidateCheck: nothing else of the page's assembly changes with it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { comparePositions, orderMatches, positionOf } from '../orders/order-filter.ts';
import type { OrderStreamOptions } from '../orders/order-store.ts';
import type { Order } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import { GET_BATCH, getInBatches } from './batch-write.ts';
import type { Candidate } from './candidate-stream.ts';
import { readForList } from './orders-table.ts';
import { PAGES_DEPENDENCY } from './page-failures.ts';
import type { DynamoDbPagePlan } from './page-plan.ts';
import { orderShard } from './tables.ts';

type Item = Record<string, unknown>;

/** What checking some candidates cost. */
export interface CheckCost {
  /** Orders read by key. */
  readonly fetched: number;
  readonly batchGets: number;
}

export const NOTHING_CHECKED: CheckCost = { fetched: 0, batchGets: 0 };

export interface Checked {
  /** Each candidate's order when it is listed, else undefined: one per candidate, in order. */
  readonly orders: readonly (Order | undefined)[];
  readonly cost: CheckCost;
}

export type CandidateCheck = (candidates: readonly Candidate[]) => Promise<Checked>;

/** Attempts of the page's BatchGetItem while keys come back unprocessed, and the waits between. */
const BATCH_GET_ATTEMPTS = 6;
const BATCH_GET_BACKOFF_MS = { base: 10, max: 500 } as const;

/** The order of a candidate if its item matches every filter and stands where it was found. */
function listed(
  plan: DynamoDbPagePlan,
  candidate: Candidate,
  item: Item | undefined,
  options: OrderStreamOptions,
): Order | undefined {
  if (!item) return undefined;
  const order = readForList(item, options.onUnreadable);
  if (!order || !orderMatches(plan.filter, order)) return undefined;
  const position = positionOf(order, plan.order);
  if (!position || comparePositions(position, candidate.position) !== 0) return undefined;
  return order;
}

/** The table's candidates, checked as read (whole items, strongly consistent). */
export function checkAsRead(plan: DynamoDbPagePlan, options: OrderStreamOptions): CandidateCheck {
  return (candidates) =>
    Promise.resolve({
      orders: candidates.map((c) => listed(plan, c, c.item, options)),
      cost: NOTHING_CHECKED,
    });
}

/** An index's candidates, read by key (strongly consistent) and checked on the fresh items. */
export function fetchAndRecheck(
  client: DynamoDBDocumentClient,
  tableName: string,
  plan: DynamoDbPagePlan,
  options: OrderStreamOptions,
): CandidateCheck {
  return async (candidates) => {
    if (candidates.length === 0) return { orders: [], cost: NOTHING_CHECKED };
    // One key an order (BatchGetItem refuses a repeated key): an order can be a candidate at two
    // positions, its ship date changed between two partitions' Queries.
    const ids = new Set(candidates.map((c) => c.position.id));
    const keys = [...ids].map((id) => ({ shard: orderShard(id), id }));
    let batchGets = 0;
    const items = await getInBatches(client, tableName, keys, {
      dependency: PAGES_DEPENDENCY,
      concurrency: Math.ceil(keys.length / GET_BATCH),
      maxAttempts: BATCH_GET_ATTEMPTS,
      backoffMs: BATCH_GET_BACKOFF_MS,
      onCall: () => void batchGets++,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const found = new Map(items.map((item) => [numberText(item.id) ?? '', item]));
    return {
      orders: candidates.map((c) => listed(plan, c, found.get(c.position.id.toString()), options)),
      cost: { fetched: candidates.length, batchGets },
    };
  };
}

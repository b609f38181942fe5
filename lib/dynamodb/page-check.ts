/**
 * How a page's candidates become its orders: the one step of a page's assembly
 * (./order-pages.ts) that decides, candidate by candidate, whether it is listed, and as what.
 * An order is listed when it matches every filter and stands where its partition put it (an
 * order whose ship date changed since would stand elsewhere in the order).
 *
 * - An index's candidates carry the order's fields (./tables.ts): each is listed as the index
 *   holds it, but for those it may hold as they no longer are, which are read again by key
 *   (BatchGetItem, 100 keys a call, the calls at once; each order once, also when two partitions
 *   gave it) and checked on the fresh item:
 *   - an order the index holds as pending (or with no status), outside the status index: a cancel
 *     leaves `status` alone and records itself in a trail the index does not hold, so it may be
 *     cancelled (a few: the orders still pending);
 *   - while the store is not settled (lib/orders/page-tag.ts), the orders written less than
 *     INDEX_SETTLE_MS ago or being written (the list version's `recentWrites`; every candidate
 *     after a write of many orders): the index may not show their last write yet.
 *   In a settled store the few are read eventually consistent (its last write is older than the
 *   settle time, the assumption the page tag already makes), otherwise strongly consistent. So a
 *   page never lists an order that no longer matches, as long as an index reflects a write
 *   within the settle time.
 * - The table's candidates are its own items, read strongly consistent with `complete` as a
 *   FilterExpression: they are checked as read, with nothing more to fetch.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { comparePositions, orderMatches, positionOf } from '../orders/order-filter.ts';
import type { OrderStreamOptions, RecentWrites } from '../orders/order-store.ts';
import type { Order } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import { GET_BATCH, getInBatches } from './batch-write.ts';
import type { Candidate } from './candidate-stream.ts';
import { statusOfShard } from './order-index-keys.ts';
import { readForList } from './order-item.ts';
import { PAGES_DEPENDENCY } from './page-failures.ts';
import type { DynamoDbPagePlan } from './page-plan.ts';
import { ORDER_INDEX_ATTRIBUTES, orderShard } from './tables.ts';

type Item = Record<string, unknown>;

/** What checking some candidates cost. */
export interface CheckCost {
  /** Orders read by key. */
  readonly fetched: number;
  readonly batchGets: number;
}

export const NOTHING_CHECKED: CheckCost = { fetched: 0, batchGets: 0 };

/** What a check found of some candidates: which are listed, as what, and what it cost. */
export interface CheckedCandidates {
  /** Each candidate's order when it is listed, else undefined: one per candidate, in order. */
  readonly orders: readonly (Order | undefined)[];
  readonly cost: CheckCost;
}

export type CandidateCheck = (candidates: readonly Candidate[]) => Promise<CheckedCandidates>;

/** What of a page's plan a check reads: the filter, its order, and what the source's items hold. */
export type CheckPlan = Pick<DynamoDbPagePlan, 'filter' | 'order' | 'items' | 'statusInKey'>;

/** What the list's version says of the index's candidates (lib/orders/page-tag.ts isSettled). */
export interface IndexTrust {
  /** The store's last change is older than the settle time, and no write is in flight. */
  readonly settled: boolean;
  /** The orders whose entries may lag (none when settled). */
  readonly recentWrites: RecentWrites;
}

/**
 * How a plan's candidates become a page's orders: the table's checked as read; an index's listed
 * as it holds them, but for those it may hold as they no longer are by what the list's version
 * lets it be trusted for (`trust`), read by key and checked on the fresh items.
 */
export function candidateCheck(
  client: DynamoDBDocumentClient,
  tableName: string,
  plan: CheckPlan,
  trust: IndexTrust,
  options: OrderStreamOptions,
): CandidateCheck {
  if (plan.items === 'table') return checkAsRead(plan, options);
  return checkIndexItems(client, tableName, plan, trust, options);
}

/** Attempts of the page's BatchGetItem while keys come back unprocessed, and the waits between. */
const BATCH_GET_ATTEMPTS = 6;
const BATCH_GET_BACKOFF_MS = { base: 10, max: 500 } as const;

/** The order of a candidate if its item matches every filter and stands where it was found. */
function listed(
  plan: CheckPlan,
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
function checkAsRead(plan: CheckPlan, options: OrderStreamOptions): CandidateCheck {
  return (candidates) =>
    Promise.resolve({
      orders: candidates.map((c) => listed(plan, c, c.item, options)),
      cost: NOTHING_CHECKED,
    });
}

/**
 * The items of some orders read by key (BatchGetItem, 100 keys a call, at once; each order once:
 * an order can be a candidate at two positions, its ship date changed between two partitions'
 * Queries, and BatchGetItem refuses a repeated key), by id.
 */
async function readByKey(
  client: DynamoDBDocumentClient,
  tableName: string,
  ids: ReadonlySet<bigint>,
  consistent: boolean,
  signal: AbortSignal | undefined,
): Promise<{ items: Map<string, Item>; batchGets: number }> {
  if (ids.size === 0) return { items: new Map(), batchGets: 0 };
  const keys = [...ids].map((id) => ({ shard: orderShard(id), id }));
  let batchGets = 0;
  const items = await getInBatches(client, tableName, keys, {
    dependency: PAGES_DEPENDENCY,
    concurrency: Math.ceil(keys.length / GET_BATCH),
    maxAttempts: BATCH_GET_ATTEMPTS,
    backoffMs: BATCH_GET_BACKOFF_MS,
    consistent,
    onCall: () => void batchGets++,
    ...(signal ? { signal } : {}),
  });
  return { items: new Map(items.map((item) => [numberText(item.id) ?? '', item])), batchGets };
}

/**
 * An index item as the order it holds: the status its key says (ordersByStatus), else the one it
 * holds (none: pending).
 */
function indexedOrder(plan: CheckPlan, item: Item, options: OrderStreamOptions): Order | undefined {
  const order = readForList(item, options.onUnreadable);
  if (!order || !plan.statusInKey) return order;
  const status = statusOfShard(item[ORDER_INDEX_ATTRIBUTES.status]);
  return status ? { ...order, status } : undefined;
}

/**
 * Whether the index may hold a candidate as it no longer is: as pending outside the status index
 * (a cancel since leaves it so), or written too recently for the index to show it.
 */
function mayHaveChanged(plan: CheckPlan, candidate: Candidate, trust: IndexTrust): boolean {
  if (!plan.statusInKey) {
    const status = candidate.item.status;
    if (status === undefined || status === 'pending') return true;
  }
  if (trust.settled) return false;
  return trust.recentWrites === 'all' || trust.recentWrites.has(candidate.position.id.toString());
}

/**
 * An index's candidates that carry the order's fields: listed as the index holds them, but for
 * those it may hold as they no longer are, read by key (eventually consistent in a settled store,
 * else strongly) and checked on the fresh items.
 */
function checkIndexItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  plan: CheckPlan,
  trust: IndexTrust,
  options: OrderStreamOptions,
): CandidateCheck {
  return async (candidates) => {
    const again = candidates.filter((c) => mayHaveChanged(plan, c, trust));
    const ids = new Set(again.map((c) => c.position.id));
    const fresh = await readByKey(client, tableName, ids, !trust.settled, options.signal);
    const readAgain = new Set(again);
    return {
      orders: candidates.map((c) =>
        readAgain.has(c)
          ? listed(plan, c, fresh.items.get(c.position.id.toString()), options)
          : listedAsHeld(plan, c, options),
      ),
      cost: { fetched: again.length, batchGets: fresh.batchGets },
    };
  };
}

/** The order of a candidate as the index holds it, if it matches every filter. */
function listedAsHeld(
  plan: CheckPlan,
  candidate: Candidate,
  options: OrderStreamOptions,
): Order | undefined {
  const order = indexedOrder(plan, candidate.item, options);
  return order && orderMatches(plan.filter, order) ? order : undefined;
}

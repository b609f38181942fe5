/**
 * The plan of a filter's pages, without I/O: which source serves the filter and which partitions
 * a page reads, the key condition of each partition's Query, and how much a page may ask for
 * (each round's Limits, the page's read budget). The page reader (./order-pages.ts) follows it.
 *
 * Sources (tables.ts has the indexes; all KEYS_ONLY):
 * - petId (+ a date range): byPet (byPetDate), one partition; status and complete re-checked;
 * - status and/or a date range: byStatus (byStatusDate), one partition per status and shard
 *   (8 per status; every status when only a date range is given);
 * - nothing, or complete alone: the table, its 8 shards by id, strongly consistent, `complete`
 *   as a FilterExpression (it evaluates the orders that do not match too: the costly filter).
 * In id order, or in (ship date, id) order when a date range is given; a date range is one key
 * condition per partition (./order-index-keys.ts).
 *
 * How much: a page of N from k partitions asks each for 2N/k + 1 in its first round, then each
 * partition behind for its share of what the page still misses (readOnLimit); the Limits of a
 * round share out what is left of the page's budget of evaluated items (roundLimits). They follow
 * from the request and what the page has read: where a page ends depends on the store and the
 * request only. Why these and not tuned ones: bench/README.md (How a page's Limits are chosen).
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  sortOrderOf,
  type OrderFilter,
  type OrderSortOrder,
  type PagePosition,
} from '../orders/order-filter.ts';
import type { PagePlan } from '../orders/order-pages.ts';
import { ORDER_STATUSES } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import {
  dateKey,
  dateKeyAfter,
  dateKeyBound,
  readDateKey,
  statusPartition,
} from './order-index-keys.ts';
import { LISTED_ATTRIBUTES } from './orders-table.ts';
import { malformedKey } from './page-failures.ts';
import { ORDER_INDEX_ATTRIBUTES, ORDER_SHARDS, type OrderIndexName } from './tables.ts';

export type PageSource = 'table' | OrderIndexName;
/** A partition key's value: a status and shard, a pet, a shard of the table. */
export type PartitionValue = string | number | bigint;

/** A plan as the reader uses it: where each partition is and how its keys are named. */
export interface DynamoDbPagePlan extends PagePlan {
  readonly source: PageSource;
  readonly order: OrderSortOrder;
  /** The partition key's attribute and its value in each partition read (`partitions` of them). */
  readonly partitionKey: string;
  readonly partitionValues: readonly PartitionValue[];
  readonly sortKey: 'id' | 'dateKey';
  /** Whether the index is keyed by derived attributes (needs the readiness marker). */
  readonly needsReadiness: boolean;
}

/** What one page may read before it is served short (PAGE_READ_BUDGET). */
export interface PageReadBudget {
  /** Rounds of queries, one after another. */
  readonly rounds: number;
  /** Keys or items evaluated by the queries: no round asks for more than what is left. */
  readonly evaluated: number;
  /** Orders read by key. */
  readonly fetched: number;
}

/**
 * A page stops reading after this many rounds of queries, keys or items evaluated, or orders read
 * by key, and is served short, ending where it has read to: a filter no key narrows (complete on
 * the table; status or complete with a pet) over a store where few orders match costs each page
 * at most this much (about 10,000 × 150 B strongly consistent, 370 RCU, for the table; 2,500 RCU
 * of items read by key).
 */
export const PAGE_READ_BUDGET: PageReadBudget = { rounds: 10, evaluated: 10_000, fetched: 2_500 };

/** The most items one Query of a page asks for. */
export const MAX_QUERY_LIMIT = 1_000;
/** How much more than its share of what a page still misses a partition reads on by. */
export const READ_ON_MARGIN = 1.5;
/** How much more than the candidates a re-checked page still needs (by its match rate) it reads. */
export const RECHECK_MARGIN = 1.25;

const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);

/** The plan of a filter's pages, whatever is deployed (DynamoDbOrderPages.plan checks that). */
export function planPages(filter: OrderFilter): DynamoDbPagePlan {
  const order = sortOrderOf(filter);
  const dated = order === 'shipDate';
  const sortKey = dated ? ORDER_INDEX_ATTRIBUTES.dateKey : 'id';
  const plan = (
    source: PageSource,
    partitionKey: string,
    partitionValues: readonly PartitionValue[],
    needsReadiness: boolean,
  ): DynamoDbPagePlan => ({
    filter,
    source,
    consistent: source === 'table',
    order,
    partitions: partitionValues.length,
    partitionKey,
    partitionValues,
    sortKey,
    needsReadiness,
  });
  if (filter.petId !== undefined) {
    return plan(dated ? 'byPetDate' : 'byPet', 'petId', [filter.petId], dated);
  }
  if (filter.statuses || dated) {
    const statuses = filter.statuses ?? ORDER_STATUSES;
    const values = statuses.flatMap((status) => shards.map((s) => statusPartition(status, s)));
    return plan(
      dated ? 'byStatusDate' : 'byStatus',
      ORDER_INDEX_ATTRIBUTES.statusKey,
      values,
      true,
    );
  }
  return plan('table', 'shard', shards, false);
}

type Range = { condition: string; values: Record<string, unknown> } | 'empty';

/**
 * The key condition (and its values) of one partition's range: after `start` (exclusive), in the
 * filter's date range, up to `end` (inclusive) when given; 'empty' when no key can be in it.
 */
function sortKeyRange(
  plan: DynamoDbPagePlan,
  start: PagePosition | undefined,
  end: PagePosition | undefined,
): Range {
  if (plan.order === 'id') {
    if (start && end) {
      if (start.id >= end.id) return 'empty';
      return {
        condition: ' AND #sk BETWEEN :lo AND :hi',
        values: { ':lo': start.id + 1n, ':hi': end.id },
      };
    }
    if (start) return { condition: ' AND #sk > :lo', values: { ':lo': start.id } };
    if (end) return { condition: ' AND #sk <= :hi', values: { ':hi': end.id } };
    return { condition: '', values: {} };
  }
  const { from, to } = plan.filter.shipDate ?? {};
  const lows = [
    ...(from !== undefined ? [dateKeyBound(from)] : []),
    ...(start ? [dateKeyAfter(start.instant!, start.id)] : []),
  ];
  const low = lows.length > 0 ? lows.reduce((a, b) => (a > b ? a : b)) : undefined;
  // Upper bounds are inclusive (BETWEEN, <=): `to`'s bare prefix sorts before every key of that
  // instant (excluded), the end's own key is itself (included).
  const highs = [
    ...(to !== undefined ? [dateKeyBound(to)] : []),
    ...(end ? [dateKey(end.instant!, end.id)] : []),
  ];
  const high = highs.length > 0 ? highs.reduce((a, b) => (a < b ? a : b)) : undefined;
  if (low !== undefined && high !== undefined) {
    if (low > high) return 'empty';
    return { condition: ' AND #sk BETWEEN :lo AND :hi', values: { ':lo': low, ':hi': high } };
  }
  if (low !== undefined) return { condition: ' AND #sk >= :lo', values: { ':lo': low } };
  if (high !== undefined) return { condition: ' AND #sk <= :hi', values: { ':hi': high } };
  return { condition: '', values: {} };
}

/**
 * The Query of one partition of a plan, over its range after `start` (and up to `end`, for a
 * benchmark's floor), without its Limit and ExclusiveStartKey; undefined when the range is empty.
 */
export function partitionQuery(
  tableName: string,
  plan: DynamoDbPagePlan,
  partition: PartitionValue,
  start: PagePosition | undefined,
  end?: PagePosition,
): QueryCommandInput | undefined {
  const range = sortKeyRange(plan, start, end);
  if (range === 'empty') return undefined;
  const table = plan.source === 'table';
  const { complete } = plan.filter;
  const filtered = table && complete !== undefined;
  return {
    TableName: tableName,
    ...(table
      ? { ConsistentRead: true, ProjectionExpression: LISTED_ATTRIBUTES.projection }
      : { IndexName: plan.source }),
    KeyConditionExpression: `#pk = :pk${range.condition}`,
    ...(filtered ? { FilterExpression: '#complete = :complete' } : {}),
    ExpressionAttributeNames: {
      '#pk': plan.partitionKey,
      ...(range.condition ? { '#sk': plan.sortKey } : {}),
      ...(filtered ? { '#complete': 'complete' } : {}),
      ...(table ? LISTED_ATTRIBUTES.names : {}),
    },
    ExpressionAttributeValues: {
      ':pk': partition,
      ...range.values,
      ...(filtered ? { ':complete': complete } : {}),
    },
  };
}

/** A key read from a Query (an item or a LastEvaluatedKey) as a position in the plan's order. */
export function keyPosition(plan: DynamoDbPagePlan, key: Record<string, unknown>): PagePosition {
  if (plan.order === 'shipDate') {
    const text = key[ORDER_INDEX_ATTRIBUTES.dateKey];
    const read = typeof text === 'string' ? readDateKey(text) : undefined;
    if (!read) throw malformedKey(plan.source, 'a dateKey that is not one');
    return read;
  }
  const id = numberText(key.id);
  if (id === undefined) throw malformedKey(plan.source, 'an id that is not a number');
  return { id: BigInt(id) };
}

/**
 * The first round's Limit of every partition of a page of N: 2N/k + 1, so that the page is
 * nearly always complete after one round where the partitions are alike, for at most 2N + k keys
 * evaluated; N + 1 from a single partition (its last key says whether it holds more). Each of
 * several partitions asks for 2 at least: one that holds one item in the range then answers that
 * it has no more (at a Limit of 1 DynamoDB answers that it may have, and the merge would wait for
 * it); what is evaluated is what the partition holds, so the minimum costs a sparse status little.
 */
export function firstLimit(plan: Pick<PagePlan, 'partitions'>, pageSize: number): number {
  if (plan.partitions === 1) return pageSize + 1;
  return Math.max(2, Math.floor((2 * pageSize) / plan.partitions) + 1);
}

/** What a partition has read so far, for the Limit of its next Query. */
export interface PartitionProgress {
  /** Keys or items its Queries evaluated. */
  readonly evaluated: number;
  /** Those that matched (all of an index's; the table's that passed its FilterExpression). */
  readonly matched: number;
}

/**
 * The Limit of a partition that holds the merge back, when the page still misses `missing`
 * candidates and `behind` partitions read on: 1.5 times its share of them, plus one, scaled by
 * the keys it evaluated per match so far (both counted from one, so that a partition that has
 * matched nothing yet asks for more, not for everything); from 2 to MAX_QUERY_LIMIT.
 */
export function readOnLimit(missing: number, behind: number, read: PartitionProgress): number {
  const perMatch = (read.evaluated + 1) / (read.matched + 1);
  const want = ((READ_ON_MARGIN * missing) / behind + 1) * perMatch;
  return Math.min(MAX_QUERY_LIMIT, Math.max(2, Math.ceil(want)));
}

/**
 * The Limits of one round, capped so that together they ask for no more than `left` of the page's
 * budget of evaluated items (shared out evenly; a partition whose share is none sends no Query:
 * the budget is spent after this round).
 */
export function roundLimits(wanted: readonly number[], left: number): number[] {
  const available = Math.max(0, left);
  const share = Math.floor(available / wanted.length);
  const extra = available % wanted.length;
  return wanted.map((limit, i) => Math.min(limit, share + (i < extra ? 1 : 0)));
}

/**
 * How many more candidates a page reads when the ones it checked were not all listed (a filter
 * the index's key does not hold, or an index lagging a write): what it still needs, divided by
 * the share that matched so far (both counted from one), 1.25 times, within what is left of its
 * budget of orders read by key.
 */
export function recheckCount(
  needed: number,
  listed: number,
  checked: number,
  fetchLeft: number,
): number {
  const rate = (listed + 1) / (checked + 1);
  return Math.min(fetchLeft, Math.max(needed, Math.ceil((needed / rate) * RECHECK_MARGIN)));
}

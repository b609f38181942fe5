/**
 * How much a page of the v2 list reads, without I/O: its budget, and each round's Limits.
 * A page of N from k partitions asks each for 2N/k + 1 in its first round, then each
 * partition behind for its share of what the page still misses (readOnLimit); the Limits of a
 * round share out what is left of the page's budget of evaluated items (roundLimits). They follow
 * from the request and what the page has read: where a page ends depends on the store and the
 * request only. Why these and not tuned ones: bench/README.md (How a page's Limits are chosen).
 */
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

/**
 * The first round's Limit of every partition of a page of N: 2N/k + 1, so that the page is
 * nearly always complete after one round where the partitions are alike, for at most 2N + k keys
 * evaluated; N + 1 from a single partition (its last key says whether it holds more). Each of
 * several partitions asks for 2 at least: one that holds one item in the range then answers that
 * it has no more (at a Limit of 1 DynamoDB answers that it may have, and the merge would wait for
 * it); what is evaluated is what the partition holds, so the minimum costs a sparse status little.
 */
export function firstLimit(partitions: number, pageSize: number): number {
  if (partitions === 1) return pageSize + 1;
  return Math.max(2, Math.floor((2 * pageSize) / partitions) + 1);
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

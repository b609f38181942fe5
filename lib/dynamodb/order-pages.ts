/**
 * The v2 list's pages on DynamoDB (lib/orders/order-pages.ts): which source serves a filter, and
 * how a page is read from it so that what it costs follows the page, not the store.
 *
 * Sources (tables.ts has the indexes; all KEYS_ONLY):
 * - petId (+ a date range): byPet (byPetDate), one partition; status and complete re-checked;
 * - status and/or a date range: byStatus (byStatusDate), one partition per status and shard
 *   (8 per status; every status when only a date range is given);
 * - nothing, or complete alone: the table, its 8 shards by id, strongly consistent, `complete`
 *   as a FilterExpression (it evaluates the orders that do not match too: the costly filter).
 * In id order, or in (ship date, id) order when a date range is given; a date range is one key
 * condition per partition (lib/dynamodb/order-index-keys.ts).
 *
 * A page of N from k partitions: each partition is queried from the page's start with a small
 * Limit (2N/k + 1: one round, nearly always, for the cost the goal allows, 2N + k items
 * evaluated); the results are merged by sort key, and an item is taken only while no partition
 * that may hold more has read less far than it (its frontier: the last key it evaluated).
 * When that leaves fewer than N, the partitions that hold the merge back are read further, each
 * by its share of what the page still misses (1.5 times it, scaled by the keys it evaluated per
 * match so far), until N, the end or the budget. The Limits follow from the request and what the
 * page has read: where a page ends depends on the store and the request only. Index
 * queries give keys: the candidates are then read by key (BatchGetItem, strongly consistent, 100
 * keys a call, in parallel) and every filter is checked on the fresh item. A candidate that does
 * not match is left out and the page reads on: rare where the index's key holds every filter (the
 * index lagging a write); the rule where it does not (status or complete with a pet, complete
 * with a status), where the page reads on by the share that matched so far until it has N, or
 * until its budget (PAGE_READ_BUDGET) is spent and it is served short. The next page starts after
 * the page's last order, or, when served short, after the last candidate read.
 *
 * Exactness: a table page is strongly consistent. An index page shows no order that does not
 * match when read; an order whose change to match is younger than the index's propagation lag
 * (usually under a second; lib/orders/page-tag.ts) can be missing from the page that covers it.
 * DynamoDB Local updates its indexes synchronously.
 *
 * Failures as every call of lib/dynamodb (./errors.ts `send`, the request's deadline), and: an
 * index not in ORDERS_INDEXES, one still backfilling, or indexes that need the derived attributes
 * before the readiness marker is there (./index-readiness.ts): transient, `index-not-ready`
 * (503 with Retry-After); an index ORDERS_INDEXES names that the table lacks: permanent,
 * `index-missing` (a misconfigured stage: 500 and an alarm).
 */
import {
  QueryCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { DependencyFailure, INDEX_NOT_READY } from '../failures.ts';
import {
  comparePositions,
  orderMatches,
  positionOf,
  sortOrderOf,
  type OrderFilter,
  type OrderSortOrder,
  type PagePosition,
} from '../orders/order-filter.ts';
import type {
  OrderPage,
  OrderPageReader,
  PagePlan,
  PageReadOptions,
  PageRequest,
} from '../orders/order-pages.ts';
import type { OrderStreamOptions } from '../orders/order-store.ts';
import { ORDER_STATUSES, type Order } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import { GET_BATCH, getInBatches } from './batch-write.ts';
import { send } from './errors.ts';
import { IndexReadiness } from './index-readiness.ts';
import {
  dateKey,
  dateKeyAfter,
  dateKeyBound,
  readDateKey,
  statusPartition,
} from './order-index-keys.ts';
import { LISTED_ATTRIBUTES, readForList } from './orders-table.ts';
import { ORDER_INDEX_ATTRIBUTES, ORDER_SHARDS, orderShard, type OrderIndexName } from './tables.ts';

/** How failures of the pages are named in logs. */
const DEPENDENCY = 'orders table (pages)';

/** The most items one Query of a page asks for. */
const MAX_QUERY_LIMIT = 1_000;
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
 * of items read by key). Each round's Limits share out what is left of `evaluated`, so that no
 * round goes past it.
 */
export const PAGE_READ_BUDGET: PageReadBudget = { rounds: 10, evaluated: 10_000, fetched: 2_500 };
/**
 * How much more than what a page still misses a later round asks for (the first asks twice the
 * page), and how much more than the share of candidates that matched so far a re-checked page
 * reads on by.
 */
const READ_ON_MARGIN = 1.5;
/** Attempts of the page's BatchGetItem while keys come back unprocessed, and the waits between. */
const BATCH_GET_ATTEMPTS = 6;
const BATCH_GET_BACKOFF_MS = { base: 10, max: 500 } as const;

type Item = Record<string, unknown>;
type Source = 'table' | OrderIndexName;

/** A plan as the reader uses it: where each partition is and how its keys are named. */
export interface DynamoDbPagePlan extends PagePlan {
  readonly source: Source;
  readonly order: OrderSortOrder;
  /** The partition key's attribute and its value in each partition read (`partitions` of them). */
  readonly partitionKey: string;
  readonly partitionValues: readonly (string | number | bigint)[];
  readonly sortKey: 'id' | 'dateKey';
  /** Whether the index is keyed by derived attributes (needs the readiness marker). */
  readonly needsReadiness: boolean;
}

/** A page as this reader reports it: also where the page's last candidate stood. */
export interface DynamoDbOrderPage extends OrderPage {
  readonly plan: DynamoDbPagePlan;
  /** The position of the page's last candidate (what the page covers ends there); absent when it had none. */
  readonly end?: PagePosition;
}

const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);

/**
 * The first round's Limit of every partition of a page of N: 2N/k + 1, so that the page is
 * nearly always complete after one round where the partitions are alike, for at most 2N + k keys
 * evaluated; N + 1 from a single partition (its last key says whether it holds more). Each of
 * several partitions asks for 2 at least: one that holds one item in the range then answers that
 * it has no more (at a Limit of 1 DynamoDB answers that it may have, and the merge would wait for
 * it); what is evaluated is what the partition holds, so the minimum costs a sparse status little.
 */
function firstLimit(plan: DynamoDbPagePlan, pageSize: number): number {
  if (plan.partitions === 1) return pageSize + 1;
  return Math.max(2, Math.floor((2 * pageSize) / plan.partitions) + 1);
}

/** A plan with its count of partitions, derived from their values. */
const withPartitions = (plan: Omit<DynamoDbPagePlan, 'partitions'>): DynamoDbPagePlan => ({
  ...plan,
  partitions: plan.partitionValues.length,
});

/** The plan of a filter's pages, whatever is deployed (DynamoDbOrderPages.plan checks that). */
function planPages(filter: OrderFilter): DynamoDbPagePlan {
  const order = sortOrderOf(filter);
  const dated = order === 'shipDate';
  const sortKey = dated ? ORDER_INDEX_ATTRIBUTES.dateKey : 'id';
  if (filter.petId !== undefined) {
    return withPartitions({
      source: dated ? 'byPetDate' : 'byPet',
      consistent: false,
      order,
      partitionKey: 'petId',
      partitionValues: [filter.petId],
      sortKey,
      needsReadiness: dated,
    });
  }
  if (filter.statuses || dated) {
    const statuses = filter.statuses ?? ORDER_STATUSES;
    const values = statuses.flatMap((status) => shards.map((s) => statusPartition(status, s)));
    return withPartitions({
      source: dated ? 'byStatusDate' : 'byStatus',
      consistent: false,
      order,
      partitionKey: ORDER_INDEX_ATTRIBUTES.statusKey,
      partitionValues: values,
      sortKey,
      needsReadiness: true,
    });
  }
  return withPartitions({
    source: 'table',
    consistent: true,
    order,
    partitionKey: 'shard',
    partitionValues: shards,
    sortKey: 'id',
    needsReadiness: false,
  });
}

/**
 * The key condition (and its values) of one partition's range: after `start` (exclusive), in the
 * filter's date range, up to `end` (inclusive) when given; 'empty' when no key can be in it.
 */
function sortKeyRange(
  plan: DynamoDbPagePlan,
  filter: OrderFilter,
  start: PagePosition | undefined,
  end: PagePosition | undefined,
): { condition: string; values: Record<string, unknown> } | 'empty' {
  if (plan.order === 'id') {
    const parts: string[] = [];
    const values: Record<string, unknown> = {};
    if (start && end) {
      if (start.id >= end.id) return 'empty';
      return {
        condition: ' AND #sk BETWEEN :lo AND :hi',
        values: { ':lo': start.id + 1n, ':hi': end.id },
      };
    }
    if (start) {
      parts.push(' AND #sk > :lo');
      values[':lo'] = start.id;
    }
    if (end) {
      parts.push(' AND #sk <= :hi');
      values[':hi'] = end.id;
    }
    return { condition: parts.join(''), values };
  }
  const { from, to } = filter.shipDate ?? {};
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
 * benchmark's floor); undefined when the range is empty.
 */
export function partitionQuery(
  tableName: string,
  plan: DynamoDbPagePlan,
  filter: OrderFilter,
  partition: string | number | bigint,
  start: PagePosition | undefined,
  end?: PagePosition,
): QueryCommandInput | undefined {
  const range = sortKeyRange(plan, filter, start, end);
  if (range === 'empty') return undefined;
  const table = plan.source === 'table';
  const filtered = table && filter.complete !== undefined;
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
      ...(filtered ? { ':complete': filter.complete } : {}),
    },
  };
}

/** A key read from a Query (an item or a LastEvaluatedKey) as a position in the plan's order. */
function keyPosition(plan: DynamoDbPagePlan, key: Item): PagePosition {
  if (plan.order === 'shipDate') {
    const text = key[ORDER_INDEX_ATTRIBUTES.dateKey];
    const read = typeof text === 'string' ? readDateKey(text) : undefined;
    if (!read) throw malformedKey(plan, 'a dateKey that is not one');
    return read;
  }
  const id = numberText(key.id);
  if (id === undefined) throw malformedKey(plan, 'an id that is not a number');
  return { id: BigInt(id) };
}

function malformedKey(plan: DynamoDbPagePlan, what: string): DependencyFailure {
  return new DependencyFailure('permanent', DEPENDENCY, 'malformed-item', {
    message: `${DEPENDENCY}: ${plan.source} returned ${what} (permanent)`,
  });
}

function indexNotReady(source: string, why: string, cause?: unknown): DependencyFailure {
  return new DependencyFailure('transient', DEPENDENCY, INDEX_NOT_READY, {
    message: `${DEPENDENCY}: index ${source} is not ready: ${why} (transient)`,
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** A Query's failure in the index's terms: backfilling (transient), missing (permanent). */
function indexFailure(error: unknown, source: Source): unknown {
  if (!(error instanceof DependencyFailure) || error.reason !== 'validation') return error;
  const message = error.cause instanceof Error ? error.cause.message : '';
  if (/backfilling global secondary index/i.test(message)) {
    return indexNotReady(source, 'it is backfilling', error);
  }
  if (/does not have the specified index/i.test(message)) {
    return new DependencyFailure('permanent', DEPENDENCY, 'index-missing', {
      message: `${DEPENDENCY}: the table has no index ${source}, which ORDERS_INDEXES names (permanent)`,
      cause: error,
    });
  }
  return error;
}

interface Candidate {
  readonly position: PagePosition;
  /** The whole item (the table's own Query), or only its keys (an index's). */
  readonly item: Item;
}

interface PartitionState {
  readonly value: string | number | bigint;
  /** Where the next Query continues (its LastEvaluatedKey); absent before the first. */
  startKey?: Item;
  /** The last key evaluated; undefined before the first read. */
  frontier?: PagePosition;
  exhausted: boolean;
  readonly buffered: Candidate[];
  evaluated: number;
  matched: number;
  limit: number;
}

/** What one take of a page's candidates gave. */
interface Taken {
  /** The next candidates in the sort order. */
  readonly candidates: readonly Candidate[];
  /** Whether candidates may remain after these. */
  readonly more: boolean;
  /**
   * The page's read budget ran out first: these are every candidate up to `bound`, where every
   * partition has been read to (fewer than asked).
   */
  readonly cut: boolean;
  readonly bound?: PagePosition;
}

/**
 * A page's candidates in sort order, from its partitions: each take hands out the next ones,
 * reading partitions further only as far as the merge needs (see the header).
 */
class CandidateStream {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly plan: DynamoDbPagePlan;
  private readonly request: PageRequest;
  private readonly cost: { evaluated: number; queries: number; rounds: number };
  private readonly signal: AbortSignal | undefined;
  private readonly budget: PageReadBudget;
  private readonly partitions: PartitionState[];
  private started = false;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    plan: DynamoDbPagePlan,
    request: PageRequest,
    firstLimit: number,
    cost: { evaluated: number; queries: number; rounds: number },
    signal: AbortSignal | undefined,
    budget: PageReadBudget,
  ) {
    this.budget = budget;
    this.client = client;
    this.tableName = tableName;
    this.plan = plan;
    this.request = request;
    this.cost = cost;
    this.signal = signal;
    this.partitions = plan.partitionValues.map((value) => ({
      value,
      exhausted: false,
      buffered: [],
      evaluated: 0,
      matched: 0,
      limit: firstLimit,
    }));
  }

  private async query(partition: PartitionState, limit: number): Promise<void> {
    const { plan, request, cost } = this;
    const base = partitionQuery(
      this.tableName,
      plan,
      request.filter,
      partition.value,
      request.start,
    );
    if (!base) {
      partition.exhausted = true;
      return;
    }
    cost.queries++;
    const result = await send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new QueryCommand({
            ...base,
            Limit: limit,
            ...(partition.startKey ? { ExclusiveStartKey: partition.startKey } : {}),
          }),
          { abortSignal },
        ),
      this.signal,
    ).catch((error: unknown) => {
      throw indexFailure(error, plan.source);
    });
    cost.evaluated += result.ScannedCount ?? 0;
    partition.evaluated += result.ScannedCount ?? 0;
    for (const item of result.Items ?? []) {
      const position = keyPosition(plan, item);
      partition.buffered.push({ position, item });
      partition.matched++;
    }
    if (result.LastEvaluatedKey) {
      partition.startKey = result.LastEvaluatedKey;
      partition.frontier = keyPosition(plan, result.LastEvaluatedKey);
    } else {
      partition.exhausted = true;
    }
  }

  /**
   * One round of queries, each partition by its Limit, the Limits capped so that together they
   * ask for no more than what is left of the page's budget of evaluated items (shared out evenly;
   * a partition whose share is none waits: the budget is spent after this round).
   */
  private async round(targets: readonly PartitionState[]): Promise<void> {
    const queries = this.cost.queries;
    const left = Math.max(0, this.budget.evaluated - this.cost.evaluated);
    const share = Math.floor(left / targets.length);
    const extra = left % targets.length;
    await Promise.all(
      targets.flatMap((partition, i) => {
        const limit = Math.min(partition.limit, share + (i < extra ? 1 : 0));
        return limit > 0 ? [this.query(partition, limit)] : [];
      }),
    );
    if (this.cost.queries > queries) this.cost.rounds++;
  }

  /** The next `count` candidates (fewer at the end, or when the page's budget runs out). */
  async take(count: number): Promise<Taken> {
    if (!this.started) {
      this.started = true;
      await this.round(this.partitions);
    }
    for (;;) {
      const active = this.partitions.filter((p) => !p.exhausted);
      const bound = active
        .map((p) => p.frontier!)
        .reduce<PagePosition | undefined>(
          (low, f) => (low === undefined || comparePositions(f, low) < 0 ? f : low),
          undefined,
        );
      // An order whose status changed between two partitions' Queries can stand in both at the
      // same position: it is one candidate.
      const all = this.partitions
        .flatMap((p) => p.buffered)
        .sort((a, b) => comparePositions(a.position, b.position))
        .filter(
          (c, i, sorted) => i === 0 || comparePositions(sorted[i - 1]!.position, c.position) !== 0,
        );
      const known = bound ? all.filter((c) => comparePositions(c.position, bound) <= 0) : all;
      const budgetSpent =
        this.cost.rounds >= this.budget.rounds || this.cost.evaluated >= this.budget.evaluated;
      if (known.length >= count || active.length === 0 || budgetSpent) {
        const cut = known.length < count && active.length > 0;
        const taken = cut ? known : known.slice(0, count);
        const end = taken.at(-1)?.position;
        for (const p of this.partitions) {
          while (
            p.buffered.length > 0 &&
            end &&
            comparePositions(p.buffered[0]!.position, end) <= 0
          ) {
            p.buffered.shift();
          }
        }
        const more = active.length > 0 || this.partitions.some((p) => p.buffered.length > 0);
        return { candidates: taken, more, cut, ...(cut ? { bound: bound! } : {}) };
      }
      // Read on from every partition behind the count-th candidate known so far (by position,
      // id included: in ship-date order many frontiers can stand at one instant), or from every
      // partition while fewer are known: each by its share of what the take still misses.
      const nth = all.length >= count ? all[count - 1]!.position : undefined;
      const behind = nth ? active.filter((p) => comparePositions(p.frontier!, nth) < 0) : active;
      const missing = count - known.length;
      for (const p of behind) {
        const perMatch = (p.evaluated + 1) / (p.matched + 1);
        const want = ((READ_ON_MARGIN * missing) / behind.length + 1) * perMatch;
        p.limit = Math.min(MAX_QUERY_LIMIT, Math.max(2, Math.ceil(want)));
      }
      await this.round(behind);
    }
  }
}

export interface DynamoDbOrderPagesOptions {
  /** The indexes the stage has (lib/dynamodb/order-indexes.ts, from ORDERS_INDEXES). */
  readonly indexes: ReadonlySet<OrderIndexName>;
  /** What a page may read before it is served short; PAGE_READ_BUDGET by default. */
  readonly budget?: PageReadBudget;
}

export class DynamoDbOrderPages implements OrderPageReader<DynamoDbPagePlan> {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly indexes: ReadonlySet<OrderIndexName>;
  private readonly readiness: IndexReadiness;
  private readonly budget: PageReadBudget;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: DynamoDbOrderPagesOptions,
  ) {
    this.client = client;
    this.tableName = tableName;
    this.indexes = options.indexes;
    this.readiness = new IndexReadiness(client, tableName);
    this.budget = options.budget ?? PAGE_READ_BUDGET;
  }

  plan(filter: OrderFilter): DynamoDbPagePlan {
    const plan = planPages(filter);
    if (plan.source !== 'table' && !this.indexes.has(plan.source)) {
      throw indexNotReady(plan.source, 'it is not deployed yet (ORDERS_INDEXES)');
    }
    return plan;
  }

  async readPage(
    request: PageRequest,
    options: PageReadOptions<DynamoDbPagePlan> = {},
  ): Promise<DynamoDbOrderPage> {
    const plan = options.plan ?? this.plan(request.filter);
    const { filter, pageSize } = request;
    const { signal } = options;
    const cost = { evaluated: 0, fetched: 0, queries: 0, batchGets: 0, rounds: 0 };
    const candidates = new CandidateStream(
      this.client,
      this.tableName,
      plan,
      request,
      firstLimit(plan, pageSize),
      cost,
      signal,
      this.budget,
    );
    const notIndexed = () =>
      indexNotReady(
        plan.source,
        'not every order holds its index attributes yet (run orders reindex)',
      );
    // A marker the container knows to be missing refuses the page before any query; one to be
    // read is read beside the first round (once a container has seen it, from memory).
    const known = plan.needsReadiness ? this.readiness.known() : true;
    if (known === false) throw notIndexed();
    const [ready, first] = await Promise.all([
      known ?? this.readiness.isReady(signal),
      candidates.take(pageSize),
    ]);
    if (!ready) throw notIndexed();
    const check = (candidate: Candidate, item: Item | undefined) =>
      this.recheck(plan, filter, candidate, item, options);

    if (plan.source === 'table') {
      // The table's own items: the FilterExpression has matched them, strongly consistent.
      const orders = first.candidates.flatMap((c) => check(c, c.item) ?? []);
      const end = first.cut ? first.bound : first.candidates.at(-1)?.position;
      const next = first.cut ? first.bound : first.more ? end : undefined;
      return { orders, ...(next ? { next } : {}), ...(end ? { end } : {}), plan, cost };
    }

    // An index gives keys: read the candidates' items and check every filter on them. Filters
    // the index's key does not hold (status or complete on a pet's index, complete on a status
    // index) leave most candidates out: read on, by the share that matched so far, until the
    // page has N or the page's budget is spent.
    const orders: Order[] = [];
    let taken = first;
    let seen = 0;
    let last: PagePosition | undefined;
    for (;;) {
      const items = await this.fetch(taken.candidates, cost, signal);
      let full = false;
      let examined = 0;
      for (const candidate of taken.candidates) {
        examined++;
        last = candidate.position;
        const order = check(candidate, items(candidate));
        if (order) orders.push(order);
        if (orders.length === pageSize) {
          full = true;
          break;
        }
      }
      seen += examined;
      if (full) {
        const more = examined < taken.candidates.length || taken.more;
        return { orders, ...(more ? { next: last! } : {}), end: last!, plan, cost };
      }
      if (!taken.more) return { orders, ...(last ? { end: last } : {}), plan, cost };
      if (taken.cut || cost.fetched >= this.budget.fetched) {
        // Served short: every candidate up to here was read; the next page starts after it.
        const next = taken.cut ? taken.bound! : last!;
        return { orders, next, end: next, plan, cost };
      }
      const need = pageSize - orders.length;
      const rate = (orders.length + 1) / (seen + 1);
      const want = Math.min(
        this.budget.fetched - cost.fetched,
        Math.max(need, Math.ceil((need / rate) * READ_ON_MARGIN)),
      );
      taken = await candidates.take(want);
    }
  }

  /** The candidates' items, read strongly consistent (BatchGetItem, 100 keys a call, at once). */
  private async fetch(
    candidates: readonly Candidate[],
    cost: { batchGets: number; fetched: number },
    signal: AbortSignal | undefined,
  ): Promise<(candidate: Candidate) => Item | undefined> {
    cost.fetched += candidates.length;
    // One key an order (BatchGetItem refuses a repeated key): an order can be a candidate at two
    // positions, its ship date changed between two partitions' Queries.
    const ids = new Set(candidates.map((c) => c.position.id));
    const keys = [...ids].map((id) => ({ shard: orderShard(id), id }));
    const items = await getInBatches(this.client, this.tableName, keys, {
      dependency: DEPENDENCY,
      concurrency: Math.ceil(keys.length / GET_BATCH),
      maxAttempts: BATCH_GET_ATTEMPTS,
      backoffMs: BATCH_GET_BACKOFF_MS,
      onCall: () => void cost.batchGets++,
      ...(signal ? { signal } : {}),
    });
    const found = new Map(items.map((item) => [numberText(item.id) ?? '', item]));
    return (candidate) => found.get(candidate.position.id.toString());
  }

  /**
   * The order of a candidate if its item (fresh) matches every filter and stands where the
   * index put it (a ship date changed since would put it elsewhere in the order).
   */
  private recheck(
    plan: DynamoDbPagePlan,
    filter: OrderFilter,
    candidate: Candidate,
    item: Item | undefined,
    options: OrderStreamOptions,
  ): Order | undefined {
    if (!item) return undefined;
    const order = readForList(item, options.onUnreadable);
    if (!order || !orderMatches(filter, order)) return undefined;
    const position = positionOf(order, plan.order);
    if (!position || comparePositions(position, candidate.position) !== 0) return undefined;
    return order;
  }
}

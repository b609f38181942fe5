/**
 * The plan of a filter's pages, without I/O: which source serves the filter and which partitions
 * a page reads, the key condition of each partition's Query, and, for one page, those Queries
 * with their first round's Limits (pageQueries), handed to the page reader (./order-pages.ts)
 * once, before it reads.
 *
 * Sources (./tables.ts has the indexes; each holds the orders' fields beside its keys):
 * - petId (+ a date range): ordersByPet (ordersByPetDate), one partition;
 * - a status without a date range: ordersByStatus, one partition per status and shard (8 per
 *   status), whose key says the status;
 * - a date range of statuses other than shipped (pending, cancelled): ordersUnshippedByDate, the
 *   orders not shipped by ship date, 8 partitions (a shard each), so that a month of pending
 *   orders reads those and not the month's shipped ones;
 * - any other date range, with or without a status: ordersByDate, the table's 8 shards by ship
 *   date (and the pending or cancelled ones too while a stage does not have the index above);
 * - nothing, or complete alone: the table, its 8 shards by id, strongly consistent.
 * In id order, or in (ship date, id) order when a date range is given (a multi-attribute sort key:
 * `t`, the instant, then the id). A filter the source's key does not hold is a FilterExpression on
 * what the index holds (`complete`; `status` where the key does not say it), which evaluates the
 * orders that do not match too. An index holds an order's `status` as the order's last write
 * before any cancel left it: a cancel records itself in its trail and leaves `status` alone
 * (./orders-table.ts), so an order an index holds as pending may have been cancelled since and
 * is read again by key (./page-check.ts); one it holds as shipped or cancelled is what it says.
 *
 * How much a page reads, round by round, and its read budget: ./page-limits.ts.
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  sortOrderOf,
  type OrderFilter,
  type OrderSortOrder,
  type PagePosition,
} from '../orders/order-filter.ts';
import type { PagePlan } from '../orders/order-page-reader.ts';
import { ORDER_STATUSES, type OrderStatus } from '../orders/order.ts';
import { numberText } from './attributes.ts';
import { indexNeedsReadiness } from './index-readiness.ts';
import { statusShard } from './order-index-keys.ts';
import { LISTED_ATTRIBUTES } from './order-item.ts';
import { malformedKey } from './page-failures.ts';
import { firstLimit } from './page-limits.ts';
import {
  ORDER_INDEX_ATTRIBUTES,
  ORDER_INDEX_NAMES,
  ORDER_SHARDS,
  orderIndexDefinition,
  orderShard,
  type OrderIndexName,
} from './tables.ts';

export type PageSource = 'table' | OrderIndexName;
/** A partition key's value: a status and shard, a pet, a shard of the table. */
export type PartitionValue = string | number | bigint;

/** What a source's items hold: the order's whole item (the table), or its fields as an index projects them. */
export type SourceItems = 'table' | 'fields';

/** A plan as the reader uses it: where each partition is and how its keys are named. */
export interface DynamoDbPagePlan extends PagePlan {
  readonly source: PageSource;
  readonly order: OrderSortOrder;
  /** The partition key's attribute and its value in each partition read (`partitions` of them). */
  readonly partitionKey: string;
  readonly partitionValues: readonly PartitionValue[];
  readonly items: SourceItems;
  /** Whether the partition's key says the status (ordersByStatus: `s`). */
  readonly statusInKey: boolean;
  /**
   * The statuses an index's `status` may hold for an order the filter's statuses select (a
   * FilterExpression keeps those): absent when the key says the status or no status is asked.
   */
  readonly storedStatuses?: readonly OrderStatus[];
  /** Whether the index is keyed by derived attributes (needs the readiness marker). */
  readonly needsReadiness: boolean;
}

const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);

/**
 * The statuses an index holds as `status` for orders whose effective status is one of `asked`:
 * shipped and cancelled as they are; a pending order as pending (or with none), and so is one
 * cancelled through the API (its trail, which no index holds, says so).
 */
export function storedStatusesOf(asked: readonly OrderStatus[]): OrderStatus[] {
  const stored = new Set<OrderStatus>(asked);
  if (stored.has('cancelled')) stored.add('pending');
  return ORDER_STATUSES.filter((status) => stored.has(status));
}

/**
 * The plan of a filter's pages with the indexes a stage has (the current ones by default); the
 * source it names may not be there (DynamoDbOrderPages.plan refuses it then).
 */
export function planPages(
  filter: OrderFilter,
  indexes: ReadonlySet<OrderIndexName> = new Set(ORDER_INDEX_NAMES),
): DynamoDbPagePlan {
  const order = sortOrderOf(filter);
  const dated = order === 'shipDate';
  const { statuses } = filter;
  /** A source's plan: its keys, what its items hold and whether it waits for the marker. */
  const plan = (
    source: PageSource,
    partitionValues: readonly PartitionValue[],
  ): DynamoDbPagePlan => {
    const index = source === 'table' ? undefined : orderIndexDefinition(source);
    const items: SourceItems = index === undefined ? 'table' : 'fields';
    const partitionKey = index?.partitionKey.name ?? 'shard';
    const statusInKey = partitionKey === ORDER_INDEX_ATTRIBUTES.status;
    return {
      filter,
      source,
      consistent: source === 'table',
      order,
      partitions: partitionValues.length,
      partitionKey,
      partitionValues,
      items,
      statusInKey,
      ...(statuses && !statusInKey && items === 'fields'
        ? { storedStatuses: storedStatusesOf(statuses) }
        : {}),
      needsReadiness: source !== 'table' && indexNeedsReadiness(source),
    };
  };
  if (filter.petId !== undefined) {
    return plan(dated ? 'ordersByPetDate' : 'ordersByPet', [filter.petId]);
  }
  if (dated) {
    const unshipped = statuses && !statuses.includes('shipped');
    if (unshipped && indexes.has('ordersUnshippedByDate')) {
      return plan('ordersUnshippedByDate', shards);
    }
    return plan('ordersByDate', shards);
  }
  if (statuses) {
    return plan(
      'ordersByStatus',
      statuses.flatMap((status) => shards.map((s) => statusShard(status, s))),
    );
  }
  return plan('table', shards);
}

type Range =
  | { condition: string; values: Record<string, unknown>; startKey?: Record<string, unknown> }
  | 'empty';

/**
 * The key condition (and its values) of one partition's range: after `start` (exclusive), in the
 * filter's date range; 'empty' when no key can be in it. In ship-date order the sort key is
 * (t, id), whose conditions compare `t` alone: `start` is where the Query begins (its
 * ExclusiveStartKey, which DynamoDB takes within the key condition).
 */
function sortKeyRange(
  plan: DynamoDbPagePlan,
  partition: PartitionValue,
  start: PagePosition | undefined,
): Range {
  if (plan.order === 'id') {
    if (start) return { condition: ' AND #sk > :lo', values: { ':lo': start.id } };
    return { condition: '', values: {} };
  }
  const { from, to } = plan.filter.shipDate ?? {};
  // Instants are whole nanoseconds: before `to` is at most `to` − 1.
  const high = to !== undefined ? to - 1n : undefined;
  if (from !== undefined && high !== undefined && from > high) return 'empty';
  if (start && high !== undefined && start.instant! > high) return 'empty';
  const startKey =
    start && (from === undefined || start.instant! >= from)
      ? {
          [plan.partitionKey]: partition,
          [ORDER_INDEX_ATTRIBUTES.instant]: start.instant!,
          id: start.id,
          ...(plan.partitionKey === 'shard' ? {} : { shard: orderShard(start.id) }),
        }
      : undefined;
  const bounds =
    from !== undefined && high !== undefined
      ? { condition: ' AND #sk BETWEEN :lo AND :hi', values: { ':lo': from, ':hi': high } }
      : from !== undefined
        ? { condition: ' AND #sk >= :lo', values: { ':lo': from } }
        : high !== undefined
          ? { condition: ' AND #sk <= :hi', values: { ':hi': high } }
          : { condition: '', values: {} };
  return { ...bounds, ...(startKey ? { startKey } : {}) };
}

/**
 * The Query of one partition of a plan, over its range after `start`, without its Limit; with the
 * ExclusiveStartKey of `start` where the range begins there (ship-date order); undefined when the
 * range is empty.
 */
export function partitionQuery(
  tableName: string,
  plan: DynamoDbPagePlan,
  partition: PartitionValue,
  start: PagePosition | undefined,
): QueryCommandInput | undefined {
  const range = sortKeyRange(plan, partition, start);
  if (range === 'empty') return undefined;
  const table = plan.source === 'table';
  const { complete } = plan.filter;
  const filters = [
    ...(complete !== undefined ? ['#complete = :complete'] : []),
    ...(plan.storedStatuses
      ? [
          `(${[
            ...(plan.storedStatuses.includes('pending') ? ['attribute_not_exists(#status)'] : []),
            `#status IN (${plan.storedStatuses.map((_, i) => `:status${i}`).join(', ')})`,
          ].join(' OR ')})`,
        ]
      : []),
  ];
  const filtered = filters.length > 0;
  const sortKey = plan.order === 'id' ? 'id' : ORDER_INDEX_ATTRIBUTES.instant;
  return {
    TableName: tableName,
    ...(table
      ? { ConsistentRead: true, ProjectionExpression: LISTED_ATTRIBUTES.projection }
      : { IndexName: plan.source }),
    KeyConditionExpression: `#pk = :pk${range.condition}`,
    ...(filtered ? { FilterExpression: filters.join(' AND ') } : {}),
    ExpressionAttributeNames: {
      '#pk': plan.partitionKey,
      ...(range.condition ? { '#sk': sortKey } : {}),
      ...(filtered && complete !== undefined ? { '#complete': 'complete' } : {}),
      ...(filtered && plan.storedStatuses ? { '#status': 'status' } : {}),
      ...(table ? LISTED_ATTRIBUTES.names : {}),
    },
    ExpressionAttributeValues: {
      ':pk': partition,
      ...range.values,
      ...(filtered && complete !== undefined ? { ':complete': complete } : {}),
      ...(filtered && plan.storedStatuses
        ? Object.fromEntries(plan.storedStatuses.map((status, i) => [`:status${i}`, status]))
        : {}),
    },
    ...(range.startKey ? { ExclusiveStartKey: range.startKey } : {}),
  };
}

/** A key read from a Query (an item or a LastEvaluatedKey) as a position in the plan's order. */
export function keyPosition(plan: DynamoDbPagePlan, key: Record<string, unknown>): PagePosition {
  const id = numberText(key.id);
  if (id === undefined) throw malformedKey(plan.source, 'an id that is not a number');
  if (plan.order === 'shipDate') {
    const instant = numberText(key[ORDER_INDEX_ATTRIBUTES.instant]);
    if (instant === undefined || !/^-?\d+$/.test(instant)) {
      throw malformedKey(plan.source, 'an instant that is not a whole number');
    }
    return { instant: BigInt(instant), id: BigInt(id) };
  }
  return { id: BigInt(id) };
}

/** One partition's Query of a page, and the Limit of its first round. */
export interface LimitedQuery {
  /** The Query over the partition's range after the page's start, without its Limit. */
  readonly input: QueryCommandInput;
  /** Its first round's Limit (./page-limits.ts firstLimit). */
  readonly limit: number;
}

/** What a page's candidates are read by, made once from its plan, without I/O. */
export interface PageQueries {
  /** Each partition's Query with its first Limit; none when no key can be in the page's range. */
  readonly partitions: readonly LimitedQuery[];
  /** A key those Queries give (an item or a LastEvaluatedKey) as a position in the plan's order. */
  readonly positionOf: (key: Record<string, unknown>) => PagePosition;
}

/** The Queries of one page of a plan, from `start` (the first page when absent), of `pageSize`. */
export function pageQueries(
  tableName: string,
  plan: DynamoDbPagePlan,
  start: PagePosition | undefined,
  pageSize: number,
): PageQueries {
  const inputs = plan.partitionValues.flatMap(
    (partition) => partitionQuery(tableName, plan, partition, start) ?? [],
  );
  const positionOf = (key: Record<string, unknown>) => keyPosition(plan, key);
  const limit = firstLimit(plan.partitions, pageSize);
  return { partitions: inputs.map((input) => ({ input, limit })), positionOf };
}

/**
 * The table definitions, shared by the CDK stack and the local emulator: key schema, indexes,
 * TTL attribute and the environment variable that carries each table's name to the functions.
 * Written without AWS types so that both sides translate them.
 */
export type KeyType = 'S' | 'N';

export interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

export interface GlobalIndexDefinition {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  /**
   * The sort key: none, one attribute, or several (a multi-attribute key, ordered by the first,
   * then the next: DynamoDB since November 2025; at most four).
   */
  readonly sortKeys: readonly KeyAttribute[];
  /**
   * KEYS_ONLY: the index holds its keys and the table's, nothing else; `include`: those and the
   * attributes named. A projected attribute that a write changes costs the write one more write
   * unit (the index's entry is rewritten); one the index does not hold costs it nothing.
   */
  readonly projection: 'KEYS_ONLY' | { readonly include: readonly string[] };
}

export interface TableDefinition {
  /** Construct id in CDK and suffix of the local table name. */
  readonly id: string;
  readonly envVar: string;
  readonly partitionKey: { readonly name: string; readonly type: KeyType };
  readonly sortKey?: { readonly name: string; readonly type: KeyType };
  /**
   * In the order a live table gets them: CloudFormation adds at most one global index to a table
   * per update, so a stack that deploys only some of them deploys the first ones.
   */
  readonly globalIndexes?: readonly GlobalIndexDefinition[];
  readonly timeToLiveAttribute?: string;
  /** Keep continuous backups (point-in-time recovery). */
  readonly pointInTimeRecovery: boolean;
}

/**
 * Orders are spread over ORDER_SHARDS partitions (`shard` = id mod ORDER_SHARDS) with the id as
 * a numeric sort key: each partition is read in id order and the partitions are merged, so the
 * full list streams in order without holding it in memory. Changing the count re-shards data.
 */
export const ORDER_SHARDS = 8;

/**
 * The list's version items (what its ETag is made of; lib/dynamodb/list-version.ts): items in
 * the orders table, each in a partition of its own that no order uses (`shard` −1 to
 * −LIST_VERSION_SLOTS, `id` 0). A stage uses the first few of these slots (its
 * `listVersionItems` setting, ./list-version-items.ts): a function's write of orders marks one of
 * them, chosen at random, before it writes and releases it after (2 WCU of one item, items under
 * 1 KB), and a reader reads them all, strongly consistent (1 RCU each). So the count is a trade:
 * n items bound the cancels at n × 1,000 WCU/s ÷ 2 = n × 500 a second and cost each conditional
 * hit (304) n RCU.
 */
export const LIST_VERSION_SLOTS = 32;

/** The key of list version item `index` (0 to LIST_VERSION_SLOTS − 1). */
export function listVersionKey(index: number): { readonly shard: number; readonly id: number } {
  return { shard: -1 - index, id: 0 };
}

/**
 * The item that says every order item holds its derived index attributes (written by
 * `npm run admin -- orders reindex`, or when the table is created by this code): a partition of
 * its own that no order and no version item uses; the list reads shards 0 to ORDER_SHARDS − 1.
 */
export const INDEX_READINESS_KEY = { shard: -100, id: 0 } as const;

/**
 * Attributes derived from an order for the indexes below, written with the order by every write
 * of the store (lib/dynamodb/order-index-keys.ts computes them). Short names and compact values:
 * v1's list reads whole items, so each byte of every order is paid on every list.
 * - `s`: the order's effective status (cancelled when the order holds a cancel's trail; see
 *   lib/dynamodb/order-item.ts) as its initial, and its shard: `p3`, `s3`, `c3`; so that each
 *   status is spread over ORDER_SHARDS index partitions, as the table is;
 * - `t`: the ship date's instant in nanoseconds since the epoch; absent when the ship date is not
 *   an RFC 3339 date-time.
 * - `u`: the order's shard, only while the order's stored `status` is not shipped and it has a `t`
 *   (a sparse key: shipped orders, most of a store, are not in ordersUnshippedByDate). A cancel
 *   leaves it as it is (it leaves `status` too); a ship removes it.
 */
export const ORDER_INDEX_ATTRIBUTES = {
  status: 's',
  instant: 't',
  unshipped: 'u',
} as const;

/** The trail of a cancel made through the API: when, by which key, in which request. */
export const CANCEL_TRAIL_ATTRIBUTES = {
  at: 'cancelledAt',
  by: 'cancelledBy',
  request: 'cancelRequestId',
} as const;

const shard = { name: 'shard', type: 'N' } as const;
const petId = { name: 'petId', type: 'N' } as const;
const orderId = { name: 'id', type: 'N' } as const;
const statusShard = { name: ORDER_INDEX_ATTRIBUTES.status, type: 'S' } as const;
const instant = { name: ORDER_INDEX_ATTRIBUTES.instant, type: 'N' } as const;
const unshippedShard = { name: ORDER_INDEX_ATTRIBUTES.unshipped, type: 'N' } as const;

/**
 * What the v2 list's indexes hold of an order besides their keys: its fields, so that a page is
 * read from the index alone. Not `status` where the key says it (ordersByStatus), and never the
 * cancel's trail: a cancel writes the trail and leaves `status` as it was, so it rewrites only
 * the status index's entry (its key moves) and none of the other four.
 */
const ORDER_FIELDS_BESIDE = ['quantity', 'shipDate', 'complete'] as const;

/**
 * The orders table's global indexes: the v2 list's (lib/dynamodb/order-pages.ts), with their
 * fields (INCLUDE). A new table is created with all of them; a table of release 1.0.0 (which had
 * none) gets them one deploy at a time, in this order: CloudFormation adds at most one global
 * index of a table per update (docs/upgrade-from-1.0.0.md).
 */
const ORDER_INDEXES = [
  {
    name: 'ordersByStatus',
    partitionKey: statusShard,
    sortKeys: [orderId],
    projection: { include: ['petId', ...ORDER_FIELDS_BESIDE] },
  },
  {
    name: 'ordersByDate',
    partitionKey: shard,
    sortKeys: [instant, orderId],
    projection: { include: ['petId', ...ORDER_FIELDS_BESIDE, 'status'] },
  },
  {
    name: 'ordersByPet',
    partitionKey: petId,
    sortKeys: [orderId],
    projection: { include: [...ORDER_FIELDS_BESIDE, 'status'] },
  },
  {
    name: 'ordersByPetDate',
    partitionKey: petId,
    sortKeys: [instant, orderId],
    projection: { include: [...ORDER_FIELDS_BESIDE, 'status'] },
  },
  // A date range of pending or cancelled orders: the few that are not shipped, by ship date,
  // without reading the shipped ones of the range (a sparse index: only orders that hold `u`).
  {
    name: 'ordersUnshippedByDate',
    partitionKey: unshippedShard,
    sortKeys: [instant, orderId],
    projection: { include: ['petId', ...ORDER_FIELDS_BESIDE, 'status'] },
  },
] as const satisfies readonly GlobalIndexDefinition[];

export const TABLES = {
  orders: {
    id: 'Orders',
    envVar: 'ORDERS_TABLE',
    partitionKey: shard,
    sortKey: orderId,
    // What a new table gets; a table of 1.0.0 gets them one deploy at a time (see above).
    globalIndexes: ORDER_INDEXES,
    pointInTimeRecovery: true,
  },
  apiKeys: {
    id: 'ApiKeys',
    envVar: 'API_KEYS_TABLE',
    partitionKey: { name: 'keyHash', type: 'S' },
    // Finds a key's hash by its public id (the record is then read from the table).
    globalIndexes: [
      {
        name: 'byKeyId',
        partitionKey: { name: 'keyId', type: 'S' },
        sortKeys: [],
        projection: 'KEYS_ONLY',
      },
    ],
    pointInTimeRecovery: true,
  },
  rateLimits: {
    id: 'RateLimits',
    envVar: 'RATE_LIMITS_TABLE',
    partitionKey: { name: 'pk', type: 'S' },
    timeToLiveAttribute: 'expiresAt',
    pointInTimeRecovery: false,
  },
} as const satisfies Record<string, TableDefinition>;

export type TableName = keyof typeof TABLES;

/** The v2 list's indexes, by name. */
export type OrderIndexName = (typeof ORDER_INDEXES)[number]['name'];
export const ORDER_INDEX_NAMES: readonly OrderIndexName[] = ORDER_INDEXES.map(
  (index) => index.name,
);

/** The definition of one of the orders table's indexes. */
export function orderIndexDefinition(name: OrderIndexName): GlobalIndexDefinition {
  return ORDER_INDEXES.find((index) => index.name === name)!;
}

export type TableNames = Record<TableName, string>;

/** Shard of an order id (ids may be negative: the remainder is taken non-negative). */
export function orderShard(id: bigint): number {
  const shards = BigInt(ORDER_SHARDS);
  return Number(((id % shards) + shards) % shards);
}

/**
 * Where a store of orders keeps them and the list's version items, by key: the service's orders
 * (ORDER_PARTITIONS), or the deploy check's (DEPLOY_CHECK_PARTITIONS).
 */
export interface OrderPartitions {
  /** The partition (`shard`) of an order, which its index partitions carry too (`s`). */
  readonly shardOf: (id: bigint) => number;
  /** The key of list version item `index` (0 to LIST_VERSION_SLOTS − 1). */
  readonly versionKey: (index: number) => { readonly shard: number; readonly id: number };
}

export const ORDER_PARTITIONS: OrderPartitions = {
  shardOf: orderShard,
  versionKey: listVersionKey,
};

/**
 * The deploy check's partition (lib/deploy-check.ts): its order in `shard` −200 and its version
 * items in −201, partitions no order and no other item uses. The lists read shards 0 to
 * ORDER_SHARDS − 1 and the version items of ORDER_PARTITIONS; the v2 list's status index is
 * read in the partitions `p0` to `c7` (`s`), and its order, keyed `p-200` (or `c-200`), has no
 * pet and no ship date, so no other index holds it: no list ever shows it.
 */
export const DEPLOY_CHECK_SHARD = -200;
export const DEPLOY_CHECK_PARTITIONS: OrderPartitions = {
  shardOf: () => DEPLOY_CHECK_SHARD,
  versionKey: (index) => ({ shard: DEPLOY_CHECK_SHARD - 1, id: index }),
};

/**
 * The table definitions, shared by the CDK stack and the local emulator: key schema, indexes,
 * TTL attribute and the environment variable that carries each table's name to the functions.
 * Written without AWS types so that both sides translate them.
 */
export type KeyType = 'S' | 'N';

export interface GlobalIndexDefinition {
  readonly name: string;
  readonly partitionKey: { readonly name: string; readonly type: KeyType };
  readonly sortKey?: { readonly name: string; readonly type: KeyType };
  /** KEYS_ONLY: the index holds its key and the table's key, nothing else. */
  readonly projection: 'ALL' | 'KEYS_ONLY';
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
 * The list's version items (what its ETag is made of; lib/dynamodb/list-version.ts): this many
 * items in the orders table, each in a partition of its own that no order uses (`shard` −1 to
 * −LIST_VERSION_ITEMS, `id` 0), so that the writes they take are spread like the orders'.
 * Every write of orders marks one of them, chosen at random, before it writes and releases it
 * after: 2 WCU of one item (items under 1 KB). 32 × 1,000 WCU/s ÷ 2 = 16,000 writes a second,
 * twice the orders' own ceiling (8 partitions × 1,000 WCU/s), so that no version item binds
 * first however the random choices fall. A 304 reads them all: one BatchGetItem (at most 100
 * keys), strongly consistent, 32 RCU.
 */
export const LIST_VERSION_ITEMS = 32;

/** The key of list version item `index` (0 to LIST_VERSION_ITEMS − 1). */
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
 * of the store (lib/dynamodb/order-index-keys.ts computes them):
 * - `statusKey`: `<status>#<shard>`, the effective status (absent = pending) and the order's
 *   shard, so that each status is spread over ORDER_SHARDS index partitions, as the table is;
 * - `dateKey`: the ship date's instant and the id in fixed-width digits, so that its byte order
 *   is the order of (instant, id); absent when the ship date is not an RFC 3339 date-time.
 */
export const ORDER_INDEX_ATTRIBUTES = { statusKey: 'statusKey', dateKey: 'dateKey' } as const;

const petId = { name: 'petId', type: 'N' } as const;
const orderId = { name: 'id', type: 'N' } as const;
const statusKey = { name: ORDER_INDEX_ATTRIBUTES.statusKey, type: 'S' } as const;
const dateKey = { name: ORDER_INDEX_ATTRIBUTES.dateKey, type: 'S' } as const;

export const TABLES = {
  orders: {
    id: 'Orders',
    envVar: 'ORDERS_TABLE',
    partitionKey: { name: 'shard', type: 'N' },
    sortKey: orderId,
    // The v2 list's indexes (lib/dynamodb/order-pages.ts), KEYS_ONLY: an entry is rewritten only
    // when its key changes, so a cancel or a ship rewrites the two status indexes and never the
    // pet ones. byPet comes first: it needs no derived attribute, so DynamoDB's own backfill
    // covers the orders stored before it.
    globalIndexes: [
      { name: 'byPet', partitionKey: petId, sortKey: orderId, projection: 'KEYS_ONLY' },
      { name: 'byStatus', partitionKey: statusKey, sortKey: orderId, projection: 'KEYS_ONLY' },
      { name: 'byStatusDate', partitionKey: statusKey, sortKey: dateKey, projection: 'KEYS_ONLY' },
      { name: 'byPetDate', partitionKey: petId, sortKey: dateKey, projection: 'KEYS_ONLY' },
    ],
    pointInTimeRecovery: true,
  },
  apiKeys: {
    id: 'ApiKeys',
    envVar: 'API_KEYS_TABLE',
    partitionKey: { name: 'keyHash', type: 'S' },
    // Finds a key's hash by its public id (the record is then read from the table).
    globalIndexes: [
      { name: 'byKeyId', partitionKey: { name: 'keyId', type: 'S' }, projection: 'KEYS_ONLY' },
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

/** The orders table's global indexes, in the order a live table gets them. */
export type OrderIndexName = (typeof TABLES.orders.globalIndexes)[number]['name'];
export const ORDER_INDEX_NAMES: readonly OrderIndexName[] = TABLES.orders.globalIndexes.map(
  (index) => index.name,
);
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
  /** The partition (`shard`) of an order, which its index partitions carry too (`statusKey`). */
  readonly shardOf: (id: bigint) => number;
  /** The key of list version item `index` (0 to LIST_VERSION_ITEMS − 1). */
  readonly versionKey: (index: number) => { readonly shard: number; readonly id: number };
}

export const ORDER_PARTITIONS: OrderPartitions = {
  shardOf: orderShard,
  versionKey: listVersionKey,
};

/**
 * The deploy check's partition (lib/deploy-check.ts): its order in `shard` −200 and its version
 * items in −201, partitions no order and no other item uses. The lists read shards 0 to
 * ORDER_SHARDS − 1 and the version items of ORDER_PARTITIONS; the v2 list's status indexes are
 * read in the partitions `<status>#0` to `<status>#7`, and its order, keyed `<status>#-200`,
 * has no pet and no ship date, so no other index holds it: no list ever shows it.
 */
export const DEPLOY_CHECK_SHARD = -200;
export const DEPLOY_CHECK_PARTITIONS: OrderPartitions = {
  shardOf: () => DEPLOY_CHECK_SHARD,
  versionKey: (index) => ({ shard: DEPLOY_CHECK_SHARD - 1, id: index }),
};

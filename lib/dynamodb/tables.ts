/**
 * The table definitions, shared by the CDK stack and the local emulator: key schema, indexes,
 * TTL attribute and the environment variable that carries each table's name to the functions.
 * Written without AWS types so that both sides translate them.
 */
export type KeyType = 'S' | 'N';

export interface TableDefinition {
  /** Construct id in CDK and suffix of the local table name. */
  readonly id: string;
  readonly envVar: string;
  readonly partitionKey: { readonly name: string; readonly type: KeyType };
  readonly sortKey?: { readonly name: string; readonly type: KeyType };
  readonly globalIndexes?: readonly {
    readonly name: string;
    readonly partitionKey: { readonly name: string; readonly type: KeyType };
    /** KEYS_ONLY: the index holds its key and the table's key, nothing else. */
    readonly projection: 'ALL' | 'KEYS_ONLY';
  }[];
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

export const TABLES = {
  orders: {
    id: 'Orders',
    envVar: 'ORDERS_TABLE',
    partitionKey: { name: 'shard', type: 'N' },
    sortKey: { name: 'id', type: 'N' },
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
export type TableNames = Record<TableName, string>;

/** Shard of an order id (ids may be negative: the remainder is taken non-negative). */
export function orderShard(id: bigint): number {
  const shards = BigInt(ORDER_SHARDS);
  return Number(((id % shards) + shards) % shards);
}

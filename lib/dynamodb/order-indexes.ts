/**
 * Which of the orders table's global indexes a stage has, as the functions learn it: the stack
 * sets ORDERS_INDEXES from the stage's `ordersIndexes` setting (infra/config.ts), the local API
 * to the current ones. A filter whose index is not there is answered 503 (not yet), never read
 * from an index that may still be backfilling.
 *
 * A stage that still has an index of the first release (./tables.ts,
 * FIRST_RELEASE_ORDER_INDEXES) is moving to the current ones, one index a deploy
 * (docs/deploy.md, "The v2 list's indexes"); while it does, what the first release's code needs
 * is written beside what this code needs (`firstReleaseWrites`).
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { requireEnv } from '../config/env.ts';
import { send } from './errors.ts';
import {
  FIRST_RELEASE_ORDER_INDEX_NAMES,
  ORDER_INDEX_NAMES,
  type OrderIndexName,
} from './tables.ts';

export const ORDERS_INDEXES_ENV = 'ORDERS_INDEXES';

/** The value for a stage without any of them (an empty variable reads as unset). */
const NONE = 'none';

/** Every index name this code knows: the current ones and the first release's. */
export const KNOWN_ORDER_INDEX_NAMES: readonly OrderIndexName[] = [
  ...ORDER_INDEX_NAMES,
  ...FIRST_RELEASE_ORDER_INDEX_NAMES,
];

/** The environment that names a stage's indexes (the current ones by default: the local API). */
export function ordersIndexesEnv(
  names: readonly OrderIndexName[] = ORDER_INDEX_NAMES,
): Record<string, string> {
  return { [ORDERS_INDEXES_ENV]: names.length > 0 ? names.join(',') : NONE };
}

/**
 * The indexes ORDERS_INDEXES names (comma-separated, or `none`). Fails fast, naming the
 * variable, when it is unset or names an index this code does not know.
 */
export function deployedOrderIndexes(
  env: NodeJS.ProcessEnv = process.env,
): ReadonlySet<OrderIndexName> {
  const value = requireEnv(ORDERS_INDEXES_ENV, env).trim();
  if (value === NONE) return new Set();
  const names = value.split(',').map((name) => name.trim());
  const unknown = names.filter(
    (name) => !(KNOWN_ORDER_INDEX_NAMES as readonly string[]).includes(name),
  );
  if (unknown.length > 0) {
    throw new Error(
      `Environment variable ${ORDERS_INDEXES_ENV} names unknown indexes (${unknown.join(', ')}): ` +
        `expected ${NONE} or some of ${KNOWN_ORDER_INDEX_NAMES.join(', ')}`,
    );
  }
  return new Set(names as OrderIndexName[]);
}

/**
 * The indexes an orders table has, as DynamoDB describes it (in any state: one being created or
 * deleted is written with the table), those this code knows by name: what the operator's CLI
 * reads once per command, so that its writes do what the functions of the table's stage do.
 */
export async function describeOrderIndexes(
  client: DynamoDBDocumentClient,
  tableName: string,
  signal?: AbortSignal,
): Promise<Set<OrderIndexName>> {
  const { Table } = await send(
    'orders table (its indexes)',
    (abortSignal) =>
      client.send(new DescribeTableCommand({ TableName: tableName }), { abortSignal }),
    signal,
  );
  const names = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  return new Set(KNOWN_ORDER_INDEX_NAMES.filter((name) => names.has(name)));
}

/**
 * What a write of orders must also do for the first release's code while a stage has an index of
 * that release (its code may still run: a deploy's old version while traffic shifts):
 * - `status`: a cancel sets `status` to cancelled as that code did (this code records a cancel
 *   in its trail and leaves `status` alone; the first release reads `status` only);
 * - `keys`: every write also writes `statusKey` and `dateKey`, the keys of that release's
 *   byStatus, byStatusDate and byPetDate, so that they stay right for its pages.
 */
export interface FirstReleaseWrites {
  readonly status: boolean;
  readonly keys: boolean;
}

export function firstReleaseWrites(indexes: ReadonlySet<OrderIndexName>): FirstReleaseWrites {
  const has = (name: OrderIndexName) => indexes.has(name);
  return {
    status: FIRST_RELEASE_ORDER_INDEX_NAMES.some(has),
    keys: (['byStatus', 'byStatusDate', 'byPetDate'] as const).some(has),
  };
}

/** What a store writes for a stage that has none of the first release's indexes. */
export const NO_FIRST_RELEASE_WRITES: FirstReleaseWrites = { status: false, keys: false };

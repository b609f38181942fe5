/**
 * Which of the orders table's global indexes a stage has, as the functions learn it: the stack
 * sets ORDERS_INDEXES from the stage's `ordersIndexes` setting (infra/config.ts), the local API
 * to all of them. A filter whose index is not there is answered 503 (not yet), never read from
 * an index that may still be backfilling.
 */
import { requireEnv } from '../config/env.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from './tables.ts';

export const ORDERS_INDEXES_ENV = 'ORDERS_INDEXES';

/** The value for a stage without any of them (an empty variable reads as unset). */
const NONE = 'none';

/**
 * The indexes a stage with `ordersIndexes` = count has: the first ones (what its function may be
 * granted `dynamodb:Query` on, index by index: `<table ARN>/index/<name>`).
 */
export function stageOrderIndexes(count: number = ORDER_INDEX_NAMES.length): OrderIndexName[] {
  if (!Number.isInteger(count) || count < 0 || count > ORDER_INDEX_NAMES.length) {
    throw new RangeError(`ordersIndexes must be 0 to ${ORDER_INDEX_NAMES.length}, got ${count}`);
  }
  return ORDER_INDEX_NAMES.slice(0, count);
}

/** The environment that names the first `count` indexes (a stage's `ordersIndexes`). */
export function ordersIndexesEnv(count: number = ORDER_INDEX_NAMES.length): Record<string, string> {
  const names = stageOrderIndexes(count);
  return { [ORDERS_INDEXES_ENV]: names.length > 0 ? names.join(',') : NONE };
}

/**
 * The indexes ORDERS_INDEXES names (comma-separated, or `none`). Fails fast, naming the
 * variable, when it is unset or names an index the table definition does not have.
 */
export function deployedOrderIndexes(
  env: NodeJS.ProcessEnv = process.env,
): ReadonlySet<OrderIndexName> {
  const value = requireEnv(ORDERS_INDEXES_ENV, env).trim();
  if (value === NONE) return new Set();
  const names = value.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(ORDER_INDEX_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `Environment variable ${ORDERS_INDEXES_ENV} names unknown indexes (${unknown.join(', ')}): ` +
        `expected ${NONE} or some of ${ORDER_INDEX_NAMES.join(', ')}`,
    );
  }
  return new Set(names as OrderIndexName[]);
}

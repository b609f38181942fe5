/**
 * Which of the orders table's global indexes a stage has, as the functions learn it: the stack
 * sets ORDERS_INDEXES from the stage's `ordersIndexes` setting (infra/config.ts; all of them
 * unless a stage upgrading from 1.0.0 adds them one deploy at a time), the local API from the
 * table it serves. A filter whose index is not there is answered 503 (not yet), never read from
 * an index that may still be backfilling.
 */
import { requireEnv } from '../config/env.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from './tables.ts';

export const ORDERS_INDEXES_ENV = 'ORDERS_INDEXES';

/** The value for a stage without any of them (an empty variable reads as unset). */
const NONE = 'none';

/** The environment that names a stage's indexes (all of them by default). */
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
  const unknown = names.filter((name) => !(ORDER_INDEX_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `Environment variable ${ORDERS_INDEXES_ENV} names unknown indexes (${unknown.join(', ')}): ` +
        `expected ${NONE} or some of ${ORDER_INDEX_NAMES.join(', ')}`,
    );
  }
  return new Set(names as OrderIndexName[]);
}

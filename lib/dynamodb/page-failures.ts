/**
 * How the page reader's own failures are named (./order-pages.ts); every other failure of its
 * calls is named as for every call of lib/dynamodb (./errors.ts `send`, the request's deadline):
 *
 * - an index not in ORDERS_INDEXES, one still backfilling, or one keyed by the derived attributes
 *   before the readiness marker is there (./index-readiness.ts): transient, `index-not-ready`
 *   (503 with Retry-After);
 * - an index ORDERS_INDEXES names that the table lacks: permanent, `index-missing` (a
 *   misconfigured stage: 500 and an alarm);
 * - a key a Query gave that is not one: permanent, `malformed-item`.
 */
import { DependencyFailure, INDEX_NOT_READY } from '../failures.ts';

/** How failures of the pages are named in logs. */
export const PAGES_DEPENDENCY = 'orders table (pages)';

function indexNotReady(source: string, why: string, cause?: unknown): DependencyFailure {
  return new DependencyFailure('transient', PAGES_DEPENDENCY, INDEX_NOT_READY, {
    message: `${PAGES_DEPENDENCY}: index ${source} is not ready: ${why} (transient)`,
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** The index a filter needs is not deployed on this stage yet (known before any read). */
export function indexNotDeployed(source: string): DependencyFailure {
  return indexNotReady(source, 'it is not deployed yet (ORDERS_INDEXES)');
}

/** The readiness marker is not there: not every order holds the index's attributes yet. */
export function ordersNotIndexed(source: string): DependencyFailure {
  return indexNotReady(
    source,
    'not every order holds its index attributes yet (run orders reindex)',
  );
}

/** A Query's failure in the index's terms: backfilling (transient), missing (permanent). */
export function queryFailure(error: unknown, source: string): unknown {
  if (!(error instanceof DependencyFailure) || error.reason !== 'validation') return error;
  const message = error.cause instanceof Error ? error.cause.message : '';
  if (/backfilling global secondary index/i.test(message)) {
    return indexNotReady(source, 'it is backfilling', error);
  }
  if (/does not have the specified index/i.test(message)) {
    return new DependencyFailure('permanent', PAGES_DEPENDENCY, 'index-missing', {
      message: `${PAGES_DEPENDENCY}: the table has no index ${source}, which ORDERS_INDEXES names (permanent)`,
      cause: error,
    });
  }
  return error;
}

/** A key a Query of `source` gave that is not one of its keys. */
export function malformedKey(source: string, what: string): DependencyFailure {
  return new DependencyFailure('permanent', PAGES_DEPENDENCY, 'malformed-item', {
    message: `${PAGES_DEPENDENCY}: ${source} returned ${what} (permanent)`,
  });
}

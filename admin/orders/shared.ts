/**
 * What the `orders` commands share: the orders store of a command's target, how long an
 * operator's write may still land, the <order-id> argument.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OPERATOR_LIST_VERSION_ITEMS } from '../../lib/dynamodb/list-version-items.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { readOrderId } from '../../lib/orders/operations.ts';
import { ADMIN_ATTEMPTS, adminAttemptMs, UsageError } from '../common.ts';
import { withTable, type Target, type TargetValues } from '../target.ts';

/**
 * How long after its mark an operator's write of orders may still land (the list has no ETag
 * meanwhile, lib/dynamodb/list-version.ts): every attempt of one call, then five minutes — as
 * far as an operator's clock may be from AWS's and still sign requests (SigV4's tolerance).
 */
export function adminWriteLeaseMs(env: NodeJS.ProcessEnv = process.env): number {
  return ADMIN_ATTEMPTS * adminAttemptMs(env) + OPERATOR_CLOCK_SKEW_MS;
}

/**
 * How far behind AWS's clock an operator's may be, and still sign a request (SigV4's tolerance:
 * five minutes): the CLI stamps its changes that far ahead, so that a change of a laptop whose
 * clock is behind is never taken for older than it is (its orders' pages are read again by key
 * that much longer: lib/dynamodb/list-version.ts, clockSkewMs).
 */
export const OPERATOR_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The operator's clock: the machine's, off by STORE_ORDERS_ADMIN_CLOCK_OFFSET_MS when given (a
 * test's operator whose clock is wrong: test/e2e/lagging-index.test.ts).
 */
export function operatorClock(env: NodeJS.ProcessEnv = process.env): () => number {
  const offset = Number(env.STORE_ORDERS_ADMIN_CLOCK_OFFSET_MS ?? 0);
  return () => Date.now() + (Number.isFinite(offset) ? offset : 0);
}

/** How an operator's writes keep the list's version (its lease, its clock, the item it marks). */
export function operatorListVersion(env: NodeJS.ProcessEnv = process.env) {
  return {
    leaseMs: adminWriteLeaseMs(env),
    items: OPERATOR_LIST_VERSION_ITEMS,
    now: operatorClock(env),
    clockSkewMs: OPERATOR_CLOCK_SKEW_MS,
  };
}

/** The orders store of a command's target. */
function orderStore(client: DynamoDBDocumentClient, table: string) {
  return new DynamoDbOrderStore(client, table, { listVersion: operatorListVersion() });
}

/** Runs `action` with the orders store of the target the flags name. */
export function withOrderStore<T>(
  values: TargetValues,
  action: (store: DynamoDbOrderStore, target: Target, table: string) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(orderStore(client, table), target, table),
  );
}

/** The <order-id> argument: an int64, exact to the digit; anything else is a usage error. */
export function orderIdArgument(raw: string | undefined): bigint {
  const read = readOrderId(raw);
  if (read.id === undefined) {
    throw new UsageError(
      `order id must be a base-10 integer in the int64 range, got "${read.shown ?? ''}"`,
    );
  }
  return read.id;
}

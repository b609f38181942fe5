/**
 * What the `orders` commands share: the orders store of a command's target (for a command that
 * writes orders, its writes as the table's indexes say), how long an operator's write may still
 * land, the <order-id> argument.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OPERATOR_LIST_VERSION_ITEMS } from '../../lib/dynamodb/list-version-items.ts';
import {
  describeOrderIndexes,
  firstReleaseWrites,
  type FirstReleaseWrites,
} from '../../lib/dynamodb/order-indexes.ts';
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
  return ADMIN_ATTEMPTS * adminAttemptMs(env) + 5 * 60_000;
}

/** The orders store of a command's target (its writes as `firstRelease` says: withOrderWrites). */
function orderStore(
  client: DynamoDBDocumentClient,
  table: string,
  firstRelease?: FirstReleaseWrites,
) {
  return new DynamoDbOrderStore(client, table, {
    listVersion: { leaseMs: adminWriteLeaseMs(), items: OPERATOR_LIST_VERSION_ITEMS },
    ...(firstRelease ? { firstRelease } : {}),
  });
}

/**
 * Runs `action` with the orders store of the target the flags name, for a command that writes
 * no order (withOrderWrites for one that does).
 */
export function withOrderStore<T>(
  values: TargetValues,
  action: (store: DynamoDbOrderStore, target: Target, table: string) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(orderStore(client, table), target, table),
  );
}

/**
 * As withOrderStore, for a command that writes orders (import, ship): `openStore()` first reads
 * which indexes the table has (DescribeTable, once), so that the store's writes do what the
 * functions of the table's stage do (lib/dynamodb/order-indexes.ts, firstReleaseWrites). The
 * command calls it once its own checks have passed (an import file is read first).
 */
export function withOrderWrites<T>(
  values: TargetValues,
  action: (
    openStore: () => Promise<DynamoDbOrderStore>,
    target: Target,
    table: string,
  ) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(
      async () =>
        orderStore(client, table, firstReleaseWrites(await describeOrderIndexes(client, table))),
      target,
      table,
    ),
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

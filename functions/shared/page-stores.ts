/**
 * The v2 list's page reader, created at its first use from the environment: the orders table, the
 * indexes the stage has (ORDERS_INDEXES) and whether they await a reindex (ORDERS_AWAIT_REINDEX),
 * on the container's client (./stores.ts). A module of
 * its own so that only the function that reads pages (list-order-pages.ts) bundles it:
 * lib/dynamodb/order-pages.ts, with the filters, index readiness and planning it brings, is code
 * that every cold cancel and v1 list would otherwise parse for nothing
 * (test/unit/function-bundles.test.ts keeps it out of their bundles).
 */
import { requireEnv } from '../../lib/config/env.ts';
import { awaitReindexFromEnv } from '../../lib/dynamodb/index-readiness.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { deployedOrderIndexes } from '../../lib/dynamodb/order-indexes.ts';
import { TABLES } from '../../lib/dynamodb/tables.ts';
import { client } from './stores.ts';

/** The v2 list's pages, made at the first call. */
export function orderPagesFromEnv(): () => DynamoDbOrderPages {
  let pages: DynamoDbOrderPages | undefined;
  return () =>
    (pages ??= new DynamoDbOrderPages(client, requireEnv(TABLES.orders.envVar), {
      indexes: deployedOrderIndexes(),
      awaitReindex: awaitReindexFromEnv(),
    }));
}

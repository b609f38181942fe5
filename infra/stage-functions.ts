/**
 * A stage's four functions (lib/functions.ts: entry, memory, timeout), each with its environment,
 * its concurrency and exactly the grants its code uses, table by table (`useTable`): what each
 * may do is written here once, and test/infra/stacks.test.ts holds it to what the code calls.
 */
import type { CfnResource, Stack } from 'aws-cdk-lib';
import {
  formatListVersionItems,
  LIST_VERSION_ITEMS_ENV,
} from '../lib/dynamodb/list-version-items.ts';
import { AWAIT_REINDEX_ENV } from '../lib/dynamodb/index-readiness.ts';
import { ordersIndexesEnv } from '../lib/dynamodb/order-indexes.ts';
import { logGroupName } from '../lib/deployment.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageConfig } from './config.ts';
import { ServiceFunction, type ServiceFunctionProps } from './constructs/service-function.ts';
import type { StageTables } from './data-stack.ts';

/** The functions of a stage, children of its stack (their ids are the template's). */
export function stageFunctions(
  stack: Stack,
  config: StageConfig,
  tables: StageTables,
): Readonly<Record<FunctionName, ServiceFunction>> {
  /** A function under its construct id (`ListOrders`), with what every one of them shares. */
  const serviceFunction = (name: FunctionName, props: Partial<ServiceFunctionProps> = {}) =>
    new ServiceFunction(stack, `${name.charAt(0).toUpperCase()}${name.slice(1)}`, {
      definition: FUNCTIONS[name],
      logGroupName: logGroupName(config.stage, name),
      logRetention: config.logRetention,
      logRemovalPolicy: config.removalPolicy,
      logLevel: config.logLevel,
      metricsNamespace: stageMetricsNamespace(config.stage),
      provisionedConcurrency: config.concurrency.provisioned[name],
      ...props,
    });
  const limiterEnvironment = {
    RATE_LIMIT_FAILURE_MODE: config.rateLimiter.failureMode,
    RATE_LIMIT_BAN_AFTER_REFUSALS: String(config.rateLimiter.banAfterRefusals),
    RATE_LIMIT_BAN_SECONDS: String(config.rateLimiter.banSeconds),
  };
  // What every function that reads or writes orders learns of the stage's orders table: its
  // list version items; and, for the page reader, its indexes and whether they await a reindex.
  const ordersEnvironment = {
    [LIST_VERSION_ITEMS_ENV]: formatListVersionItems(config.listVersionItems),
  };
  const pagesEnvironment = {
    ...ordersEnvironment,
    ...ordersIndexesEnv(config.ordersIndexes),
    ...(config.ordersAwaitReindex ? { [AWAIT_REINDEX_ENV]: 'true' } : {}),
  };
  // listOrders holds an execution for as long as it streams: its reserved concurrency caps it,
  // so that long lists cannot take every execution from cancelOrder and the authorizer.
  const listOrders = serviceFunction('listOrders', {
    environment: { ...limiterEnvironment, ...ordersEnvironment },
    reservedConcurrentExecutions: config.concurrency.listOrdersReserved,
  })
    // BatchGetItem: the list's version items (its ETag), in the orders table.
    .useTable('orders', tables.orders, ['dynamodb:Query', 'dynamodb:BatchGetItem'])
    .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
  const cancelOrder = serviceFunction('cancelOrder', {
    environment: { ...limiterEnvironment, ...ordersEnvironment },
  })
    // GetItem: whether the cancel would change anything, read before the version's mark.
    .useTable('orders', tables.orders, ['dynamodb:GetItem', 'dynamodb:UpdateItem'])
    .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
  // The v2 list: the table's shards, and the indexes the stage has (one per deploy: config.ts).
  const listOrderPages = serviceFunction('listOrderPages', {
    environment: { ...limiterEnvironment, ...pagesEnvironment },
  })
    // Query: the shards and the indexes; BatchGetItem: the version items and a page's orders
    // by key (strongly consistent); GetItem: the indexes' readiness marker.
    .useTable(
      'orders',
      tables.orders,
      ['dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:GetItem'],
      { queriedIndexes: config.ordersIndexes },
    )
    .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
  const authorizer = serviceFunction('authorizer').useTable('apiKeys', tables.apiKeys, [
    'dynamodb:GetItem',
  ]);
  // Readers before writers: a cancel's code changes only once both lists' code has (a release's
  // readers read what its writers write; release 1.0.0's list reads a cancel in `status` alone,
  // which this code's cancel leaves: docs/upgrade-from-1.0.0.md). The functions' own resources
  // only: each one's traffic shift stays its own.
  for (const reader of [listOrders, listOrderPages]) {
    (cancelOrder.node.defaultChild as CfnResource).addDependency(
      reader.node.defaultChild as CfnResource,
    );
  }
  return { listOrders, listOrderPages, cancelOrder, authorizer };
}

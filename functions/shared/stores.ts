/**
 * The stores a function uses. The DynamoDB clients are created as the function loads (Lambda's
 * init, outside the handler, as AWS recommends); the stores at the first call, from the
 * environment: each function asks only for what it uses, so it only needs the variables (and
 * permissions) of its tables. Every DynamoDB call is recorded (./dynamodb-calls.ts).
 */
import { requireEnv } from '../../lib/config/env.ts';
import {
  attemptTimeouts,
  connectionFromEnv,
  createDocumentClient,
  createSingleAttemptClient,
} from '../../lib/dynamodb/client.ts';
import { deliveryWatchingAgents } from '../../lib/dynamodb/undelivered.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { listVersionItemsFromEnv } from '../../lib/dynamodb/list-version-items.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DEPLOY_CHECK_PARTITIONS, TABLES } from '../../lib/dynamodb/tables.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { limiterSettingsFromEnv, type LimiterSettings } from '../../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { recordCalls } from './dynamodb-calls.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit } from './metrics.ts';
type DocumentClient = ReturnType<typeof createDocumentClient>;

/**
 * The container's one pool of connections, shared by its clients: a connection one client opened
 * and finished with serves the other's next call (a list's first request: 8 connections, not 9).
 * The agents watch every request: the rate limiter's proof of non-delivery (lib/dynamodb/undelivered.ts).
 */
const agents = deliveryWatchingAgents();

/** The container's client, created at load (./page-stores.ts uses it too). */
export const client = recordCalls(
  createDocumentClient(connectionFromEnv(), {
    requestHandler: { ...attemptTimeouts(), ...agents },
  }),
);

/**
 * What a function does when a write's release of the list version failed (the write stands; the
 * list has no ETag until the write's lease ends): a warning and a metric.
 */
export function onListVersionReleaseFailure(error: unknown): void {
  metrics.addMetric(METRIC_NAMES.listVersionReleaseFailures, MetricUnit.Count, 1);
  logger.warn("List version release failed: the list has no ETag until the write's lease ends", {
    error: error as Error,
  });
}

/** The orders store (of the deploy check's partitions, with `partitions`). */
function orderStoreFromEnv(partitions?: typeof DEPLOY_CHECK_PARTITIONS): DynamoDbOrderStore {
  return new DynamoDbOrderStore(client, requireEnv(TABLES.orders.envVar), {
    listVersion: {
      items: listVersionItemsFromEnv(),
      onReleaseFailure: onListVersionReleaseFailure,
    },
    ...(partitions ? { partitions } : {}),
  });
}

export function keyStoreFromEnv(): DynamoDbKeyStore {
  return new DynamoDbKeyStore(client, requireEnv(TABLES.apiKeys.envVar));
}

/** What a function does when the limiter's store fails transiently: a warning and a metric. */
export function onLimiterStoreFailure(settings: LimiterSettings): (error: unknown) => void {
  return (error) => {
    metrics.addMetric(METRIC_NAMES.limiterStoreFailures, MetricUnit.Count, 1);
    logger.warn(`Rate limiter store failed: failing ${settings.failureMode}`, {
      error: error as Error,
    });
  };
}

function rateLimiterFromEnv(limiterClient: DocumentClient): DynamoDbRateLimiter {
  const settings = limiterSettingsFromEnv();
  return new DynamoDbRateLimiter(limiterClient, requireEnv(TABLES.rateLimits.envVar), {
    settings,
    onStoreFailure: onLimiterStoreFailure(settings),
  });
}

/**
 * The stores of a function that counts requests: the rate limiter's client (one attempt a call)
 * created now, at load; the orders and the limiter at their first use. (The v2 list's pages are
 * in ./page-stores.ts, so that only the function that reads pages carries their code.)
 */
export function httpStoresFromEnv() {
  const limiterClient = recordCalls(createSingleAttemptClient(connectionFromEnv(), agents));
  let orders: DynamoDbOrderStore | undefined;
  let deployCheckOrders: DynamoDbOrderStore | undefined;
  let limiter: DynamoDbRateLimiter | undefined;
  return {
    orders: () => (orders ??= orderStoreFromEnv()),
    // The deploy check's partition of the orders table (lib/deploy-check.ts).
    deployCheckOrders: () => (deployCheckOrders ??= orderStoreFromEnv(DEPLOY_CHECK_PARTITIONS)),
    limiter: () => (limiter ??= rateLimiterFromEnv(limiterClient)),
  };
}

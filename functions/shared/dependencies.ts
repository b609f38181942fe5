/**
 * The stores a function uses, built once per cold start from the environment. Each function
 * asks only for what it uses, so it only needs the variables (and permissions) of its tables.
 * Every DynamoDB call is recorded (./dynamodb-calls.ts).
 */
import { requireEnv } from '../../lib/config/env.ts';
import {
  connectionFromEnv,
  createDocumentClient,
  createSingleAttemptClient,
} from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { TABLES } from '../../lib/dynamodb/tables.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { limiterSettingsFromEnv, type LimiterSettings } from '../../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { recordCalls } from './dynamodb-calls.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit } from './metrics.ts';
type DocumentClient = ReturnType<typeof createDocumentClient>;

let client: DocumentClient | undefined;

/** The container's one client. */
function documentClient(): DocumentClient {
  client ??= recordCalls(createDocumentClient(connectionFromEnv()));
  return client;
}

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

export function orderStoreFromEnv(): DynamoDbOrderStore {
  return new DynamoDbOrderStore(documentClient(), requireEnv(TABLES.orders.envVar), {
    listVersion: { onReleaseFailure: onListVersionReleaseFailure },
  });
}

export function keyStoreFromEnv(): DynamoDbKeyStore {
  return new DynamoDbKeyStore(documentClient(), requireEnv(TABLES.apiKeys.envVar));
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

export function rateLimiterFromEnv(): DynamoDbRateLimiter {
  const settings = limiterSettingsFromEnv();
  const client = recordCalls(createSingleAttemptClient(connectionFromEnv()));
  return new DynamoDbRateLimiter(client, requireEnv(TABLES.rateLimits.envVar), {
    settings,
    onStoreFailure: onLimiterStoreFailure(settings),
  });
}

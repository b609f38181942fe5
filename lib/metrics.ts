/** Names of the service's own metrics: emitted by the functions, alarmed on by the stack. */
export const METRICS_NAMESPACE = 'StoreOrders';

/** The environment variable that gives a function (or a deploy hook) its stage's namespace. */
export const METRICS_NAMESPACE_ENV = 'METRICS_NAMESPACE';

/** Each deployment stage publishes under its own namespace, so stages never mix. */
export function stageMetricsNamespace(stage: string): string {
  return `${METRICS_NAMESPACE}/${stage}`;
}
export const SERVICE_NAME = 'store-orders';

/**
 * The dimensions of a metric filed by version (functions/shared/metrics.ts): by function, and by
 * function and version, as the deploy judges read them (the same names as the metric filters').
 */
export const VERSION_DIMENSIONS = ['FunctionName', 'FunctionVersion'] as const;

/** The value of the dimension `traffic` on the deploy check's own metrics (lib/deploy-check.ts). */
export const DEPLOY_CHECK_TRAFFIC = 'deploy-check';

export const METRIC_NAMES = {
  /** The rate limiter could not reach its counter store (then fails open or closed). */
  limiterStoreFailures: 'RateLimiterStoreFailures',
  /** Answers 503 SERVICE_UNAVAILABLE: a transient failure of DynamoDB (also the authorizer's). */
  serviceUnavailable: 'ServiceUnavailable',
  /**
   * Answers 500 INTERNAL_ERROR, and the authorizer's permanent failures: a bug, or a permanent
   * failure of DynamoDB (access denied, missing table, validation, malformed stored data).
   */
  internalErrors: 'InternalErrors',
  /** Stored orders listed without a field of the wrong type, or left out (unreadable id). */
  unreadableOrders: 'UnreadableOrders',
  /** Lists that failed after their status line: the client got a cut-off body. */
  listStreamFailures: 'ListStreamFailures',
  /** Bytes a list sent (after content coding), per list: watched against the 200 MB ceiling. */
  listResponseBytes: 'ListResponseBytes',
  /** Orders a list sent, per list. */
  listOrdersSent: 'ListOrdersSent',
  /** Lists answered 304 Not Modified (If-None-Match matched: no order read). */
  listNotModified: 'ListNotModified',
  /**
   * Writes whose release of the list version failed: the write stands, the list has no ETag
   * until the write's lease ends (lib/dynamodb/list-version.ts).
   */
  listVersionReleaseFailures: 'ListVersionReleaseFailures',
  /** Milliseconds of each DynamoDB call of the functions, its SDK retries included. */
  dynamoDbCallDuration: 'DynamoDbCallDuration',
  /**
   * 500 answers to callers (not 503s, not the deploy check's): counted by metric filters on the
   * HTTP functions' error-answer lines (infra/alarms.ts), by FunctionName, and by FunctionName
   * and FunctionVersion, for the deploy judges (lib/deploy-judgement.ts).
   */
  internalErrorAnswers: 'InternalErrorAnswers',
  /**
   * 503 answers to callers (not the deploy check's): a DynamoDB call that failed transiently or
   * ran out of its budget. Counted by metric filters on the HTTP functions' error-answer lines, by
   * the same dimensions as InternalErrorAnswers: the deploy judges compare a new version's share
   * of them with the old version's over the same minutes (lib/deploy-judgement.ts).
   */
  unavailableAnswers: 'UnavailableAnswers',
  /**
   * The authorizer's transient failures (its key store was slow: API Gateway answered 503), by
   * the same metric filters on its log lines: what its failed invocations less these are bugs.
   */
  keyCheckTransientFailures: 'KeyCheckTransientFailures',
  /**
   * Milliseconds from an HTTP function's start to its answer's status line and headers (for a
   * list, before the first order is sent): what a caller waits for its first byte, by version.
   */
  timeToFirstByte: 'TimeToFirstByte',
  /** Requests refused with 429 RATE_LIMITED. */
  rateLimited: 'RateLimited',
  /** Requests refused with 429 API_KEY_TEMPORARILY_BANNED. */
  bannedRequests: 'BannedRequests',
  /** Requests refused with 403 PERMISSION_DENIED: their key may not make them. */
  permissionDenied: 'PermissionDenied',
} as const;

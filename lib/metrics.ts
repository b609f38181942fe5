/** Names of the service's own metrics: emitted by the functions, alarmed on by the stack. */
export const METRICS_NAMESPACE = 'StoreOrders';

/** Each deployment stage publishes under its own namespace, so stages never mix. */
export function stageMetricsNamespace(stage: string): string {
  return `${METRICS_NAMESPACE}/${stage}`;
}
export const SERVICE_NAME = 'store-orders';

export const METRIC_NAMES = {
  /** The rate limiter could not reach its counter store (then fails open or closed). */
  limiterStoreFailures: 'RateLimiterStoreFailures',
  /** Requests refused with 429 RATE_LIMITED. */
  rateLimited: 'RateLimited',
  /** Requests refused with 429 API_KEY_TEMPORARILY_BANNED. */
  bannedRequests: 'BannedRequests',
} as const;

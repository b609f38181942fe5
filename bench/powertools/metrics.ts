/**
 * functions/shared/metrics.ts as it was with Powertools Metrics, for `npm run bench:cold-init --
 * --powertools`: the same exports the functions use.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { entry, scopeKey, type ScopeEntry } from '../../functions/shared/scope.ts';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/metrics.ts';

export { MetricUnit };

export const metrics = new Metrics({
  namespace: process.env.METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  serviceName: SERVICE_NAME,
});

/** Powertools buffers in its one instance: the invocation's scope holds nothing of it. */
const POWERTOOLS_METRICS = scopeKey<undefined>('powertools-metrics');

/** As functions/shared/metrics.ts's (functions/shared/invocation.ts). */
export function invocationMetrics(): ScopeEntry {
  return entry(POWERTOOLS_METRICS, undefined);
}

/** As functions/shared/metrics.ts's: what the invocation recorded, written once. */
export function publishInvocationMetrics(): void {
  metrics.publishStoredMetrics();
}

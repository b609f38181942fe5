import { Metrics } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj } from '@middy/core';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/metrics.ts';

/**
 * The functions' metrics, published as CloudWatch embedded metric format at the end of each call,
 * under the stage's namespace (POWERTOOLS_METRICS_NAMESPACE, set by the stack).
 */
export const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  serviceName: SERVICE_NAME,
});

/**
 * Publishes what a call recorded, if anything. (Powertools' logMetrics warns on every call that
 * recorded nothing, which here is nearly every call.)
 */
export function publishMetrics(): MiddlewareObj {
  const publish = (): void => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: publish, onError: publish };
}

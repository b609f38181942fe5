/**
 * functions/shared/metrics.ts as it was with Powertools Metrics, for `npm run bench:cold-init --
 * --powertools`: the same exports the functions use.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/metrics.ts';

export { MetricUnit };

export const metrics = new Metrics({
  namespace: process.env.METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  serviceName: SERVICE_NAME,
});

import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/metrics.ts';

/** The functions' metrics, published as CloudWatch embedded metric format at the end of each call. */
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });

import { Tracer } from '@aws-lambda-powertools/tracer';
import { SERVICE_NAME } from '../../lib/metrics.ts';

/** X-Ray tracing (Powertools); it switches itself off outside Lambda. */
export const tracer = new Tracer({ serviceName: SERVICE_NAME });

/**
 * X-Ray tracing (Powertools), for the functions that can afford it; it switches itself off
 * outside Lambda. Importing it loads the X-Ray SDK, which tracks every promise of the process
 * through an async hook (cls-hooked): a few microseconds per promise, nothing for the authorizer
 * and cancelOrder, but about 8 µs per order for a list (one core, measured: +55% CPU). listOrders
 * therefore does not import this module; Lambda's active tracing still records its invocations.
 */
import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { MiddlewareObj } from '@middy/core';
import { SERVICE_NAME } from '../../lib/metrics.ts';
import type { ClientTracing } from './dependencies.ts';

export const tracer = new Tracer({ serviceName: SERVICE_NAME });

/** Each DynamoDB call of a client as a subsegment of the invocation's trace. */
export const traceClient: ClientTracing = (client) => tracer.captureAWSv3Client(client);

/** The invocation as a trace; responses may be streams, so the trace records the call only. */
export function traceHandler(): MiddlewareObj {
  return captureLambdaHandler(tracer, { captureResponse: false }) as MiddlewareObj;
}

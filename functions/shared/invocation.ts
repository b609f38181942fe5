/**
 * Each invocation of a function in a scope of its own (./scope.ts), made before anything of it
 * runs: the fields of its log lines (its Lambda context, and the request id API Gateway gave the
 * client when there is one), the record of its DynamoDB calls (./dynamodb-calls.ts) and its
 * metrics (./metrics.ts), both written once with its answer.
 */
import type { Context } from 'aws-lambda';
import { invocationCalls } from './dynamodb-calls.ts';
import { logger } from './logger.ts';
import { invocationMetrics } from './metrics.ts';
import { scoped } from './scope.ts';

/** `handler`, each invocation in its own scope; `requestIdOf`: the id the client sees. */
export function perInvocation<Event, Result>(
  handler: (event: Event, context: Context) => Promise<Result>,
  requestIdOf: (event: Event) => string | undefined = () => undefined,
): (event: Event, context: Context) => Promise<Result> {
  return scoped(
    (event, context) => [
      logger.invocationFields(context, requestIdOf(event)),
      invocationCalls(),
      invocationMetrics(),
    ],
    handler,
  );
}

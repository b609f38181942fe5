/**
 * Each invocation of a function in a scope of its own (./scope.ts), made before anything of it
 * runs: the fields of its log lines (its Lambda context, and the request id API Gateway gave the
 * client when there is one), the record of its DynamoDB calls (./dynamodb-calls.ts) and its
 * metrics (./metrics.ts), both written once with its answer. An invocation by the deploy check
 * (lib/deploy-check.ts) says so in every line (`deploy_check`) and counts apart from the
 * callers (./metrics.ts): what it meets pages no one, and no caller's figure includes it.
 */
import type { Context } from 'aws-lambda';
import { isDeployCheckEvent } from '../../lib/deploy-check.ts';
import { invocationCalls } from './dynamodb-calls.ts';
import { logger } from './logger.ts';
import { invocationMetrics } from './metrics.ts';
import { scoped } from './scope.ts';

/** `handler`, each invocation in its own scope; `requestIdOf`: the id the client sees. */
export function perInvocation<Event, Result>(
  handler: (event: Event, context: Context) => Promise<Result>,
  requestIdOf: (event: Event) => string | undefined = () => undefined,
): (event: Event, context: Context) => Promise<Result> {
  return scoped((event, context) => {
    const deployCheck = isDeployCheckEvent(event);
    const { functionName, functionVersion } = context ?? {};
    return [
      logger.invocationFields(context, requestIdOf(event), { deployCheck }),
      invocationCalls(),
      invocationMetrics({
        deployCheck,
        ...(functionName && functionVersion ? { version: { functionName, functionVersion } } : {}),
      }),
    ];
  }, handler);
}

/**
 * The API-key authorizer (API Gateway TOKEN authorizer). Every answer is a policy that covers
 * every method of the stage (API Gateway caches it by token for the TTL):
 *  - a known, active key: Allow, with the caller's key id, plan and limits as context;
 *  - any other token: Deny → API Gateway's ACCESS_DENIED gateway response, 401 UNAUTHORIZED.
 *    Refusing a key is not an error: the function's Errors metric counts real failures only;
 *  - the key store failed, transiently (throttling, timeout, a dropped connection) or
 *    permanently (missing table, access denied, a malformed key record): the authorizer fails.
 *    API Gateway caches no failure, so the next request after the store recovers gets the
 *    right answer; it answers AUTHORIZER_CONFIGURATION_ERROR, which this API maps to 503 with
 *    Retry-After (a gateway response cannot tell the two kinds apart). A permanent failure
 *    pages through the authorizer's own ERROR log and InternalErrors metric.
 * No Allow is ever returned for a key that was not verified. The lookup has a time budget
 * (TIME_BUDGETS.authorizerMs).
 */
import middy from '@middy/core';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayTokenAuthorizerEvent,
  StatementEffect,
} from 'aws-lambda';
import { signalAt, TIME_BUDGETS } from '../lib/config/budgets.ts';
import { DependencyFailure, isTransient } from '../lib/failures.ts';
import { authenticate, callerToContext } from '../lib/keys/authenticate.ts';
import type { KeyStore } from '../lib/keys/key-store.ts';
import { METRIC_NAMES } from '../lib/metrics.ts';
import { keyStoreFromEnv } from './shared/stores.ts';
import { recordInvocation } from './shared/dynamodb-calls.ts';
import { perInvocation } from './shared/invocation.ts';
import { logger } from './shared/logger.ts';
import { metrics, MetricUnit } from './shared/metrics.ts';

export interface AuthorizerDependencies {
  readonly keys: () => KeyStore;
  readonly now?: () => Date;
}

/** The principal of an answer without an identified caller. */
export const ANONYMOUS = 'anonymous';

/**
 * `arn:aws:execute-api:region:account:apiId/stage/*\/*` from the method ARN of any route, so the
 * cached policy covers every method and path of the stage.
 */
export function stageWideResource(methodArn: string): string {
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*/*`;
}

function policy(
  effect: StatementEffect,
  principalId: string,
  methodArn: string,
  context?: Record<string, string>,
): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [
        { Action: 'execute-api:Invoke', Effect: effect, Resource: stageWideResource(methodArn) },
      ],
    },
    ...(context ? { context } : {}),
  };
}

export function createAuthorizerHandler(deps: AuthorizerDependencies) {
  const authorize = middy(
    async (event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
      const now = deps.now?.() ?? new Date();
      let caller;
      try {
        caller = await authenticate(deps.keys(), event.authorizationToken, now, {
          signal: signalAt(now.getTime() + TIME_BUDGETS.authorizerMs),
        });
      } catch (error) {
        const failure =
          error instanceof DependencyFailure ? error : { kind: 'bug', reason: 'unexpected' };
        const logged = {
          failure: { kind: failure.kind, reason: failure.reason },
          error: error as Error,
        };
        if (isTransient(error)) {
          logger.warn('Key check failed (transient): API Gateway answers 503', logged);
          metrics.addMetric(METRIC_NAMES.serviceUnavailable, MetricUnit.Count, 1);
        } else {
          logger.error('Key check failed (permanent): API Gateway answers 503', logged);
          metrics.addMetric(METRIC_NAMES.internalErrors, MetricUnit.Count, 1);
        }
        // Thrown, never answered: API Gateway caches no failure (an Allow or Deny it would).
        throw new Error('The key store is unavailable', { cause: error });
      }
      if (!caller) {
        logger.info('API key refused');
        return policy('Deny', ANONYMOUS, event.methodArn);
      }
      return policy('Allow', caller.keyId, event.methodArn, callerToContext(caller));
    },
  ).use(recordInvocation());
  // Its scope has no request id: API Gateway gives a TOKEN authorizer none.
  return perInvocation(authorize);
}

let store: KeyStore | undefined;
export const handler = createAuthorizerHandler({
  keys: () => (store ??= keyStoreFromEnv()),
});

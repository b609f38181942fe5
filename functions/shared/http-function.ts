/**
 * The middy chain every HTTP function shares. On the way in: the invocation's log fields (its
 * Lambda context, and the request id API Gateway gave the client as `correlation_id`), the caller (from
 * the authorizer's context), the rate limiter.
 * On an error, in the order middy runs them: the Error shaping and http-error-handler, then the
 * rate-limit headers, then the line of the invocation's DynamoDB calls and the metrics flush.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { requestSignal } from './budget.ts';
import { recordInvocation } from './dynamodb-calls.ts';
import { identifyCaller } from './caller.ts';
import { httpErrors } from './http-errors.ts';
import { logInvocation } from './logger.ts';
import { rateLimit, type RateLimitDependencies } from './rate-limit.ts';

/**
 * The request's deadline, fixed before any step starts work (a list's version read starts before
 * the limiter counts): every DynamoDB call of the invocation then shares it.
 */
function fixDeadline(deps: RateLimitDependencies): MiddlewareObj<APIGatewayProxyEvent> {
  return {
    before: ({ event, context }) => {
      requestSignal(event, context, deps.now?.() ?? Date.now(), deps.requestBudgetMs);
    },
  };
}

/**
 * `beforeLimit`: middlewares whose work may start before the rate limiter counts (and run beside
 * it); their `after` and `onError` run after every answer, refusals included.
 */
export function httpMiddlewares(
  deps: RateLimitDependencies,
  beforeLimit: readonly MiddlewareObj[] = [],
): MiddlewareObj[] {
  return [
    logInvocation() as MiddlewareObj,
    fixDeadline(deps) as MiddlewareObj,
    ...recordInvocation(),
    identifyCaller() as MiddlewareObj,
    ...beforeLimit,
    rateLimit(deps) as MiddlewareObj,
    ...httpErrors(),
  ];
}

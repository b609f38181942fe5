/**
 * An HTTP function: its handler behind the middy chain every HTTP function shares, each
 * invocation in a scope of its own (./invocation.ts), made before the chain starts: the
 * invocation's logger (its Lambda context, and the request id API Gateway gave the client as
 * `correlation_id`), its record of DynamoDB calls, the request's deadline, the caller from the
 * authorizer's context. On the way in: the caller's check, the function's steps that may start
 * before the rate limiter counts, the rate limiter.
 * On an error, in the order middy runs them: the Error shaping and http-error-handler, then the
 * rate-limit headers, then the line of the invocation's DynamoDB calls and the metrics flush.
 */
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { requestDeadline, signalAt } from '../../lib/config/budgets.ts';
import { callerFromContext } from '../../lib/keys/authenticate.ts';
import { CallRecord, recordInvocation } from './dynamodb-calls.ts';
import { httpErrors } from './http-errors.ts';
import { callerOf, httpInvocation, inInvocation, type HttpInvocation } from './invocation.ts';
import { logger } from './logger.ts';
import { rateLimit, type RateLimitDependencies } from './rate-limit.ts';

/**
 * A request's scope. Its deadline is fixed here, before any step starts work (a list's version
 * read starts before the limiter counts): every DynamoDB call of the invocation shares it.
 */
function startRequest(
  event: APIGatewayProxyEvent,
  context: Context,
  deps: RateLimitDependencies,
): HttpInvocation {
  const now = deps.now?.() ?? Date.now();
  const arrived = event.requestContext?.requestTimeEpoch;
  return {
    log: logger.startInvocation(context, event.requestContext?.requestId),
    calls: new CallRecord(),
    signal: signalAt(requestDeadline(arrived, now, deps.requestBudgetMs), now),
    caller: callerFromContext(event.requestContext?.authorizer),
  };
}

/** No caller: a route without the authorizer, a misconfiguration answered 500 and paged. */
const identifyCaller: MiddlewareObj = { before: () => void callerOf(httpInvocation()) };

/**
 * `beforeLimit`: middlewares whose work may start before the rate limiter counts (and run beside
 * it); their `after` and `onError` run after every answer, refusals included.
 */
export function httpFunction<Own, Result>(
  deps: RateLimitDependencies,
  handler: (event: APIGatewayProxyEvent, invocation: HttpInvocation<Own>) => Promise<Result>,
  beforeLimit: readonly MiddlewareObj[] = [],
): (event: APIGatewayProxyEvent, context: Context) => Promise<Result> {
  const chain = middy<APIGatewayProxyEvent>()
    .use([recordInvocation(), identifyCaller, ...beforeLimit, rateLimit(deps), ...httpErrors()])
    .handler((event) => handler(event, httpInvocation<Own>()));
  return inInvocation((event, context) => startRequest(event, context, deps), chain);
}

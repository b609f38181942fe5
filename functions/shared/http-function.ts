/**
 * The middy chain every HTTP function shares. On the way in: the logger's Lambda context and the
 * request id API Gateway gave the client (`correlation_id` in every log line), the caller (from
 * the authorizer's context), the rate limiter.
 * On an error, in the order middy runs them: the Error shaping and http-error-handler, then the
 * rate-limit headers, then the line of the invocation's DynamoDB calls and the metrics flush.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { recordInvocation } from './dynamodb-calls.ts';
import { identifyCaller } from './caller.ts';
import { httpErrors } from './http-errors.ts';
import { logger } from './logger.ts';
import { rateLimit, type RateLimitDependencies } from './rate-limit.ts';

/** Every log line of the invocation carries the request id the client sees (x-amzn-RequestId). */
const correlate: MiddlewareObj<APIGatewayProxyEvent> = {
  before: (request) => {
    logger.setCorrelationId(request.event.requestContext?.requestId);
  },
};

/**
 * `beforeLimit`: middlewares whose work may start before the rate limiter counts (and run beside
 * it); their `after` and `onError` run after every answer, refusals included.
 */
export function httpMiddlewares(
  deps: RateLimitDependencies,
  beforeLimit: readonly MiddlewareObj[] = [],
): MiddlewareObj[] {
  return [
    injectLambdaContext(logger) as MiddlewareObj,
    correlate as MiddlewareObj,
    ...recordInvocation(),
    identifyCaller() as MiddlewareObj,
    ...beforeLimit,
    rateLimit(deps) as MiddlewareObj,
    ...httpErrors(),
  ];
}

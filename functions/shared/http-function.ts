/**
 * The middy chain every HTTP function shares. On the way in: the rate limiter. On an error, in
 * the order middy runs them: the Error shaping and http-error-handler, then the rate-limit
 * headers, then the metrics flush.
 */
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { MiddlewareObj } from '@middy/core';
import { httpErrors } from './http-errors.ts';
import { metrics } from './metrics.ts';
import { rateLimit, type RateLimitDependencies } from './rate-limit.ts';

export function httpMiddlewares(deps: RateLimitDependencies): MiddlewareObj[] {
  return [logMetrics(metrics) as MiddlewareObj, rateLimit(deps) as MiddlewareObj, ...httpErrors()];
}

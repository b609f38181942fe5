/**
 * The rate limiter in the middy chain of every HTTP function: counts the request before the
 * handler runs (429 when refused), and puts the rate-limit headers on every response to the
 * identified caller, success or error. Handlers do not know it is there.
 *
 * Headers: all of them when the counts are known; only RateLimit-Policy when the counter store
 * failed and the request was let by or answered 503 (the counts are then not known, and the
 * answer does not pretend they are).
 *
 * A function may answer some requests without using the plan's quota (`free`: a conditional
 * list answered 304, lib/limits/conditional.ts). For those the limiter takes one from the key's
 * free allowance instead of counting — at the same time as the function finds out whether its
 * answer will be the free one — and the headers show the key's standing with nothing counted.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj, Request } from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { DEFAULT_RETRY_AFTER_SECONDS } from '../../lib/api/errors.ts';
import { isTransient } from '../../lib/failures.ts';
import type { FreeAllowance } from '../../lib/limits/conditional.ts';
import { callerFromContext } from '../../lib/keys/authenticate.ts';
import {
  countsKnown,
  policyHeader,
  rateLimitHeaders,
  type RateLimiter,
} from '../../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { requestSignal } from './budget.ts';
import { ApiError } from './http-errors.ts';
import { logger } from './logger.ts';
import { metrics } from './metrics.ts';

export interface FreeAnswers {
  readonly allowance: () => FreeAllowance;
  /**
   * Called before anything is counted (so the function may start its own reads then): for a
   * request the function may answer without using the quota, whether it will (resolved once
   * known); undefined for any other request, which is counted.
   */
  readonly willAnswerFree: (
    event: APIGatewayProxyEvent,
    context: Context,
  ) => Promise<boolean> | undefined;
}

export interface RateLimitDependencies {
  readonly limiter: () => RateLimiter;
  readonly now?: () => number;
  /**
   * The request's budget from its arrival (default TIME_BUDGETS.requestMs). The limiter is the
   * first to ask for the request's deadline, which every later call of the invocation shares.
   */
  readonly requestBudgetMs?: number;
  readonly free?: FreeAnswers;
}

/** The rate-limit headers of an answer that counted nothing (Retry-After belongs to 429s). */
function uncountedHeaders(
  standing: Parameters<typeof rateLimitHeaders>[0],
  now: number,
  limits: Parameters<typeof rateLimitHeaders>[2],
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(rateLimitHeaders(standing, now, limits)).filter(
      ([name]) => name !== 'Retry-After',
    ),
  );
}

/** The 429 of a banned key (logged as a refusal unless that is done already), counted. */
function banned(keyId: string, headers: Record<string, string>, log = true): ApiError {
  if (log) logger.info('Rate limit refusal', { keyId, outcome: 'banned' });
  metrics.addMetric(METRIC_NAMES.bannedRequests, MetricUnit.Count, 1);
  return new ApiError('API_KEY_TEMPORARILY_BANNED', {
    message: `The API key is temporarily banned for repeated requests over its rate limit: retry after ${headers['Retry-After']} seconds.`,
    headers: { 'Retry-After': headers['Retry-After'] as string },
  });
}

export function rateLimit(deps: RateLimitDependencies): MiddlewareObj<APIGatewayProxyEvent> {
  const headersOf = new WeakMap<object, Record<string, string>>();

  const addHeaders = (request: Request<APIGatewayProxyEvent>): void => {
    const headers = headersOf.get(request);
    const response = request.response as { headers?: Record<string, string> } | undefined;
    if (!headers || !response) return;
    // The limiter's Retry-After belongs to its own 429 (set with the error); others keep theirs.
    const rateHeaders = Object.entries(headers).filter(([name]) => name !== 'Retry-After');
    response.headers = { ...response.headers, ...Object.fromEntries(rateHeaders) };
  };

  return {
    before: async (request) => {
      const caller = callerFromContext(request.event.requestContext?.authorizer);
      if (!caller)
        throw new Error(
          'No caller in the authorizer context: is the function behind the authorizer?',
        );
      const now = deps.now?.() ?? Date.now();
      const signal = requestSignal(request.event, request.context, now, deps.requestBudgetMs);
      const freeAnswer = deps.free?.willAnswerFree(request.event, request.context);
      if (freeAnswer && deps.free) {
        const [taken, free] = await Promise.all([
          deps.free
            .allowance()
            .takeFree(caller, now, { signal })
            // The counted path below answers a failing store by the failure mode.
            .catch((error: unknown) => {
              if (isTransient(error)) return undefined;
              throw error;
            }),
          freeAnswer,
        ]);
        if (taken?.outcome === 'banned') {
          const headers = rateLimitHeaders(taken.standing, now, caller.limits);
          headersOf.set(request, headers);
          throw banned(caller.keyId, headers);
        }
        if (taken?.outcome === 'free' && free) {
          headersOf.set(request, uncountedHeaders(taken.standing, now, caller.limits));
          return;
        }
      }
      const result = await deps.limiter().consume(caller, now, { signal });
      const { decision, unavailable } = result;
      const headers = countsKnown(result)
        ? rateLimitHeaders(decision, now, caller.limits)
        : policyHeader(caller.limits);
      headersOf.set(request, headers);
      if (unavailable) {
        throw new ApiError('SERVICE_UNAVAILABLE', {
          headers: { 'Retry-After': String(DEFAULT_RETRY_AFTER_SECONDS) },
        });
      }
      if (decision.outcome !== 'admitted') {
        // One line per refusal, by key id: what an operator reads to see who hits the limits.
        logger.info('Rate limit refusal', { keyId: caller.keyId, outcome: decision.outcome });
      }
      if (decision.outcome === 'limited') {
        metrics.addMetric(METRIC_NAMES.rateLimited, MetricUnit.Count, 1);
        throw new ApiError('RATE_LIMITED', {
          message: `Rate limit exceeded: retry after ${headers['Retry-After']} seconds.`,
          headers: { 'Retry-After': headers['Retry-After'] as string },
        });
      }
      if (decision.outcome === 'banned') throw banned(caller.keyId, headers, false);
    },
    after: addHeaders,
    onError: addHeaders,
  };
}

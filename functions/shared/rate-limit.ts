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
import type { MiddlewareObj, Request } from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { isTransient } from '../../lib/failures.ts';
import type { FreeAllowance } from '../../lib/limits/conditional.ts';
import {
  countsKnown,
  enforce,
  policyHeader,
  rateLimitHeaders,
  refuseUnlessAdmitted,
  type RateLimiter,
} from '../../lib/limits/limiter.ts';
import { requestSignal } from './budget.ts';
import { callerOf } from './caller.ts';

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
      const caller = callerOf(request.event);
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
          headersOf.set(request, rateLimitHeaders(taken.standing, now, caller.limits));
          refuseUnlessAdmitted(taken.standing, caller.keyId);
        }
        if (taken?.outcome === 'free' && free) {
          headersOf.set(request, uncountedHeaders(taken.standing, now, caller.limits));
          return;
        }
      }
      const result = await deps.limiter().consume(caller, now, { signal });
      headersOf.set(
        request,
        countsKnown(result)
          ? rateLimitHeaders(result.decision, now, caller.limits)
          : policyHeader(caller.limits),
      );
      // A refusal, or the store's failure when failing closed, is thrown for http-errors.ts.
      enforce(result, caller.keyId);
    },
    after: addHeaders,
    onError: addHeaders,
  };
}

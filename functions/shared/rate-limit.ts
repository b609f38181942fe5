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

export function rateLimit(deps: RateLimitDependencies): MiddlewareObj<APIGatewayProxyEvent> {
  const headersOf = new WeakMap<object, Record<string, string>>();

  const addHeaders = (request: Request<APIGatewayProxyEvent>): void => {
    const headers = headersOf.get(request);
    const response = request.response as { headers?: Record<string, string> } | undefined;
    if (!headers || !response) return;
    response.headers = { ...response.headers, ...headers };
  };

  return {
    before: async (request) => {
      const caller = callerOf(request.event);
      const now = deps.now?.() ?? Date.now();
      // Fixed at the chain's start (http-function.ts); the same arguments if this runs alone.
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
          // A failed read is the function's to answer (it awaits the same read): until then the
          // request is counted like any other, and its answer carries the headers of the count.
          freeAnswer.catch(() => false),
        ]);
        if (taken?.outcome === 'banned' || (taken?.outcome === 'free' && free)) {
          // The key's standing, nothing counted: a banned key's refusal, or a free 304.
          headersOf.set(request, rateLimitHeaders(taken.standing, now, caller.limits));
          if (taken.outcome === 'banned') refuseUnlessAdmitted(taken.standing, caller.keyId);
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

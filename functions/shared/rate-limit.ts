/**
 * The rate limiter in the middy chain of every HTTP function: counts the request before the
 * handler runs (429 when refused), and puts the rate-limit headers on every response to the
 * identified caller, success or error. Handlers do not know it is there.
 *
 * Headers: all of them when the counts are known; only RateLimit-Policy when the counter store
 * failed and the request was let by or answered 503 (the counts are then not known, and the
 * answer does not pretend they are).
 *
 * A function may answer some requests without using the plan's quota (a conditional list
 * answered 304, lib/limits/conditional.ts): its invocation's `freeAnswer`. For those the limiter
 * takes one from the key's free allowance instead of counting — at the same time as the function
 * finds out whether its answer will be the free one — and the headers show the key's standing
 * with nothing counted.
 */
import type { MiddlewareObj, Request } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
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
import { callerOf, httpInvocation } from './invocation.ts';

export interface RateLimitDependencies {
  readonly limiter: () => RateLimiter;
  /** The keys' free allowance; without it a request answered free counts like any other. */
  readonly freeAllowance?: () => FreeAllowance;
  readonly now?: () => number;
  /** The request's budget from its arrival (default TIME_BUDGETS.requestMs): ./http-function.ts. */
  readonly requestBudgetMs?: number;
}

export function rateLimit(deps: RateLimitDependencies): MiddlewareObj<APIGatewayProxyEvent> {
  const addHeaders = (request: Request): void => {
    const headers = httpInvocation().rateLimitHeaders;
    const response = request.response as { headers?: Record<string, string> } | undefined;
    if (headers && response) response.headers = { ...response.headers, ...headers };
  };

  return {
    before: async () => {
      const invocation = httpInvocation();
      const { signal, freeAnswer } = invocation;
      const caller = callerOf(invocation);
      const now = deps.now?.() ?? Date.now();
      if (freeAnswer && deps.freeAllowance) {
        const [taken, free] = await Promise.all([
          deps
            .freeAllowance()
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
          invocation.rateLimitHeaders = rateLimitHeaders(taken.standing, now, caller.limits);
          if (taken.outcome === 'banned') refuseUnlessAdmitted(taken.standing, caller.keyId);
          return;
        }
      }
      const result = await deps.limiter().consume(caller, now, { signal });
      invocation.rateLimitHeaders = countsKnown(result)
        ? rateLimitHeaders(result.decision, now, caller.limits)
        : policyHeader(caller.limits);
      // A refusal, or the store's failure when failing closed, is thrown for http-errors.ts.
      enforce(result, caller.keyId);
    },
    after: addHeaders,
    onError: addHeaders,
  };
}

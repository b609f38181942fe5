/**
 * The rate limiter's decision on a request, as every HTTP function takes it (./http-function.ts):
 * the rate-limit headers its answer carries, whatever the answer, and `admit`, which throws what
 * a request it does not admit is answered (429, or 503 when the counter store failed and the
 * failure mode is closed).
 *
 * Headers: all of them when the counts are known; only RateLimit-Policy when the counter store
 * failed and the request was let by or answered 503 (the counts are then not known, and the
 * answer does not pretend they are).
 *
 * A request that may be answered without using the plan's quota (a conditional list answered
 * 304, lib/limits/free-allowance.ts) is first admitted by the key's free allowance: the headers then
 * show the key's standing with nothing counted, and only a banned key is refused.
 */
import { isTransient } from '../../lib/failures.ts';
import type { CountedKey } from '../../lib/keys/key-record.ts';
import type { FreeAllowance } from '../../lib/limits/free-allowance.ts';
import {
  countsKnown,
  enforce,
  policyHeader,
  rateLimitHeaders,
  refuseUnlessAdmitted,
  type RateLimiter,
} from '../../lib/limits/limiter.ts';

export interface RateLimitDependencies {
  readonly limiter: () => RateLimiter;
  /** The keys' free allowance; without it a request answered free counts like any other. */
  readonly freeAllowance?: () => FreeAllowance;
  readonly now?: () => number;
  /** The request's budget from its arrival (default TIME_BUDGETS.requestMs): ./http-function.ts. */
  readonly requestBudgetMs?: number;
}

/** The limiter's decision on one request. */
export interface Admission {
  /** The rate-limit headers of every answer to the request. */
  readonly headers: Readonly<Record<string, string>>;
  /** Throws the answer to a request that is not admitted; returns when it is. */
  readonly admit: () => void;
}

/** Counts the request against the key's plan, by `signal`'s deadline. */
export async function countRequest(
  limiter: RateLimiter,
  caller: CountedKey,
  now: number,
  signal: AbortSignal,
): Promise<Admission> {
  const result = await limiter.consume(caller, now, { signal });
  return {
    headers: countsKnown(result)
      ? rateLimitHeaders(result.decision, now, caller.limits)
      : policyHeader(caller.limits),
    admit: () => enforce(result, caller.keyId),
  };
}

/**
 * Takes one request from the key's free allowance, by `signal`'s deadline: undefined when the
 * request must be counted instead (the allowance of this minute is used up, or its store failed
 * transiently: the count answers that failure by the failure mode).
 */
export async function takeFreeRequest(
  allowance: FreeAllowance,
  caller: CountedKey,
  now: number,
  signal: AbortSignal,
): Promise<Admission | undefined> {
  const taken = await allowance.takeFree(caller, now, { signal }).catch((error: unknown) => {
    if (isTransient(error)) return undefined;
    throw error;
  });
  if (!taken || taken.outcome === 'exhausted') return undefined;
  return {
    headers: rateLimitHeaders(taken.standing, now, caller.limits),
    admit: () => {
      if (taken.outcome === 'banned') refuseUnlessAdmitted(taken.standing, caller.keyId);
    },
  };
}

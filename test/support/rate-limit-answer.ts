import {
  RateLimitRefusal,
  rateLimitHeaders,
  refuseUnlessAdmitted,
} from '../../lib/limits/limiter.ts';
import type { Limits } from '../../lib/limits/plans.ts';
import type { Decision } from '../../lib/limits/sliding-window.ts';

/**
 * The rate-limit headers a client gets for a decision: those the limiter's middleware puts on
 * every answer, and on a refusal its Retry-After, which functions/shared/http-errors.ts takes
 * from the RateLimitRefusal.
 */
export function answerHeaders(decision: Decision, now: number, limits: Limits) {
  const headers: Record<string, string> = rateLimitHeaders(decision, now, limits);
  try {
    refuseUnlessAdmitted(decision, 'key_test');
  } catch (error) {
    if (!(error instanceof RateLimitRefusal)) throw error;
    headers['Retry-After'] = String(error.retryAfterSeconds);
  }
  return headers;
}

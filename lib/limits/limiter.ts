/** The rate limiter as the functions see it: a port, its settings and the headers it yields. */
import { wholeNumberSetting, type IntegerRange } from '../config/integers.ts';
import { DependencyFailure, type CallOptions } from '../failures.ts';
import type { CountedKey } from '../keys/key-record.ts';
import type { Limits } from './plans.ts';
import {
  bindingFirst,
  MINUTE_MS,
  retryAfterSeconds,
  windowReportsOf,
  type Decision,
  type WindowReport,
} from './sliding-window.ts';

/** What happens to a request when the counter store cannot be reached. */
export type FailureMode = 'open' | 'closed';

export interface LimiterSettings {
  /** A key refused more than this many times in one minute window is banned. */
  readonly maxRefusalsPerMinute: number;
  readonly banMs: number;
  readonly failureMode: FailureMode;
}

export const DEFAULT_LIMITER_SETTINGS: LimiterSettings = {
  maxRefusalsPerMinute: 10,
  banMs: 15 * 60_000,
  failureMode: 'closed',
};

/**
 * The longest ban: a day. The OpenAPI document promises a Retry-After of at most about a day
 * (the day window, or a ban).
 */
export const MAX_BAN_SECONDS = 86_400;

/**
 * The shortest ban a deployed stage takes (infra/config.ts): one minute window. A shorter one
 * would end while the refusals that caused it still count in their window. (The local API and
 * tests may set shorter ones through the environment.)
 */
export const MIN_STAGE_BAN_SECONDS = MINUTE_MS / 1000;

/** The settings from the environment, failing fast on a bad value. */
export function limiterSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LimiterSettings {
  const integer = (name: string, fallback: number, range: IntegerRange): number =>
    wholeNumberSetting(
      env[name] || undefined,
      range,
      fallback,
      (expected) => new Error(`${name} must be ${expected}, got "${env[name]}"`),
    );
  const mode = env.RATE_LIMIT_FAILURE_MODE ?? DEFAULT_LIMITER_SETTINGS.failureMode;
  if (mode !== 'open' && mode !== 'closed')
    throw new Error(`RATE_LIMIT_FAILURE_MODE must be open or closed, got "${mode}"`);
  const { maxRefusalsPerMinute, banMs } = DEFAULT_LIMITER_SETTINGS;
  return {
    maxRefusalsPerMinute: integer('RATE_LIMIT_BAN_AFTER_REFUSALS', maxRefusalsPerMinute, {
      min: 1,
    }),
    banMs: integer('RATE_LIMIT_BAN_SECONDS', banMs / 1000, { min: 1, max: MAX_BAN_SECONDS }) * 1000,
    failureMode: mode,
  };
}

export interface LimitResult {
  readonly decision: Decision;
  /**
   * The store failed transiently: the decision comes from the last known state, not from the
   * counter. A refusal from it holds (counts only grow within a window); an admission means
   * the counts are not known.
   */
  readonly degraded: boolean;
  /** The store's failure, when it failed and the failure mode is closed: answer 503. */
  readonly unavailable?: DependencyFailure;
}

/**
 * Counts a request of a caller at a time, atomically, by `signal`'s deadline, and says whether
 * it is admitted. A permanent store failure is thrown (a DependencyFailure); a transient one
 * is answered by the failure mode.
 */
export interface RateLimiter {
  consume(caller: CountedKey, now: number, options?: CallOptions): Promise<LimitResult>;
}

/** A request refused by the rate limit: over a window's limit (`limited`) or of a banned key. */
export class RateLimitRefusal extends Error {
  readonly outcome: 'limited' | 'banned';
  readonly keyId: string;
  /** Whole seconds until a request would be admitted (or the ban ends), at least 1. */
  readonly retryAfterSeconds: number;

  constructor(outcome: 'limited' | 'banned', keyId: string, retryAfterSeconds: number) {
    super(`Request ${outcome === 'limited' ? 'over the rate limit' : 'of a banned key'}`);
    this.name = 'RateLimitRefusal';
    this.outcome = outcome;
    this.keyId = keyId;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Throws the refusal of a decision that did not admit its request. */
export function refuseUnlessAdmitted(decision: Decision, keyId: string): void {
  if (decision.outcome === 'admitted') return;
  throw new RateLimitRefusal(decision.outcome, keyId, retryAfterSeconds(decision.retryAfterMs));
}

/**
 * What a limiter's result means for the request: nothing when admitted (counted, or let by
 * uncounted when the store failed and the failure mode is open); a RateLimitRefusal when refused;
 * the store's transient failure when the mode is closed.
 */
export function enforce(result: LimitResult, keyId: string): void {
  if (result.unavailable) throw result.unavailable;
  refuseUnlessAdmitted(result.decision, keyId);
}

/** Whether a result's counts are known: not when the store failed and the request was let by. */
export function countsKnown(result: LimitResult): boolean {
  return !(result.degraded && result.decision.outcome === 'admitted');
}

/**
 * The headers of an answer whose counts are not known (the counter store failed): only
 * RateLimit-Policy, the key's two limits, which its plan says. Remaining, Reset and the binding
 * limit would be guesses.
 */
export function policyHeader(limits: Limits): Record<string, string> {
  return {
    'RateLimit-Policy': `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`,
  };
}

/**
 * X-RateLimit-* of the binding window, and the IETF draft fields: RateLimit-Policy (both
 * windows) and RateLimit (both windows, binding first; `t` is the draft's "seconds until more
 * quota is available", which a sliding window frees before its fixed window ends).
 */
export function rateLimitHeaders(
  decision: Decision,
  now: number,
  limits: Limits,
): Record<string, string> {
  const banned = decision.outcome === 'banned';
  const { minute, day } = windowReportsOf(decision, limits);
  // A banned key has nothing left in either window until the ban ends, whatever its counters say.
  const reports = banned
    ? bindingFirst({ ...minute, remaining: 0 }, { ...day, remaining: 0 })
    : bindingFirst(minute, day);
  const binding = reports[0];
  const moreIn = (r: WindowReport) =>
    Math.max(
      0,
      Math.ceil((banned ? decision.retryAfterMs : decision.at - now + r.moreInMs) / 1000),
    );
  const item = (r: WindowReport) => `"${r.window}";r=${r.remaining};t=${moreIn(r)}`;
  return {
    'X-RateLimit-Limit': String(binding.limit),
    'X-RateLimit-Remaining': String(binding.remaining),
    'X-RateLimit-Reset': String(binding.reset),
    ...policyHeader(limits),
    RateLimit: reports.map(item).join(', '),
  };
}

/**
 * The sliding-window counter of CONTRACT 4.2, as pure functions of a key's counter state and the
 * time: fixed minute windows (aligned to the minute) and day windows (aligned to 00:00 UTC),
 *
 *     estimate = floor(previous × (W − elapsed) / W) + current
 *
 * A request is admitted when the estimate is below the limit in both windows; only admitted
 * requests are counted. Times are Unix milliseconds; counts are integers.
 */
import type { Limits } from './plans.ts';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export type WindowName = 'minute' | 'day';
export const WINDOW_MS: Readonly<Record<WindowName, number>> = { minute: MINUTE_MS, day: DAY_MS };

/** One fixed window of a counter and the count of the window just before it. */
export interface WindowCount {
  /** Start of the fixed window (Unix ms, aligned). */
  readonly start: number;
  readonly current: number;
  /** Admitted requests in the window before `start` (immutable once that window closed). */
  readonly previous: number;
}

/** Everything stored for one key. */
export interface CounterState {
  readonly minute?: WindowCount;
  readonly day?: WindowCount;
  /** Refusals (429 RATE_LIMITED) in one minute window, for the temporary ban. */
  readonly refusals?: { readonly start: number; readonly count: number };
  /** Unix ms until which the key is banned. */
  readonly bannedUntil?: number;
  /**
   * Unix ms the key's latest refusal told its client to come back at (its time plus Retry-After):
   * a refusal of a request that arrives before it counts towards the ban (see ban.ts).
   */
  readonly retryAt?: number;
}

export function windowStart(now: number, windowMs: number): number {
  return Math.floor(now / windowMs) * windowMs;
}

/** The window as it stands at `now`: the same one, or rolled forward (its count becomes previous). */
export function rollWindow(
  window: WindowCount | undefined,
  now: number,
  windowMs: number,
): WindowCount {
  const start = windowStart(now, windowMs);
  if (!window || window.start < start - windowMs) return { start, current: 0, previous: 0 };
  if (window.start === start - windowMs) return { start, current: 0, previous: window.current };
  return window;
}

/**
 * The time a request counts at: its own, or the start of the latest window the counter has
 * already moved to. A request stamped just before a boundary that reaches the store after
 * another has rolled the window over counts in the new window; a counter never moves back.
 */
export function counterTime(state: CounterState, now: number): number {
  return Math.max(
    now,
    state.minute?.start ?? now,
    state.day?.start ?? now,
    state.refusals?.start ?? now,
  );
}

/** The weighted share of the previous window at `now` (the first term of the formula). */
export function previousShare(window: WindowCount, now: number, windowMs: number): number {
  const elapsed = Math.max(0, now - window.start);
  return Math.floor((window.previous * (windowMs - elapsed)) / windowMs);
}

export function estimate(window: WindowCount, now: number, windowMs: number): number {
  return previousShare(window, now, windowMs) + window.current;
}

/**
 * Milliseconds from `now` until the estimate of a window (with no further admissions) drops
 * below `limit`: 0 when it already is. Estimates only fall as time passes, so this is exact.
 */
export function msUntilBelow(
  window: WindowCount,
  now: number,
  windowMs: number,
  limit: number,
): number {
  if (estimate(window, now, windowMs) < limit) return 0;
  if (window.current < limit) {
    // In this window: need previous × (W − e) < (limit − current) × W.
    const budget = (limit - window.current) * windowMs;
    const e = windowMs - Math.floor((budget - 1) / window.previous);
    return window.start + e - now;
  }
  // Not in this window: in the next one the current count becomes the previous.
  const next = { start: window.start + windowMs, current: 0, previous: window.current };
  return next.start - now + msUntilBelow(next, next.start, windowMs, limit);
}

/**
 * Milliseconds from `now` until the window has more quota than it has now (its estimate falls,
 * or falls below the limit when it is above it); undefined when nothing is used (the estimate
 * is 0 and cannot fall).
 */
export function msUntilMoreQuota(
  window: WindowCount,
  now: number,
  windowMs: number,
  limit: number,
): number | undefined {
  const used = estimate(window, now, windowMs);
  if (used === 0) return undefined;
  return msUntilBelow(window, now, windowMs, Math.min(used, limit));
}

export interface WindowReport {
  readonly window: WindowName;
  readonly limit: number;
  /** Requests left in this window after this one, never negative. */
  readonly remaining: number;
  /** Unix seconds at which the current fixed window ends. */
  readonly reset: number;
  /**
   * Milliseconds until the window has more quota (the sliding window frees a request before
   * the fixed window ends); until the fixed window ends when nothing is used.
   */
  readonly moreInMs: number;
}

interface DecisionBase {
  /** The time the request counts at (see counterTime). */
  readonly at: number;
  /** The windows as they stand at `at`, after this request if it was counted. */
  readonly minute: WindowCount;
  readonly day: WindowCount;
}

/** For a refusal or a ban, `retryAfterMs` is counted from the request's own time. */
export type Decision =
  | (DecisionBase & { readonly outcome: 'admitted' })
  | (DecisionBase & { readonly outcome: 'limited' | 'banned'; readonly retryAfterMs: number });

/** Whether `state` would admit a request at `now`, and what the windows look like then. */
export function decide(state: CounterState, now: number, limits: Limits): Decision {
  const at = counterTime(state, now);
  const minute = rollWindow(state.minute, at, MINUTE_MS);
  const day = rollWindow(state.day, at, DAY_MS);
  if (state.bannedUntil !== undefined && state.bannedUntil > at) {
    return { outcome: 'banned', at, minute, day, retryAfterMs: state.bannedUntil - now };
  }
  const waitMinute = msUntilBelow(minute, at, MINUTE_MS, limits.perMinute);
  const waitDay = msUntilBelow(day, at, DAY_MS, limits.perDay);
  if (waitMinute === 0 && waitDay === 0) {
    return {
      outcome: 'admitted',
      at,
      minute: { ...minute, current: minute.current + 1 },
      day: { ...day, current: day.current + 1 },
    };
  }
  const retryAfterMs = at - now + Math.max(waitMinute, waitDay);
  return { outcome: 'limited', at, minute, day, retryAfterMs };
}

function report(window: WindowName, count: WindowCount, now: number, limit: number): WindowReport {
  const windowMs = WINDOW_MS[window];
  const end = count.start + windowMs;
  return {
    window,
    limit,
    remaining: Math.max(0, limit - estimate(count, now, windowMs)),
    reset: end / 1000,
    moreInMs: msUntilMoreQuota(count, now, windowMs, limit) ?? end - now,
  };
}

/** Both windows as the client sees them. */
export function windowReportsOf(
  counts: { readonly minute: WindowCount; readonly day: WindowCount; readonly at: number },
  limits: Limits,
): { readonly minute: WindowReport; readonly day: WindowReport } {
  return {
    minute: report('minute', counts.minute, counts.at, limits.perMinute),
    day: report('day', counts.day, counts.at, limits.perDay),
  };
}

/**
 * The two windows, binding window first: the one with fewer requests remaining; on a tie, the
 * one whose fixed window ends later (the day's: the window a client must wait for).
 */
export function bindingFirst(
  minute: WindowReport,
  day: WindowReport,
): readonly [WindowReport, WindowReport] {
  return day.remaining <= minute.remaining ? [day, minute] : [minute, day];
}

/** Whole seconds to wait, at least 1 (Retry-After). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

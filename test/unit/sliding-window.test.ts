/**
 * The sliding-window algorithm with an injected clock, against a reference model that keeps
 * every admitted request's timestamp and recomputes the contract's formula from scratch.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../lib/limits/limiter.ts';
import { answerHeaders } from '../support/rate-limit-answer.ts';
import type { Limits } from '../../lib/limits/plans.ts';
import { decide, retryAfterSeconds, type CounterState } from '../../lib/limits/sliding-window.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** The reference: a log of admitted timestamps. */
class ReferenceLimiter {
  private readonly admitted: number[] = [];
  private readonly limits: Limits;
  constructor(limits: Limits) {
    this.limits = limits;
  }

  /** The start of the minute of the latest admitted request: the counter never moves back. */
  private floor = -Infinity;

  /** The time a request at `now` counts at. */
  private at(now: number): number {
    return Math.max(now, this.floor);
  }

  private estimate(now: number, size: number): number {
    const start = Math.floor(now / size) * size;
    const current = this.admitted.filter((t) => t >= start && t < start + size).length;
    const previous = this.admitted.filter((t) => t >= start - size && t < start).length;
    return Math.floor((previous * (size - (now - start))) / size) + current;
  }

  /** Requests left in one window at `now` (after the requests made so far). */
  remaining(now: number, window: 'minute' | 'day'): number {
    const limit = window === 'minute' ? this.limits.perMinute : this.limits.perDay;
    return Math.max(0, limit - this.estimate(this.at(now), window === 'minute' ? MINUTE : DAY));
  }

  admits(now: number): boolean {
    const at = this.at(now);
    return (
      this.estimate(at, MINUTE) < this.limits.perMinute &&
      this.estimate(at, DAY) < this.limits.perDay
    );
  }

  request(now: number): boolean {
    const ok = this.admits(now);
    if (ok) {
      const at = this.at(now);
      this.admitted.push(at);
      this.floor = Math.floor(at / MINUTE) * MINUTE;
    }
    return ok;
  }

  /** X-RateLimit-* of the binding window after the request at `now`. */
  headers(requestTime: number): { limit: number; remaining: number; reset: number } {
    const now = this.at(requestTime);
    const minute = {
      limit: this.limits.perMinute,
      remaining: Math.max(0, this.limits.perMinute - this.estimate(now, MINUTE)),
      reset: (Math.floor(now / MINUTE) + 1) * 60,
    };
    const day = {
      limit: this.limits.perDay,
      remaining: Math.max(0, this.limits.perDay - this.estimate(now, DAY)),
      reset: (Math.floor(now / DAY) + 1) * 86_400,
    };
    // Fewer remaining; on a tie, the window whose fixed window ends later.
    const dayFirst =
      day.remaining < minute.remaining ||
      (day.remaining === minute.remaining && day.reset >= minute.reset);
    return dayFirst ? day : minute;
  }

  /** The smallest whole number of seconds after which a request would be admitted (binary search: admission only gets easier with time). */
  retryAfter(now: number): number {
    let low = 1;
    let high = 3 * 86_400;
    while (low < high) {
      const mid = Math.floor((low + high) / 2);
      if (this.admits(now + mid * 1000)) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}

/** The algorithm as the store applies it: decide, and keep the counted windows when admitted. */
class ModelLimiter {
  private state: CounterState = {};
  private readonly limits: Limits;
  constructor(limits: Limits) {
    this.limits = limits;
  }
  wouldAdmit(now: number): boolean {
    return decide(this.state, now, this.limits).outcome === 'admitted';
  }
  request(now: number) {
    const decision = decide(this.state, now, this.limits);
    if (decision.outcome === 'admitted')
      this.state = { minute: decision.minute, day: decision.day };
    return { decision, headers: answerHeaders(decision, now, this.limits) };
  }
}

const limitsArb = fc.record({
  perMinute: fc.integer({ min: 1, max: 12 }),
  perDay: fc.integer({ min: 1, max: 40 }),
});
// Bursts, pauses of seconds and gaps of minutes, so minute and day windows roll over.
// Negative gaps: a request stamped earlier that reaches the store after a later one.
const gapArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: -3_000, max: -1 }) },
  { weight: 3, arbitrary: fc.integer({ min: 2_000, max: 45_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 45_000, max: 200_000 }) },
);
// Starts a few minutes before a UTC midnight, to cross 23:59:59 → 00:00:00.
const startArb = fc
  .integer({ min: 20_000, max: 21_000 })
  .chain((day) =>
    fc.integer({ min: -5 * MINUTE, max: MINUTE }).map((offset) => day * DAY + offset),
  );

describe('sliding-window counter (property-based, against the reference model)', () => {
  it('admits, reports and advises exactly as the formula says, across minute and day rollovers', () => {
    fc.assert(
      fc.property(
        limitsArb,
        startArb,
        fc.array(gapArb, { minLength: 1, maxLength: 120 }),
        (limits, start, gaps) => {
          const model = new ModelLimiter(limits);
          const reference = new ReferenceLimiter(limits);
          let now = start;
          for (const gap of gaps) {
            now += gap;
            const expectedAdmit = reference.admits(now);
            const expectedRetry = expectedAdmit ? undefined : reference.retryAfter(now);
            reference.request(now);
            const { decision, headers } = model.request(now);
            expect(decision.outcome).toBe(expectedAdmit ? 'admitted' : 'limited');
            const expected = reference.headers(now);
            expect(headers['X-RateLimit-Limit']).toBe(String(expected.limit));
            expect(headers['X-RateLimit-Remaining']).toBe(String(expected.remaining));
            expect(headers['X-RateLimit-Reset']).toBe(String(expected.reset));
            expect(headers['Retry-After']).toBe(
              expectedRetry === undefined ? undefined : String(expectedRetry),
            );
            // RateLimit: each window's t is when it next has more left than r (and not before).
            const windows = parseRateLimit(headers.RateLimit as string);
            for (const { window, r, t } of windows) {
              const quota = window === 'minute' ? limits.perMinute : limits.perDay;
              if (r === quota) continue;
              expect(reference.remaining(now + t * 1000, window)).toBeGreaterThan(r);
              expect(reference.remaining(now + (t - 1) * 1000, window)).toBeLessThanOrEqual(r);
            }
            // On a refusal, Retry-After is the longest t of the windows with none left.
            if (expectedRetry !== undefined) {
              const exhausted = windows.filter((w) => w.r === 0).map((w) => w.t);
              expect(Math.max(...exhausted)).toBe(expectedRetry);
              expect(windows[0]?.r).toBe(0);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('admits a request sent Retry-After seconds after a refusal, in every window combination', () => {
    fc.assert(
      fc.property(
        limitsArb,
        startArb,
        fc.array(gapArb, { minLength: 1, maxLength: 120 }),
        (limits, start, gaps) => {
          const model = new ModelLimiter(limits);
          let now = start;
          for (const gap of gaps) {
            now += gap;
            const { decision, headers } = model.request(now);
            if (decision.outcome !== 'admitted') {
              const later = now + Number(headers['Retry-After']) * 1000;
              expect(model.wouldAdmit(later)).toBe(true);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** The items of a RateLimit field, binding window first. */
function parseRateLimit(value: string): { window: 'minute' | 'day'; r: number; t: number }[] {
  return [...value.matchAll(/"(minute|day)";r=(\d+);t=(\d+)/g)].map(([, window, r, t]) => ({
    window: window as 'minute' | 'day',
    r: Number(r),
    t: Number(t),
  }));
}

describe('sliding-window counter (examples)', () => {
  const free = { perMinute: 60, perDay: 1000 };

  it('admits 60 in a minute and refuses the 61st, with Retry-After to the next minute', () => {
    const model = new ModelLimiter(free);
    const t0 = 1_800_000_000_000; // 2027-01-15T08:00:00Z, aligned to the minute
    for (let i = 0; i < 60; i++)
      expect(model.request(t0 + i * 100).decision.outcome).toBe('admitted');
    const refused = model.request(t0 + 10_000);
    expect(refused.decision.outcome).toBe('limited');
    expect(refused.headers).toMatchObject({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(t0 / 1000 + 60),
    });
    // In the next minute the previous 60 weigh 60 × (60000 − e) / 60000: below 60 as soon as e ≥ 1 ms.
    expect(refused.headers['Retry-After']).toBe('51');
  });

  it('weighs the previous minute: 60 then, at 30 s into the next minute, 30 more', () => {
    const model = new ModelLimiter(free);
    const t0 = 1_800_000_000_000;
    for (let i = 0; i < 60; i++) model.request(t0 + 59_000);
    const outcomes = Array.from({ length: 31 }, () => model.request(t0 + 90_000).decision.outcome);
    expect(outcomes.filter((o) => o === 'admitted')).toHaveLength(30);
    const last = model.request(t0 + 90_000);
    // 30 counted now: admitted again once 60 × (W − e) < 30 × W, i.e. 1 ms later → 1 s.
    expect(last.headers['Retry-After']).toBe('1');
  });

  it('rolls the day window at 00:00:00 UTC: 23:59:59 counts for the old day', () => {
    const tiny = { perMinute: 100, perDay: 3 };
    const model = new ModelLimiter(tiny);
    const midnight = Date.UTC(2026, 10, 23);
    for (let i = 0; i < 3; i++)
      expect(model.request(midnight - 1000).decision.outcome).toBe('admitted');
    const lastSecond = model.request(midnight - 1000);
    expect(lastSecond.decision.outcome).toBe('limited');
    // Binding window is the day: Reset at the next UTC midnight.
    expect(lastSecond.headers['X-RateLimit-Reset']).toBe(String(midnight / 1000));
    expect(lastSecond.headers['X-RateLimit-Limit']).toBe('3');
    // At 00:00:00.000 yesterday's 3 still weigh 3; from 00:00:00.001 they weigh floor(3 × (W − e) / W) = 2.
    expect(model.request(midnight).decision.outcome).toBe('limited');
    expect(model.request(midnight + 1).decision.outcome).toBe('admitted');
  });

  it('reports the IETF draft fields for both windows, t = seconds until more quota', () => {
    const model = new ModelLimiter(free);
    const t0 = 1_800_000_000_000 + 15_000;
    const { headers } = model.request(t0);
    expect(headers['RateLimit-Policy']).toBe('"minute";q=60;w=60, "day";q=1000;w=86400');
    // The one request counted weighs 1 until its fixed window ends, and 0 from 1 ms after.
    expect(headers.RateLimit).toBe('"minute";r=59;t=46, "day";r=999;t=57586');
  });

  it('tells in t when the sliding window frees a request, well before the fixed window ends', () => {
    const model = new ModelLimiter(free);
    const t0 = 1_800_000_000_000;
    for (let i = 0; i < 60; i++) model.request(t0 + 59_000);
    // 10 s into the next minute: floor(60 × 50/60) = 50 weigh, 10 free; take them all.
    let last;
    for (let i = 0; i < 10; i++) last = model.request(t0 + 70_000);
    expect(last?.headers).toMatchObject({
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(t0 / 1000 + 120),
      // The day's 70 weigh 70 until its fixed window ends (57 530 s away), and 69 from 1 ms after.
      RateLimit: '"minute";r=0;t=1, "day";r=930;t=57531',
    });
    expect(model.request(t0 + 71_000).decision.outcome).toBe('admitted');
  });

  it('names the window a client must wait for on a tie: the day, with Retry-After until just after midnight', () => {
    const sevens = { perMinute: 7, perDay: 7 };
    const model = new ModelLimiter(sevens);
    const midnight = Date.UTC(2026, 10, 24);
    const now = midnight - 13_356_500;
    for (let i = 0; i < 7; i++) model.request(now);
    const eighth = model.request(now);
    expect(eighth.decision.outcome).toBe('limited');
    expect(eighth.headers).toMatchObject({
      'X-RateLimit-Limit': '7',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(midnight / 1000),
      // 7 today weigh 7 until midnight and floor(7 × (W − 1 ms) / W) = 6 from 1 ms after it.
      'Retry-After': '13357',
    });
    // The minute's 7 weigh 6 from 1 ms after its end, 36.5 s away: a wait the day overrides.
    expect(eighth.headers.RateLimit).toBe('"day";r=0;t=13357, "minute";r=0;t=37');
  });

  it('rounds Retry-After up to whole seconds, never below 1', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
  });

  it('refuses a banned key until the ban ends, reporting nothing remaining', () => {
    const now = 1_800_000_000_000;
    const decision = decide({ bannedUntil: now + 900_000 }, now, free);
    expect(decision).toMatchObject({ outcome: 'banned', retryAfterMs: 900_000 });
    expect(answerHeaders(decision, now, free)).toMatchObject({
      'Retry-After': '900',
      'X-RateLimit-Remaining': '0',
    });
    // Retry-After is the refusal's (RateLimitRefusal → http-errors.ts), not one of these headers.
    expect(rateLimitHeaders(decision, now, free)).not.toHaveProperty('Retry-After');
    expect(decide({ bannedUntil: now }, now, free).outcome).toBe('admitted');
  });
});

/**
 * The temporary ban (CONTRACT 4.3) on the pure functions the limiter's one write is built from:
 * only refusals of requests that did not wait as told count, a client that waits as told is
 * never banned, and one that does not is banned as soon as it goes over the threshold.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusalStep, type BanSettings, type RefusalStep } from '../../lib/limits/ban.ts';
import { answerHeaders } from '../support/rate-limit-answer.ts';
import type { Limits } from '../../lib/limits/plans.ts';
import { decide, type CounterState } from '../../lib/limits/sliding-window.ts';

const MINUTE = 60_000;

/** The state after a refusal's step: what the limiter's refusal write stores. */
function afterRefusal(state: CounterState, step: RefusalStep): CounterState {
  switch (step.kind) {
    case 'waited':
      return { ...state, retryAt: step.retryAt };
    case 'counted':
      return {
        ...state,
        refusals: { start: step.start, count: step.count },
        retryAt: step.retryAt,
      };
    case 'ban':
      return {
        ...state,
        refusals: { start: step.start, count: 0 },
        bannedUntil: step.bannedUntil,
        retryAt: step.bannedUntil,
      };
  }
}

/** One key as the limiter keeps it: admissions counted, refusals through the ban rule. */
class Key {
  state: CounterState = {};
  private readonly limits: Limits;
  private readonly settings: BanSettings;
  constructor(limits: Limits, settings: BanSettings) {
    this.limits = limits;
    this.settings = settings;
  }

  request(now: number) {
    const decision = decide(this.state, now, this.limits);
    if (decision.outcome === 'admitted') {
      this.state = { ...this.state, minute: decision.minute, day: decision.day };
      return { outcome: 'admitted' as const, retryAfter: undefined, counted: false };
    }
    if (decision.outcome === 'banned') {
      const retryAfter = Number(answerHeaders(decision, now, this.limits)['Retry-After']);
      return { outcome: 'banned' as const, retryAfter, counted: false };
    }
    const step = refusalStep(this.state, now, decision.at, decision.retryAfterMs, this.settings);
    this.state = afterRefusal(this.state, step);
    if (step.kind === 'ban') {
      return {
        outcome: 'banned' as const,
        retryAfter: Math.ceil((step.bannedUntil - now) / 1000),
        counted: true,
      };
    }
    const retryAfter = Number(answerHeaders(decision, now, this.limits)['Retry-After']);
    return { outcome: 'limited' as const, retryAfter, counted: step.kind === 'counted' };
  }
}

const limitsArb = fc
  .record({ perMinute: fc.integer({ min: 1, max: 20 }), perDay: fc.integer({ min: 1, max: 200 }) })
  .filter((l) => l.perMinute <= l.perDay);
const settingsArb = fc.record({
  maxRefusalsPerMinute: fc.integer({ min: 1, max: 12 }),
  banMs: fc.integer({ min: 1, max: 20 }).map((m) => m * MINUTE),
});
const DAY = 86_400_000;
// Starts a few minutes before a UTC midnight, so runs cross minute and day boundaries.
const startArb = fc
  .integer({ min: 20_000, max: 21_000 })
  .chain((day) => fc.integer({ min: -5 * MINUTE, max: MINUTE }).map((o) => day * DAY + o));
/** How long the client waits after a 200 (ms), or how much earlier than told after a 429. */
const gapArb = fc.oneof(
  { weight: 5, arbitrary: fc.constant(0) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 2_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 2_000, max: 90_000 }) },
);
/** Time a request takes on the wire (the answer reaches the client this much later). */
const latencyArb = fc.integer({ min: 0, max: 300 });

describe('the ban counts only refusals of requests that did not wait (property-based)', () => {
  it('counts a refusal exactly when it arrived before the previous refusal told it to come back', () => {
    fc.assert(
      fc.property(
        limitsArb,
        settingsArb,
        startArb,
        fc.array(fc.tuple(gapArb, fc.boolean(), latencyArb), { minLength: 1, maxLength: 200 }),
        (limits, settings, start, plan) => {
          const key = new Key(limits, settings);
          let now = start;
          let toldAt: number | undefined;
          for (const [gap, obey, latency] of plan) {
            const result = key.request(now);
            if (result.outcome === 'limited' || (result.outcome === 'banned' && result.counted)) {
              expect(result.counted).toBe(toldAt !== undefined && now < toldAt);
            }
            if (result.outcome === 'limited') toldAt = now + result.retryAfter * 1000;
            if (result.outcome === 'banned') toldAt = undefined;
            const received = now + latency;
            // After a 429, either wait as told or come back `gap` ms early (at least 1 ms early).
            now =
              result.retryAfter === undefined
                ? received + gap
                : obey
                  ? received + result.retryAfter * 1000
                  : Math.max(now, received + result.retryAfter * 1000 - Math.max(1, gap));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never bans a client that waits Retry-After after every 429, however long it runs', () => {
    fc.assert(
      fc.property(
        limitsArb,
        settingsArb,
        startArb,
        fc.array(fc.tuple(gapArb, latencyArb), { minLength: 1, maxLength: 400 }),
        (limits, settings, start, plan) => {
          const key = new Key(limits, settings);
          let now = start;
          for (const [gap, latency] of plan) {
            const result = key.request(now);
            expect(result.outcome).not.toBe('banned');
            expect(result.counted).toBe(false);
            // A 429's wait starts when the answer arrives; after a 200 the next goes at once or later.
            now += latency + (result.retryAfter === undefined ? gap : result.retryAfter * 1000);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('admits every request a polite client sends Retry-After seconds after a 429', () => {
    fc.assert(
      fc.property(
        limitsArb,
        settingsArb,
        startArb,
        latencyArb,
        (limits, settings, start, latency) => {
          const key = new Key(limits, settings);
          let now = start;
          let previous: string | undefined;
          for (let i = 0; i < 300; i++) {
            const result = key.request(now);
            if (previous === 'limited') expect(result.outcome).toBe('admitted');
            previous = result.outcome;
            now += latency + (result.retryAfter ?? 0) * 1000;
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('bans a client that sends at once after every 429 on the refusal after the threshold', () => {
    fc.assert(
      fc.property(limitsArb, settingsArb, startArb, (limits, settings, start) => {
        const key = new Key(limits, settings);
        // All within one second, early in a minute window: the minute is used up, then refused.
        const now = Math.floor(start / MINUTE) * MINUTE + 1_000;
        const outcomes = Array.from(
          { length: limits.perDay + settings.maxRefusalsPerMinute + 3 },
          () => key.request(now).outcome,
        );
        const admitted = outcomes.filter((o) => o === 'admitted').length;
        expect(admitted).toBeLessThanOrEqual(limits.perMinute);
        // The first refusal waited for nothing it was told: it does not count. Then `max` count,
        // and the next one starts the ban.
        expect(outcomes.slice(admitted)).toEqual([
          ...Array<string>(1 + settings.maxRefusalsPerMinute).fill('limited'),
          ...Array<string>(outcomes.length - admitted - 1 - settings.maxRefusalsPerMinute).fill(
            'banned',
          ),
        ]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the ban (examples)', () => {
  const free = { perMinute: 60, perDay: 1000 };
  const settings = { maxRefusalsPerMinute: 10, banMs: 15 * MINUTE };
  const t0 = 1_800_000_000_000;

  it('the loop the README shows — send at once after a 200, wait Retry-After after a 429 — runs unbanned at the plan rate', () => {
    const key = new Key(free, settings);
    let now = t0;
    const counts = { admitted: 0, limited: 0, banned: 0 };
    while (now < t0 + 10 * MINUTE) {
      const result = key.request(now);
      counts[result.outcome]++;
      now += 20 + (result.retryAfter ?? 0) * 1000;
    }
    expect(counts.banned).toBe(0);
    // 60 in the first minute, then about one a second: the plan's rate (the day's 1,000 aside).
    expect(counts.admitted).toBeGreaterThanOrEqual(0.95 * 10 * 60);
    expect(counts.admitted).toBeLessThanOrEqual(10 * 60);
  });

  it('a ban ends with the count started again: the refusal after the threshold bans again', () => {
    const key = new Key({ perMinute: 1, perDay: 100 }, { maxRefusalsPerMinute: 2, banMs: 5_000 });
    const at = (ms: number) => key.request(t0 + ms).outcome;
    expect([at(0), at(1), at(2), at(3), at(4)]).toEqual([
      'admitted',
      'limited',
      'limited',
      'limited',
      'banned',
    ]);
    // The ban (set at 4 ms) ends at 5,004 ms; the first refusal after it waited as it was told.
    expect([at(5_004), at(5_005), at(5_006), at(5_007)]).toEqual([
      'limited',
      'limited',
      'limited',
      'banned',
    ]);
  });
});

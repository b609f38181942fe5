/**
 * The limiter's decision on a state it is given (lib/limits/counter-plan.ts), with no DynamoDB:
 * what one request writes, and that writers planning on stale states — as containers with stale
 * caches do — admit exactly the limit and ban once, whatever the order their writes arrive in.
 * The store's part (reading a state, writing a plan as one conditional UpdateItem) is
 * test/integration/rate-limiter.test.ts's; that the model of that UpdateItem these writers run
 * against (test/support/counter-item-model.ts) agrees with the real one on DynamoDB Local is
 * test/integration/counter-item-model.test.ts's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keepUntil, planRequest, type CounterWrite } from '../../lib/limits/counter-plan.ts';
import { DAY_MS, type CounterState, type Decision } from '../../lib/limits/sliding-window.ts';
import { applyCounterWrite } from '../support/counter-item-model.ts';

const LIMITS = { perMinute: 60, perDay: 1_000 };
const SETTINGS = { maxRefusalsPerMinute: 10, banMs: 15 * 60_000 };
/** 10 s into a minute, well inside its day. */
const NOW = Date.UTC(2026, 10, 27, 12, 30, 10);

/**
 * Writers that each planned on `state` (one stale snapshot), arriving in `order`: a writer whose
 * conditions fail plans again on what it finds (the stored state), as the store does.
 */
function race(state: CounterState, times: readonly number[], order: readonly number[]) {
  let stored = state;
  const decisions: Decision[] = [];
  const pending = order.map((i) => ({
    now: times[i]!,
    plan: planRequest(state, times[i]!, LIMITS, SETTINGS),
  }));
  let writes = 0;
  while (pending.length > 0) {
    const next = pending.shift()!;
    if (!next.plan.write) {
      decisions.push(next.plan.decision);
      continue;
    }
    writes++;
    const after = applyCounterWrite(stored, next.plan.write);
    if (after) {
      stored = after;
      decisions.push(next.plan.answer(after));
    } else {
      pending.push({ now: next.now, plan: planRequest(stored, next.now, LIMITS, SETTINGS) });
    }
  }
  return { stored, decisions, writes };
}

const count = (decisions: readonly Decision[], outcome: Decision['outcome']) =>
  decisions.filter((d) => d.outcome === outcome).length;

/** 0 … n − 1 in the order a stream of picks shuffles them to (Fisher–Yates). */
function shuffled(n: number, picks: fc.Stream<number>): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let k = 0;
  for (const pick of picks.take(n)) {
    const j = k + (pick % (n - k));
    [order[k], order[j]] = [order[j]!, order[k]!];
    k++;
  }
  return order;
}

describe('what one request writes', () => {
  it('rolls both windows in from nothing for a key with no counters, and keeps them two days', () => {
    const plan = planRequest({}, NOW, LIMITS, SETTINGS);
    expect(plan.write).toMatchObject({
      kind: 'admit',
      minute: { kind: 'roll', seenStart: undefined, seenCurrent: undefined, previous: 0 },
      day: { kind: 'roll', seenStart: undefined, previous: 0 },
      keepUntil: keepUntil(NOW - (NOW % DAY_MS)),
    });
    const stored = applyCounterWrite({}, plan.write!)!;
    expect(plan.write && plan.answer(stored)).toMatchObject({
      outcome: 'admitted',
      minute: { current: 1 },
      day: { current: 1 },
    });
  });

  it('bounds the current count by the limit less the previous window’s weighted share', () => {
    const start = NOW - (NOW % 60_000);
    const state: CounterState = {
      minute: { start, current: 5, previous: 60 },
      day: { start: NOW - (NOW % DAY_MS), current: 65, previous: 0 },
    };
    // 10 s in: floor(60 × 50/60) = 50 of the previous minute still count.
    expect(planRequest(state, NOW, LIMITS, SETTINGS).write as CounterWrite).toMatchObject({
      minute: { kind: 'same', start, previous: 60, below: 10 },
    });
  });

  it('writes nothing for a banned key: the decision alone', () => {
    const plan = planRequest({ bannedUntil: NOW + 1_000 }, NOW, LIMITS, SETTINGS);
    if (plan.write) throw new Error('a banned key’s request planned a write');
    expect(plan.decision).toMatchObject({ outcome: 'banned', retryAfterMs: 1_000 });
  });

  it('keeps a banned key’s counters at least as long as its ban', () => {
    const start = NOW - (NOW % 60_000);
    const full: CounterState = {
      minute: { start, current: 60, previous: 0 },
      day: { start: NOW - (NOW % DAY_MS), current: 60, previous: 0 },
      refusals: { start, count: 10 },
      retryAt: NOW + 5_000,
    };
    const ban = planRequest(
      full,
      NOW,
      { perMinute: 60, perDay: 60 },
      { maxRefusalsPerMinute: 10, banMs: 3 * DAY_MS },
    );
    expect(ban.write).toMatchObject({
      kind: 'refuse',
      step: { kind: 'ban' },
      keepUntil: NOW + 3 * DAY_MS,
    });
  });
});

describe('writers planning on one stale state (property-based)', () => {
  it('admit exactly the limit in a minute, whatever order their writes arrive in', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 0, max: 40 }),
        fc.infiniteStream(fc.nat()),
        (requests, already, shuffle) => {
          const start = NOW - (NOW % 60_000);
          const state: CounterState = already
            ? {
                minute: { start, current: already, previous: 0 },
                day: { start: NOW - (NOW % DAY_MS), current: already, previous: 0 },
              }
            : {};
          const order = shuffled(requests, shuffle);
          const times = order.map((i) => NOW + i);
          const { stored, decisions } = race(state, times, order);
          const admitted = Math.min(requests, LIMITS.perMinute - already);
          expect(count(decisions, 'admitted')).toBe(admitted);
          expect(stored.minute?.current).toBe(already + admitted || undefined);
          // Only admitted requests are counted; the refusals are answered, none lost.
          expect(decisions).toHaveLength(requests);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('ban once: of a burst of early refusals, whatever order their writes arrive in, exactly one starts the ban, and the rest are answered banned', () => {
    const start = NOW - (NOW % 60_000);
    const full: CounterState = {
      minute: { start, current: 60, previous: 0 },
      day: { start: NOW - (NOW % DAY_MS), current: 60, previous: 0 },
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.infiniteStream(fc.nat()),
        (requests, shuffle) => {
          const times = Array.from({ length: requests }, (_, i) => NOW + i);
          const { stored, decisions } = race(full, times, shuffled(requests, shuffle));
          // The first refusal written waited for nothing; the next ten are counted; the twelfth
          // bans, from its own request's time.
          expect(count(decisions, 'limited')).toBe(Math.min(requests, 11));
          expect(count(decisions, 'banned')).toBe(Math.max(0, requests - 11));
          expect(decisions).toHaveLength(requests);
          if (requests <= 11) {
            expect(stored.bannedUntil).toBeUndefined();
            expect(stored.refusals).toEqual(
              requests > 1 ? { start, count: requests - 1 } : undefined,
            );
            return;
          }
          expect(times.map((time) => time + SETTINGS.banMs)).toContain(stored.bannedUntil);
          expect(stored.refusals).toEqual({ start, count: 0 });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('writers planning on one stale state, in the order they planned', () => {
  it('ban once: the twelfth early refusal bans from its own time', () => {
    const start = NOW - (NOW % 60_000);
    const full: CounterState = {
      minute: { start, current: 60, previous: 0 },
      day: { start: NOW - (NOW % DAY_MS), current: 60, previous: 0 },
    };
    const times = Array.from({ length: 40 }, (_, i) => NOW + i);
    const { stored, decisions } = race(
      full,
      times,
      times.map((_, i) => i),
    );
    // The first refusal waited for nothing; the next ten are counted; the twelfth bans.
    expect(count(decisions, 'limited')).toBe(11);
    expect(count(decisions, 'banned')).toBe(29);
    expect(stored.bannedUntil).toBe(NOW + 11 + SETTINGS.banMs);
    expect(stored.refusals).toEqual({ start, count: 0 });
  });
});

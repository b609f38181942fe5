/**
 * The deploy's judgement of a new version (lib/deploy-judgement.ts): the binomial tail against a
 * direct sum, Chernoff's bound (the alarms' score) never firing where the exact chance would
 * not, and the cases the issue names — 2 cancels of 2 failing, a 3% failure rate, a 5× slower
 * version, one answering 503 where the old one did not — against a healthy version's luck; and
 * when the figures are not enough to pass a version at all.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  binomialTail,
  ERROR_SCORE_THRESHOLD,
  errorScore,
  FLOOR_RATE,
  judge,
  LATENCY_RATIO,
  MIN_LATENCY_SAMPLES,
  MIN_LIVE_SHARE,
  MIN_OWN_REQUESTS,
  missingFigures,
  sameMinutesRate,
  SIGNIFICANCE,
} from '../../lib/deploy-judgement.ts';

/** P(X ≥ k), summed term by term from the binomial coefficients (small n only). */
function directTail(k: number, n: number, p: number): number {
  let sum = 0;
  let choose = 1;
  for (let i = 0; i <= n; i++) {
    if (i > 0) choose = (choose * (n - i + 1)) / i;
    if (i >= k) sum += choose * p ** i * (1 - p) ** (n - i);
  }
  return sum;
}

const healthy = (requests: number, failures = 0, unavailable = 0) => ({
  requests,
  failures,
  unavailable,
  latencyMs: 20,
  latencySamples: requests,
});

describe('the binomial tail', () => {
  it('is the direct sum, for every k of small n', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        fc.double({ min: 0.0001, max: 0.9999, noNaN: true }),
        (k, n, p) => {
          expect(binomialTail(k, n, p)).toBeCloseTo(directTail(k, n, p), 12);
        },
      ),
    );
  });

  it('stays exact far in the tail of a large n (no 1 − almost 1)', () => {
    // 30 failures in 1,000 at 0.1%: about 10⁻³⁰ (Poisson(1) ≈ e⁻¹/30!).
    const tail = binomialTail(30, 1000, 0.001);
    expect(tail).toBeGreaterThan(0);
    expect(tail).toBeLessThan(1e-28);
    expect(binomialTail(1, 1000, 0.001)).toBeCloseTo(1 - 0.999 ** 1000, 12);
  });
});

describe("the alarms' score (Chernoff's bound)", () => {
  it('never fires where the exact chance is not below the significance', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.double({ min: FLOOR_RATE, max: 0.5, noNaN: true }),
        (k, n, p) => {
          fc.pre(k <= n);
          if (errorScore(k, n, p) >= ERROR_SCORE_THRESHOLD) {
            expect(binomialTail(k, n, p)).toBeLessThan(SIGNIFICANCE);
          }
        },
      ),
    );
  });

  it('fires on 2 failures of 2 at the floor rate, and not on 1 failure of 1', () => {
    expect(errorScore(2, 2, FLOOR_RATE)).toBeGreaterThanOrEqual(ERROR_SCORE_THRESHOLD);
    expect(errorScore(1, 1, FLOOR_RATE)).toBe(0);
  });
});

describe('a new version judged against the old one', () => {
  it('fails a version that failed both of 2 cancels, the old one failing none', () => {
    const verdict = judge(healthy(2, 2), healthy(40));
    expect(verdict.failing).toBe(true);
    expect(verdict.chance).toBeCloseTo(FLOOR_RATE ** 2, 12);
    expect(verdict.reasons[0]).toMatch(/2 failures in 2 requests/);
  });

  it('passes a version with the same share of failures as the old one (2 of 100 beside 1%)', () => {
    expect(judge(healthy(100, 2), healthy(1000, 10)).failing).toBe(false);
  });

  it('fails a version that fails 3% of its requests once it has about a hundred, not before', () => {
    expect(judge(healthy(100, 3), healthy(900)).failing).toBe(true);
    expect(judge(healthy(30, 1), healthy(270)).failing).toBe(false);
  });

  it('finds a version 5 times slower, from enough requests of each, and not from a few', () => {
    const slow = { ...healthy(MIN_LATENCY_SAMPLES), latencyMs: 100 };
    const verdict = judge(slow, healthy(200));
    expect(verdict.slow).toBe(true);
    expect(verdict.latencyRatio).toBe(5);
    expect(judge({ ...slow, latencySamples: MIN_LATENCY_SAMPLES - 1 }, healthy(200)).slow).toBe(
      false,
    );
    expect(judge({ ...healthy(200), latencyMs: 20 * LATENCY_RATIO * 0.9 }, healthy(200)).slow).toBe(
      false,
    );
  });
});

describe("a new version's 503s, against the old version's over the same minutes", () => {
  it('fails a version that answers 503 where the old one did not (its DynamoDB calls time out)', () => {
    const verdict = judge(
      healthy(200, 0, 12),
      healthy(2000),
      sameMinutesRate([], { requests: 2000, unavailable: 0 }),
    );
    expect(verdict.unavailable).toBe(true);
    expect(verdict.failing).toBe(false);
    expect(verdict.reasons).toEqual([expect.stringMatching(/^12 answers 503 in 200 requests/)]);
  });

  it('does not fail it for a DynamoDB incident both versions saw in the same minutes (a canary), though the old one saw none before', () => {
    // Minute 1 quiet; minute 2, DynamoDB slow: a fifth of each version's requests answered 503.
    const minutes = [
      { newRequests: 10, oldRequests: 90, oldUnavailable: 0 },
      { newRequests: 10, oldRequests: 90, oldUnavailable: 18 },
    ];
    const rate = sameMinutesRate(minutes, { requests: 6000, unavailable: 0 });
    expect(rate).toBeCloseTo(0.1, 12);
    expect(judge(healthy(20, 0, 4), healthy(6180, 0, 18), rate).unavailable).toBe(false);
    // Pooled with the hour before, the same incident would have rolled it back.
    expect(judge(healthy(20, 0, 4), healthy(6180, 0, 18)).unavailable).toBe(true);
  });

  it("takes the minutes only the new version served (after the last shift) at the old version's rate before the deployment", () => {
    const minutes = [
      { newRequests: 10, oldRequests: 90, oldUnavailable: 9 },
      { newRequests: 30, oldRequests: 0, oldUnavailable: 0 },
    ];
    // 10 requests at the canary's 10%, 30 at the hour before's 1%.
    expect(sameMinutesRate(minutes, { requests: 1000, unavailable: 10 })).toBeCloseTo(
      (10 * 0.1 + 30 * 0.01) / 40,
      12,
    );
    // No minute of the new version: the old version's rate before.
    expect(sameMinutesRate([], { requests: 1000, unavailable: 10 })).toBe(0.01);
  });
});

describe('no figures, no pass', () => {
  it(`asks for ${MIN_OWN_REQUESTS} invocations of the new version's own`, () => {
    const own = { newSinceShift: 0, liveSinceShift: 0 };
    expect(missingFigures({ ...own, ownRequests: MIN_OWN_REQUESTS - 1 })).toBe(
      `${MIN_OWN_REQUESTS - 1} invocations of the new version in its figures, ${MIN_OWN_REQUESTS} needed`,
    );
    expect(missingFigures({ ...own, ownRequests: MIN_OWN_REQUESTS })).toBeUndefined();
  });

  it(`asks for ${MIN_LIVE_SHARE * 100}% of live's invocations since the last shift to be the new version's`, () => {
    const share = (newSinceShift: number) =>
      missingFigures({ ownRequests: 1000, newSinceShift, liveSinceShift: 1000 });
    expect(share(899)).toMatch(/899 of the 1000 invocations through live since the last shift/);
    expect(share(900)).toBeUndefined();
  });
});

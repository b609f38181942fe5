/**
 * The deploy's judgement of a new version (lib/deploy-judgement.ts): the binomial tail against a
 * direct sum, Chernoff's bound (the alarms' score) never firing where the exact chance would
 * not, and the cases the issue names — 2 cancels of 2 failing, a 3% failure rate, a 5× slower
 * version — against a healthy version's luck.
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

const healthy = (requests: number, failures = 0) => ({
  requests,
  failures,
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

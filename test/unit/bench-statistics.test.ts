/** The statistics bench:cold-init judges its goal with (bench/statistics.ts). */
import { describe, expect, it } from 'vitest';
import { median, ratioInterval, verdictOn } from '../../bench/statistics.ts';

/** Fifteen samples around `centre`, spread ±`spread` (evenly, in a shuffled order). */
const samples = (centre: number, spread: number) =>
  [7, 0, 12, 3, 9, 14, 1, 5, 11, 2, 13, 6, 10, 4, 8].map((i) => centre - spread + (i * spread) / 7);

describe('ratioInterval: how sure a ratio of two medians is', () => {
  it('holds the ratio of the medians', () => {
    const { low, high } = ratioInterval(samples(130, 20), samples(100, 15));
    const ratio = median(samples(130, 20)) / median(samples(100, 15));
    expect(low).toBeLessThan(ratio);
    expect(high).toBeGreaterThan(ratio);
  });

  it('is wide when the samples spread, narrow when they do not', () => {
    const wide = ratioInterval(samples(110, 40), samples(100, 40));
    const narrow = ratioInterval(samples(110, 2), samples(100, 2));
    expect(wide.high - wide.low).toBeGreaterThan(0.3);
    expect(narrow.high - narrow.low).toBeLessThan(0.05);
    // So a 1.10 median can be over, under or undecided against a 1.10 goal: only the spread says.
    expect(narrow.low).toBeGreaterThan(1.05);
    expect(narrow.high).toBeLessThan(1.15);
  });

  it('gives the same interval for the same samples (seeded), another for another seed', () => {
    const a = samples(120, 30);
    const b = samples(100, 25);
    expect(ratioInterval(a, b)).toEqual(ratioInterval(a, b));
    expect(ratioInterval(a, b, { seed: 1 })).not.toEqual(ratioInterval(a, b, { seed: 2 }));
  });

  it('widens with the confidence asked for', () => {
    const a = samples(120, 30);
    const b = samples(100, 25);
    const ninety = ratioInterval(a, b);
    const ninetyNine = ratioInterval(a, b, { confidence: 0.99 });
    expect(ninetyNine.low).toBeLessThanOrEqual(ninety.low);
    expect(ninetyNine.high).toBeGreaterThanOrEqual(ninety.high);
    expect(ninetyNine.high - ninetyNine.low).toBeGreaterThan(ninety.high - ninety.low);
  });
});

describe('verdictOn: a goal judged on an interval', () => {
  it('is within only when all of the interval is, over only when none of it is', () => {
    expect(verdictOn({ low: 0.9, high: 1.1 }, 1.1)).toBe('within the goal');
    expect(verdictOn({ low: 1.1, high: 1.3 }, 1.1)).toBe('not decided (more --runs)');
    expect(verdictOn({ low: 1.05, high: 1.12 }, 1.1)).toBe('not decided (more --runs)');
    expect(verdictOn({ low: 1.11, high: 1.3 }, 1.1)).toBe('OVER the goal');
  });
});

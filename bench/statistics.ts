/** The statistics the benchmarks report. */

/** The value at percentile `p` (0–100) of values sorted ascending (nearest rank, below). */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** The median of values in any order. */
export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/**
 * A small seeded generator (mulberry32), numbers in [0, 1): the same sequence for the same seed,
 * run to run (the same interval for the same samples; the same generated store).
 */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * How sure a ratio of medians is, from the samples behind it: `median(numerators) /
 * median(denominators)` recomputed on `iterations` resamplings of each set (drawn with
 * replacement; the bootstrap), and the range holding `confidence` of them (a 90% interval by
 * default). With 15 fresh processes a side, a cold penalty's ratio to its floor's has a 90%
 * interval 0.3–0.4 wide (2026-11-26): one median says little about a goal 0.1 away.
 */
export function ratioInterval(
  numerators: readonly number[],
  denominators: readonly number[],
  options: { iterations?: number; confidence?: number; seed?: number } = {},
): { low: number; high: number } {
  const iterations = options.iterations ?? 2_000;
  const tail = (1 - (options.confidence ?? 0.9)) / 2;
  const random = seeded(options.seed ?? 20261126);
  const resample = (values: readonly number[]) =>
    values.map(() => values[Math.floor(random() * values.length)] as number);
  const ratios: number[] = [];
  for (let i = 0; i < iterations; i++) {
    ratios.push(median(resample(numerators)) / median(resample(denominators)));
  }
  ratios.sort((a, b) => a - b);
  return { low: percentile(ratios, tail * 100), high: percentile(ratios, (1 - tail) * 100) };
}

/**
 * A goal's verdict on an interval, not on one median: within when all of it is at or below the
 * goal, over when all of it is above, not decided otherwise.
 */
export function verdictOn(
  interval: { readonly low: number; readonly high: number },
  goal: number,
): 'within the goal' | 'OVER the goal' | 'not decided (more --runs)' {
  if (interval.high <= goal) return 'within the goal';
  return interval.low > goal ? 'OVER the goal' : 'not decided (more --runs)';
}

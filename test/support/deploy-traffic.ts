/**
 * Callers of a function during a simulated deploy (test/integration/deploy-table.test.ts): their
 * requests arrive at random (Poisson, second by second), go to the old or the new version as
 * `live` routes them (all to the old one before the first shift; during a canary each request to
 * the new one at random with the canary's share; all to the new one after the last shift), and
 * meet an outcome each version draws at random. Each invocation adds to a simulated CloudWatch
 * (./simulated-cloudwatch.ts) what its outcome publishes — the metrics and values the test
 * recorded from the real handler's invocations and lines (`Published`) — in the minute it
 * started; its duration is drawn from durations the test measured.
 *
 * The hour before the first shift (the old version's baseline) is its expected figures, without
 * drawing (what the judgement reads of it is its rates and its median), made once a rate
 * (`baseline`) and shared by the trials.
 */
import { MINUTE, SimulatedCloudWatch } from './simulated-cloudwatch.ts';

/** What an invocation of a version can come to. */
export const OUTCOMES = ['ok', '500', 'timeout', '503', 'init'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** What one invocation adds to CloudWatch: metric values by key, and the metrics its duration goes to. */
export interface Published {
  readonly counts: readonly { readonly key: string; readonly value: number }[];
  readonly durations: readonly string[];
}

/** A version as callers meet it: an invocation's outcome at a moment, and its slowdown. */
export interface Behaviour {
  readonly outcome: (random: () => number, at: number) => Outcome;
  /** Its durations: the healthy ones times this (a failed invocation's timeout: TIMEOUT_MS). */
  readonly slowdown: number;
}

/** The duration of an invocation that times out (cancelOrder's 10 s timeout). */
export const TIMEOUT_MS = 10_000;

export interface Callers {
  readonly perMinute: number;
  /** The first shift to the new version (epoch ms). */
  readonly shiftAt: number;
  /** A canary: the new version's share of requests, for how long after the first shift. */
  readonly canary?: { readonly share: number; readonly ms: number };
  /** Until when callers come. */
  readonly until: number;
}

/** A Poisson draw of mean `mean` (Knuth's: fine for the means of a second's requests). */
function poisson(random: () => number, mean: number): number {
  const limit = Math.exp(-mean);
  let k = 0;
  for (let p = random(); p > limit; p *= random()) k++;
  return k;
}

/**
 * The hour (`minutes`) before the minute of the first shift: the old version alone, healthy, at
 * its expected figures (`perMinute` requests a minute, its durations in their proportions). The
 * same for every trial of a rate: a simulated CloudWatch that trials take as their base.
 */
export function baseline(
  shiftMinute: number,
  minutes: number,
  perMinute: number,
  ok: Published,
  durations: readonly number[],
): SimulatedCloudWatch {
  const cloudWatch = new SimulatedCloudWatch(0);
  const expected = new Map<number, number>();
  for (const ms of durations) {
    expected.set(ms, (expected.get(ms) ?? 0) + perMinute / durations.length);
  }
  for (let m = 1; m <= minutes; m++) {
    const minute = shiftMinute - m * MINUTE;
    for (const { key, value } of ok.counts) cloudWatch.add(key, minute, value, perMinute);
    for (const key of ok.durations) cloudWatch.add(key, minute, 0, 0, expected);
  }
  return cloudWatch;
}

/**
 * Adds the callers' invocations to `cloudWatch` from the minute of the first shift on (the hour
 * before: `baseline`). `published[version][outcome]`: what an
 * invocation adds; `durations`: the healthy version's measured durations, ms.
 */
export function simulateCallers(
  cloudWatch: SimulatedCloudWatch,
  callers: Callers,
  versions: Readonly<Record<'old' | 'new', Behaviour>>,
  published: Readonly<Record<'old' | 'new', Readonly<Record<Outcome, Published>>>>,
  durations: readonly number[],
  random: () => number,
): void {
  const shiftMinute = Math.floor(callers.shiftAt / MINUTE) * MINUTE;
  // From the first shift's minute on, request by request; counted by version (0 old, 1 new),
  // by outcome and by duration drawn (its index among `durations`; a timeout apart).
  const sides = ['old', 'new'] as const;
  const perSecond = callers.perMinute / 60;
  const counts = sides.map(() => new Float64Array(OUTCOMES.length));
  const drawn = sides.map(() => new Float64Array(durations.length));
  const timedOut = [0, 0];
  const outcomeIndex = new Map(OUTCOMES.map((outcome, i) => [outcome, i]));
  const flush = (minute: number) => {
    sides.forEach((side, v) => {
      OUTCOMES.forEach((outcome, o) => {
        const n = counts[v]![o]!;
        if (n === 0) return;
        for (const { key, value } of published[side][outcome].counts) {
          cloudWatch.add(key, minute, value, n);
        }
      });
      const times = new Map<number, number>();
      drawn[v]!.forEach((n, i) => {
        if (n === 0) return;
        const ms = durations[i]! * versions[side].slowdown;
        times.set(ms, (times.get(ms) ?? 0) + n);
      });
      if (timedOut[v]! > 0) times.set(TIMEOUT_MS, timedOut[v]!);
      if (times.size > 0) {
        for (const key of published[side].ok.durations) cloudWatch.add(key, minute, 0, 0, times);
      }
      counts[v]!.fill(0);
      drawn[v]!.fill(0);
      timedOut[v] = 0;
    });
  };
  const canaryEnd = callers.shiftAt + (callers.canary?.ms ?? 0);
  for (let second = shiftMinute; second < callers.until; second += 1000) {
    if (second % MINUTE === 0 && second > shiftMinute) flush(second - MINUTE);
    for (let k = poisson(random, perSecond); k > 0; k--) {
      const at = second + random() * 1000;
      const v =
        at < callers.shiftAt
          ? 0
          : callers.canary && at < canaryEnd
            ? random() < callers.canary.share
              ? 1
              : 0
            : 1;
      const outcome = versions[sides[v]].outcome(random, at);
      counts[v]![outcomeIndex.get(outcome)!]! += 1;
      if (outcome === 'timeout') timedOut[v]! += 1;
      else drawn[v]![Math.floor(random() * durations.length)]! += 1;
    }
  }
  flush(Math.floor((callers.until - 1) / MINUTE) * MINUTE);
}

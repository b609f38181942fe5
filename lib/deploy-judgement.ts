/**
 * How a deploy judges a function's new version against the one it replaces, on what callers
 * feel: its failures (500 answers and failed invocations), its 503s (against the old version's
 * over the same minutes: a version whose own DynamoDB calls time out answers 503 where the old
 * one did not; a DynamoDB incident both versions see is no news) and its latency (a list's time
 * to first byte). One place for the numbers and the metrics, read by the deployment alarms
 * CodeDeploy watches during a canary (infra/alarms.ts, one minute at a time) and by the
 * post-traffic hook, which judges the whole deployment so far (functions/deploy-hooks/judge.ts).
 *
 * Failures and 503s are judged statistically, not by a bare percentage: the new version fails
 * when it failed at least MIN_FAILURES times and the chance of that many failures or more in its
 * requests, at the old version's rate over the same minutes (at least FLOOR_RATE), is below
 * SIGNIFICANCE. So a version that fails 2 cancels of 2 is caught (0.001² = 10⁻⁶), and 2
 * failures in 100 requests of a version whose predecessor failed 1% of its own are not (0.26).
 * The hook computes that chance exactly (binomialTail); an alarm cannot (CloudWatch's metric
 * math has no binomial), so it uses Chernoff's bound, exp(−n·D(k/n ‖ p)) ≥ the chance
 * (errorScore): an alarm fires on fewer versions than the hook, never on more.
 *
 * Latency is judged by medians: the new version is slow when its median is LATENCY_RATIO times
 * the old one's or more, each from at least MIN_LATENCY_SAMPLES requests (a median of fewer is
 * a few cold starts).
 *
 * No figures, no pass (missingFigures): the hook passes a new version only on figures of its
 * own — at least MIN_OWN_REQUESTS of its invocations, and, in the whole minutes since the last
 * shift, at least MIN_LIVE_SHARE of the invocations through `live` — and waits for them within
 * its time; without them it fails, saying so.
 */
import { LIVE_ALIAS } from './deployment.ts';
import type { FunctionName } from './functions.ts';
import { METRIC_NAMES, VERSION_DIMENSIONS } from './metrics.ts';

/** The chance below which a new version's failures are not bad luck. */
export const SIGNIFICANCE = 0.001;
/** The failure rate a new version is judged at when the old one failed less (or had no traffic). */
export const FLOOR_RATE = 0.001;
/** Fewer failures than this are no verdict, whatever the odds. */
export const MIN_FAILURES = 2;
/** A new version whose median latency is this many times the old one's is slow. */
export const LATENCY_RATIO = 2;
/** Requests of each version a median is compared from. */
export const MIN_LATENCY_SAMPLES = 20;
/**
 * Invocations of its own a new version needs before it can pass: callers' through `live`, and
 * the watch's probes (functions/deploy-hooks/bake.ts). As many as a median is compared from, so
 * that both judgements have something to judge.
 */
export const MIN_OWN_REQUESTS = MIN_LATENCY_SAMPLES;
/**
 * The share of the invocations through `live`, in the whole minutes since the last shift, that
 * must be the new version's: after the last shift `live` serves nothing else, so figures that
 * say otherwise are not the version `live` serves (traffic still split, or the wrong version read).
 */
export const MIN_LIVE_SHARE = 0.9;
/**
 * How long after a minute ends the watch counts on CloudWatch having its figures. AWS documents
 * no bound; Lambda sends its metrics a minute at a time, stamped at the invocation's start, so a
 * long invocation's figures come after it ends (docs/deploy.md, "What rolls a deploy back").
 */
export const METRICS_DELAY_MS = 60_000;

/** `ln(1 / SIGNIFICANCE)`: the score (errorScore) from which an alarm fires. */
export const ERROR_SCORE_THRESHOLD = Math.log(1 / SIGNIFICANCE);

/**
 * P(X ≥ k) for X ~ Binomial(n, p): the chance of k or more failures in n requests that each fail
 * with chance p. Summed from k up, term by term (each from the one before), until the terms no
 * longer count.
 */
export function binomialTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  // log of the k-th term: ln C(n, k) + k ln p + (n − k) ln(1 − p).
  let logTerm = k * Math.log(p) + (n - k) * Math.log1p(-p);
  for (let i = 1; i <= k; i++) logTerm += Math.log((n - k + i) / i);
  let term = Math.exp(logTerm);
  let sum = term;
  const ratio = p / (1 - p);
  for (let i = k; i < n; i++) {
    term *= ((n - i) / (i + 1)) * ratio;
    sum += term;
    if (term < sum * 1e-16 && i > n * p) break;
  }
  return Math.min(1, sum);
}

/** Kullback–Leibler divergence of Bernoulli(q) from Bernoulli(p), in nats. */
function divergence(q: number, p: number): number {
  const positive = q > 0 ? q * Math.log(q / p) : 0;
  const negative = q < 1 ? (1 - q) * Math.log((1 - q) / (1 - p)) : 0;
  return positive + negative;
}

/**
 * The alarms' score of k failures in n requests at rate p: n·D(k/n ‖ p) when there are at least
 * MIN_FAILURES and the share is above p, else 0. It reaches ERROR_SCORE_THRESHOLD only when
 * Chernoff's bound on the chance (exp(−score)) is below SIGNIFICANCE.
 */
export function errorScore(k: number, n: number, p: number): number {
  if (k < MIN_FAILURES || n <= 0) return 0;
  const q = Math.min(k / n, 1);
  return q > p ? n * divergence(q, p) : 0;
}

/** The rate a new version is judged at: the old version's over the same window, at least FLOOR_RATE. */
export function baselineRate(oldFailures: number, oldRequests: number): number {
  return Math.max(oldRequests > 0 ? oldFailures / oldRequests : 0, FLOOR_RATE);
}

/** One version's figures over a window. */
export interface VersionFigures {
  readonly requests: number;
  readonly failures: number;
  /** Its 503 answers (the authorizer: its key store's transient failures). */
  readonly unavailable: number;
  /** Median latency, ms, and how many requests it is from. */
  readonly latencyMs?: number;
  readonly latencySamples: number;
}

export interface Judgement {
  readonly failing: boolean;
  /** More 503s than the old version's rate over the same minutes explains. */
  readonly unavailable: boolean;
  readonly slow: boolean;
  /** Why, in words, for the hook's line. */
  readonly reasons: readonly string[];
  /** The chance of the new version's failures at the baseline rate, and that rate. */
  readonly chance: number;
  readonly baselineRate: number;
  /** The same for its 503s. */
  readonly unavailableChance: number;
  readonly unavailableRate: number;
  /** New median / old median, when both medians are judged. */
  readonly latencyRatio?: number;
}

/** The chance of k or more of n at `rate` (k below MIN_FAILURES: 1, no verdict). */
function chanceOf(k: number, n: number, rate: number): number {
  return k >= MIN_FAILURES ? binomialTail(k, n, rate) : 1;
}

/**
 * The new version against the old one, over the same window. `unavailableRate`: the old
 * version's 503 rate over the minutes the new one served (sameMinutesRate); by default its rate
 * over the whole window.
 */
export function judge(
  newer: VersionFigures,
  older: VersionFigures,
  unavailableRate = baselineRate(older.unavailable, older.requests),
): Judgement {
  const rate = baselineRate(older.failures, older.requests);
  const chance = chanceOf(newer.failures, newer.requests, rate);
  const failing = chance < SIGNIFICANCE;
  const unavailableFloor = Math.max(unavailableRate, FLOOR_RATE);
  const unavailableChance = chanceOf(newer.unavailable, newer.requests, unavailableFloor);
  const unavailable = unavailableChance < SIGNIFICANCE;
  const [newMs, oldMs] = [newer.latencyMs, older.latencyMs];
  const latencyRatio =
    newer.latencySamples >= MIN_LATENCY_SAMPLES &&
    older.latencySamples >= MIN_LATENCY_SAMPLES &&
    newMs !== undefined &&
    oldMs !== undefined &&
    oldMs > 0
      ? newMs / oldMs
      : undefined;
  const slow = latencyRatio !== undefined && latencyRatio >= LATENCY_RATIO;
  const reasons = [
    ...(failing
      ? [
          `${newer.failures} failures in ${newer.requests} requests, a chance of ${chance.toExponential(1)} at the old version's rate of ${rate}`,
        ]
      : []),
    ...(unavailable
      ? [
          `${newer.unavailable} answers 503 in ${newer.requests} requests, a chance of ${unavailableChance.toExponential(1)} at the old version's rate of ${round(unavailableFloor)} over the same minutes`,
        ]
      : []),
    ...(slow
      ? [
          `median latency ${newMs} ms, ${latencyRatio.toFixed(1)} times the old version's ${oldMs} ms`,
        ]
      : []),
  ];
  return {
    failing,
    unavailable,
    slow,
    reasons,
    chance,
    baselineRate: rate,
    unavailableChance,
    unavailableRate: unavailableFloor,
    ...(latencyRatio !== undefined ? { latencyRatio } : {}),
  };
}

const round = (rate: number) => Number(rate.toPrecision(3));

/** One minute of a deployment: the requests of each version, and the old version's 503s. */
export interface SharedMinute {
  readonly newRequests: number;
  readonly oldRequests: number;
  readonly oldUnavailable: number;
}

/**
 * The old version's 503 rate over the minutes the new version served, each minute weighted by
 * the new version's requests in it: in a minute both served (a canary), the old version's own
 * rate in that minute; in a minute only the new one served (after the last shift), the old
 * version's rate before the deployment (`before`). So a DynamoDB incident during a canary raises
 * the rate the new version is judged at as much as it raises its 503s, minute by minute; one
 * after the last shift, with no old version beside the new one to see it, does not.
 */
export function sameMinutesRate(
  minutes: readonly SharedMinute[],
  before: { readonly requests: number; readonly unavailable: number },
): number {
  const beforeRate = before.requests > 0 ? before.unavailable / before.requests : 0;
  let requests = 0;
  let expected = 0;
  for (const minute of minutes) {
    if (minute.newRequests <= 0) continue;
    const rate = minute.oldRequests > 0 ? minute.oldUnavailable / minute.oldRequests : beforeRate;
    requests += minute.newRequests;
    expected += minute.newRequests * rate;
  }
  return requests > 0 ? expected / requests : baselineRate(before.unavailable, before.requests);
}

/** What the watch knows of the new version's own invocations (functions/deploy-hooks/judge.ts). */
export interface OwnFigures {
  /** Its invocations through `live` since the deployment started, and its watch's probes' calls. */
  readonly ownRequests: number;
  /** Its invocations through `live`, and all of `live`'s, in the whole minutes since the last shift. */
  readonly newSinceShift: number;
  readonly liveSinceShift: number;
}

/**
 * Why the figures are not enough to pass the new version (fail closed), or undefined: fewer than
 * MIN_OWN_REQUESTS invocations of its own, or less than MIN_LIVE_SHARE of `live`'s since the
 * last shift.
 */
export function missingFigures(own: OwnFigures): string | undefined {
  if (own.ownRequests < MIN_OWN_REQUESTS) {
    return `${own.ownRequests} invocations of the new version in its figures, ${MIN_OWN_REQUESTS} needed`;
  }
  if (own.newSinceShift < MIN_LIVE_SHARE * own.liveSinceShift) {
    return `the new version has ${own.newSinceShift} of the ${own.liveSinceShift} invocations through live since the last shift, ${MIN_LIVE_SHARE * 100}% needed: its figures are not what live serves`;
  }
  return undefined;
}

/**
 * What a version's latency is read from: Lambda's Duration where the function's answer is done
 * when it is, the time to first byte (lib/metrics.ts) where it streams for longer than a caller
 * waits for its first byte (listOrders: a whole list). listOrderPages streams too, but a page
 * is written at once.
 */
export const LATENCY_METRIC: Readonly<Record<FunctionName, 'duration' | 'firstByte'>> = {
  listOrders: 'firstByte',
  listOrderPages: 'duration',
  cancelOrder: 'duration',
  authorizer: 'duration',
};

/** A CloudWatch metric as the judges read it: the alarms by CDK, the hook by GetMetricData. */
export interface JudgedMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly statistic: 'Sum' | 'SampleCount' | 'p50';
}

/** The metrics one version of a function (or all its versions) is judged by. */
export interface JudgedMetrics {
  /** Its invocations by callers (through `live`). */
  readonly requests: JudgedMetric;
  /** What adds up to its failures (+1) and what is taken from them (−1). */
  readonly failures: readonly { readonly metric: JudgedMetric; readonly sign: 1 | -1 }[];
  /** Its 503 answers (the authorizer: its key store's transient failures). */
  readonly unavailable: JudgedMetric;
  /** Its median latency, and how many requests that median is of. */
  readonly latency: JudgedMetric;
  readonly latencySamples: JudgedMetric;
}

/**
 * What a function's version is judged by: `version` one version, or undefined: all its versions
 * as callers invoke them (what the alarms take the new version from to have the old one's).
 * Lambda's own metrics through the `live` alias (by ExecutedVersion), so that the deploy check's
 * invocations of the version itself are not in them; the service's own by FunctionName (and
 * FunctionVersion), from which the deploy check's lines are left out. `namespace`: the stage's.
 */
export function judgedMetrics(
  fn: FunctionName,
  functionName: string,
  namespace: string,
  version?: string,
): JudgedMetrics {
  const lambda = (metricName: string, statistic: JudgedMetric['statistic']): JudgedMetric => ({
    namespace: 'AWS/Lambda',
    metricName,
    dimensions: {
      FunctionName: functionName,
      Resource: `${functionName}:${LIVE_ALIAS}`,
      ...(version !== undefined ? { ExecutedVersion: version } : {}),
    },
    statistic,
  });
  const own = (metricName: string, statistic: JudgedMetric['statistic']): JudgedMetric => ({
    namespace,
    metricName,
    dimensions: {
      [VERSION_DIMENSIONS[0]]: functionName,
      ...(version !== undefined ? { [VERSION_DIMENSIONS[1]]: version } : {}),
    },
    statistic,
  });
  const failures: JudgedMetrics['failures'] =
    fn === 'authorizer'
      ? [
          // A failed key check is an error of the authorizer's; a transient one is the store's.
          { metric: lambda('Errors', 'Sum'), sign: 1 },
          { metric: own(METRIC_NAMES.keyCheckTransientFailures, 'Sum'), sign: -1 },
        ]
      : [
          // Crashes and timeouts; 500 answers, which Lambda counts as successes.
          { metric: lambda('Errors', 'Sum'), sign: 1 },
          { metric: own(METRIC_NAMES.internalErrorAnswers, 'Sum'), sign: 1 },
        ];
  const firstByte = LATENCY_METRIC[fn] === 'firstByte';
  return {
    requests: lambda('Invocations', 'Sum'),
    failures,
    unavailable:
      fn === 'authorizer'
        ? own(METRIC_NAMES.keyCheckTransientFailures, 'Sum')
        : own(METRIC_NAMES.unavailableAnswers, 'Sum'),
    latency: firstByte ? own(METRIC_NAMES.timeToFirstByte, 'p50') : lambda('Duration', 'p50'),
    latencySamples: firstByte
      ? own(METRIC_NAMES.timeToFirstByte, 'SampleCount')
      : lambda('Invocations', 'Sum'),
  };
}

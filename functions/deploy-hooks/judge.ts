/**
 * The post-traffic hook's judgement of a deployment: the new version over every minute it has
 * had callers (from the deployment's start), against the old version over the same minutes and
 * the hour before the deployment started (after the last shift the old version has no callers:
 * its hour before is what callers had), by lib/deploy-judgement.ts's rules — the exact binomial
 * chance of the new version's failures at the old one's rate, of its 503s at the old one's rate
 * over the same minutes, the ratio of their median latencies — and whether the figures are the
 * new version's own and enough to pass it (missingFigures: no figures, no pass).
 *
 * One GetMetricData call a judgement: the counts minute by minute (a minute both versions served
 * is told from one only the new version served), the medians as one datapoint over the window.
 * What the watch's own probes of the new version got (./bake.ts) counts as its invocations too.
 * It catches what a minute's alarm cannot: a canary's 2 failed cancels in 2 different minutes,
 * a staging deploy (all at once: no old version beside the new one).
 */
import {
  GetMetricDataCommand,
  type CloudWatchClient,
  type MetricDataQuery,
  type MetricDataResult,
} from '@aws-sdk/client-cloudwatch';
import {
  judge,
  judgedMetrics,
  missingFigures,
  sameMinutesRate,
  type JudgedMetric,
  type JudgedMetrics,
  type Judgement,
  type OwnFigures,
  type SharedMinute,
  type VersionFigures,
} from '../../lib/deploy-judgement.ts';
import type { FunctionName } from '../../lib/functions.ts';

/** How far before the deployment the old version's figures are read from. */
export const BASELINE_MS = 60 * 60_000;

export interface JudgedDeployment {
  readonly group: FunctionName;
  readonly functionName: string;
  /** The stage's namespace of the service's own metrics. */
  readonly namespace: string;
  readonly newVersion: string;
  readonly oldVersion: string;
  /** When the deployment started (epoch ms): the new version had no callers before. */
  readonly startedAt: number;
  /** When the last shift was done (the post-traffic hook's start): `live` serves the new version only. */
  readonly shiftedAt: number;
}

/** What the watch's probes of the new version got: its calls, those that failed, those answered 503. */
export interface ProbeTally {
  readonly requests: number;
  readonly failures: number;
  readonly unavailable: number;
}

export const NO_PROBES: ProbeTally = { requests: 0, failures: 0, unavailable: 0 };

export interface DeploymentJudgement extends Judgement {
  readonly newer: VersionFigures;
  readonly older: VersionFigures;
  readonly own: OwnFigures;
  /** Why the figures are not enough to pass the new version yet, if they are not. */
  readonly missing?: string;
}

const MINUTE = 60_000;

/** The counts read minute by minute, and the medians read once over the window. */
const COUNTS = ['requests', 'unavailable'] as const;

/** The queries of one version's figures (or all versions', `live`), their ids prefixed. */
function queries(
  prefix: string,
  metrics: JudgedMetrics,
  windowPeriod: number,
  which: 'all' | 'requests' = 'all',
): MetricDataQuery[] {
  const query = (id: string, metric: JudgedMetric, period: number): MetricDataQuery => ({
    Id: `${prefix}${id}`,
    MetricStat: {
      Metric: {
        Namespace: metric.namespace,
        MetricName: metric.metricName,
        Dimensions: Object.entries(metric.dimensions).map(([Name, Value]) => ({ Name, Value })),
      },
      Period: period,
      Stat: metric.statistic,
    },
  });
  if (which === 'requests') return [query('requests', metrics.requests, 60)];
  return [
    ...COUNTS.map((id) => query(id, metrics[id], 60)),
    ...metrics.failures.map(({ metric }, i) => query(`failures${i}`, metric, 60)),
    query('latency', metrics.latency, windowPeriod),
    query('samples', metrics.latencySamples, windowPeriod),
  ];
}

/** A result's values by the start of their minute (CloudWatch lists them newest first). */
function byMinute(result: MetricDataResult | undefined): Map<number, number> {
  const minutes = new Map<number, number>();
  const timestamps = result?.Timestamps ?? [];
  (result?.Values ?? []).forEach((value, i) => {
    const at = timestamps[i]?.getTime();
    if (at !== undefined) minutes.set(at, (minutes.get(at) ?? 0) + value);
  });
  return minutes;
}

const total = (minutes: Map<number, number>, from = -Infinity, to = Infinity) =>
  [...minutes].reduce((sum, [at, value]) => (at >= from && at < to ? sum + value : sum), 0);

/** The new version against the old one, from the deployment's start to now. */
export async function judgeDeployment(
  cloudWatch: CloudWatchClient,
  deployment: JudgedDeployment,
  now: number,
  probes: ProbeTally = NO_PROBES,
): Promise<DeploymentJudgement> {
  const startMinute = Math.floor(deployment.startedAt / MINUTE) * MINUTE;
  const start = startMinute - BASELINE_MS;
  // The medians: one datapoint a metric, a period as long as the window (whole minutes).
  const windowPeriod = Math.max(1, Math.ceil((now - start) / MINUTE)) * 60;
  const metrics = (version?: string) =>
    judgedMetrics(deployment.group, deployment.functionName, deployment.namespace, version);
  const newer = metrics(deployment.newVersion);
  const older = metrics(deployment.oldVersion);
  const { MetricDataResults = [] } = await cloudWatch.send(
    new GetMetricDataCommand({
      StartTime: new Date(start),
      EndTime: new Date(now),
      MetricDataQueries: [
        ...queries('new', newer, windowPeriod),
        ...queries('old', older, windowPeriod),
        ...queries('live', metrics(), windowPeriod, 'requests'),
      ],
    }),
  );
  const results = new Map(MetricDataResults.map((r) => [r.Id, r]));
  const series = (id: string) => byMinute(results.get(id));
  const figures = (prefix: string, judged: JudgedMetrics, from = -Infinity): VersionFigures => {
    const latency = results.get(`${prefix}latency`)?.Values?.[0];
    return {
      requests: total(series(`${prefix}requests`), from),
      failures: Math.max(
        0,
        judged.failures.reduce(
          (sum, { sign }, i) => sum + sign * total(series(`${prefix}failures${i}`), from),
          0,
        ),
      ),
      unavailable: total(series(`${prefix}unavailable`), from),
      ...(latency !== undefined ? { latencyMs: latency } : {}),
      latencySamples: total(series(`${prefix}samples`)),
    };
  };
  const callers = figures('new', newer);
  const newFigures: VersionFigures = {
    ...callers,
    requests: callers.requests + probes.requests,
    failures: callers.failures + probes.failures,
    unavailable: callers.unavailable + probes.unavailable,
  };
  const oldFigures = figures('old', older);
  // The old version's 503 rate over the minutes the new one served (its probes: after the shift).
  const [newRequests, oldRequests, oldUnavailable] = [
    series('newrequests'),
    series('oldrequests'),
    series('oldunavailable'),
  ];
  const minutes: SharedMinute[] = [...newRequests]
    .filter(([at]) => at >= startMinute)
    .map(([at, n]) => ({
      newRequests: n,
      oldRequests: oldRequests.get(at) ?? 0,
      oldUnavailable: oldUnavailable.get(at) ?? 0,
    }));
  minutes.push({ newRequests: probes.requests, oldRequests: 0, oldUnavailable: 0 });
  const unavailableRate = sameMinutesRate(minutes, {
    requests: total(oldRequests, -Infinity, startMinute),
    unavailable: total(oldUnavailable, -Infinity, startMinute),
  });
  // The whole minutes since the last shift: `live` serves only the new version in them.
  const shiftMinute = Math.ceil(deployment.shiftedAt / MINUTE) * MINUTE;
  const own: OwnFigures = {
    ownRequests: newFigures.requests,
    newSinceShift: total(newRequests, shiftMinute),
    liveSinceShift: total(series('liverequests'), shiftMinute),
  };
  const missing = missingFigures(own);
  return {
    ...judge(newFigures, oldFigures, unavailableRate),
    newer: newFigures,
    older: oldFigures,
    own,
    ...(missing !== undefined ? { missing } : {}),
  };
}

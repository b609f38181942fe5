/**
 * The post-traffic hook's judgement of a deployment: the new version over every minute it has
 * had callers (from the deployment's start), against the old version over the same minutes and
 * the hour before the deployment started (after the last shift the old version has no callers:
 * its hour before is what callers had), by lib/deploy-judgement.ts's rules — the exact binomial
 * chance of the new version's failures at the old one's rate, and the ratio of their median
 * latencies. One GetMetricData call a judgement, each metric as one datapoint over the window.
 * It catches what a minute's alarm cannot: a canary's 2 failed cancels in 2 different minutes,
 * a staging deploy (all at once: no old version beside the new one).
 */
import {
  GetMetricDataCommand,
  type CloudWatchClient,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import {
  judge,
  judgedMetrics,
  type JudgedMetric,
  type JudgedMetrics,
  type Judgement,
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
}

export interface DeploymentJudgement extends Judgement {
  readonly newer: VersionFigures;
  readonly older: VersionFigures;
}

const MINUTE = 60_000;

/** The queries of one version's figures, their ids prefixed. */
function queries(prefix: string, metrics: JudgedMetrics, period: number): MetricDataQuery[] {
  const query = (id: string, metric: JudgedMetric): MetricDataQuery => ({
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
  return [
    query('requests', metrics.requests),
    ...metrics.failures.map(({ metric }, i) => query(`failures${i}`, metric)),
    query('latency', metrics.latency),
    query('samples', metrics.latencySamples),
  ];
}

/** The new version against the old one, from the deployment's start to now. */
export async function judgeDeployment(
  cloudWatch: CloudWatchClient,
  deployment: JudgedDeployment,
  now: number,
): Promise<DeploymentJudgement> {
  const start = Math.floor((deployment.startedAt - BASELINE_MS) / MINUTE) * MINUTE;
  // One datapoint per metric: a period as long as the window (whole minutes).
  const period = Math.max(1, Math.ceil((now - start) / MINUTE)) * 60;
  const metrics = (version: string) =>
    judgedMetrics(deployment.group, deployment.functionName, deployment.namespace, version);
  const newer = metrics(deployment.newVersion);
  const older = metrics(deployment.oldVersion);
  const { MetricDataResults = [] } = await cloudWatch.send(
    new GetMetricDataCommand({
      StartTime: new Date(start),
      EndTime: new Date(now),
      MetricDataQueries: [...queries('new', newer, period), ...queries('old', older, period)],
    }),
  );
  const values = new Map(MetricDataResults.map((r) => [r.Id, r.Values ?? []]));
  const sum = (id: string) => (values.get(id) ?? []).reduce((a, b) => a + b, 0);
  const figures = (prefix: string, judged: JudgedMetrics): VersionFigures => {
    const latency = values.get(`${prefix}latency`)?.[0];
    return {
      requests: sum(`${prefix}requests`),
      failures: Math.max(
        0,
        judged.failures.reduce(
          (total, { sign }, i) => total + sign * sum(`${prefix}failures${i}`),
          0,
        ),
      ),
      ...(latency !== undefined ? { latencyMs: latency } : {}),
      latencySamples: sum(`${prefix}samples`),
    };
  };
  const newFigures = figures('new', newer);
  const oldFigures = figures('old', older);
  return { ...judge(newFigures, oldFigures), newer: newFigures, older: oldFigures };
}

/**
 * A stand-in of CloudWatch's metrics for simulated deploys (test/integration/deploy-table.test.ts):
 * each metric by its identity as CloudWatch keeps one — namespace, name and its exact set of
 * dimensions (another set is another metric) — minute by minute, each minute's figures arriving
 * `delayMs` after it ends (Lambda sends a minute's metrics once it is over; how much later
 * CloudWatch has them AWS does not document). It answers GetMetricData by metric, statistic
 * (Sum, SampleCount, p50) and window (the query's period from its StartTime to its EndTime),
 * and an alarm's state by evaluating its synthesized metric math (./metric-math.ts) on the latest
 * minute whose figures are in.
 */
import type { GetMetricDataCommandInput, MetricDataResult } from '@aws-sdk/client-cloudwatch';
import { alarmValue, type AlarmQuery } from './metric-math.ts';

export const MINUTE = 60_000;

/** One minute of one metric: the sum of its values, how many, and how many of each value. */
export interface MinuteFigure {
  sum: number;
  count: number;
  readonly values: Map<number, number>;
}

/** A metric's identity: namespace, name, and its dimensions by name (order does not matter). */
export function metricKey(
  namespace: string,
  name: string,
  dimensions: Readonly<Record<string, string>>,
): string {
  const dims = Object.entries(dimensions)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  return `${namespace}|${name}|${dims.join(',')}`;
}

/** The key of an alarm's metric (read once a query: the same alarms are evaluated often). */
const KEYS = new WeakMap<object, string>();
function keyOf(stat: NonNullable<AlarmQuery['MetricStat']>): string {
  let key = KEYS.get(stat);
  if (key === undefined) {
    const { Metric } = stat;
    key = metricKey(
      Metric.Namespace,
      Metric.MetricName,
      Object.fromEntries((Metric.Dimensions ?? []).map((d) => [d.Name, String(d.Value)])),
    );
    KEYS.set(stat, key);
  }
  return key;
}

export class SimulatedCloudWatch {
  private readonly metrics = new Map<string, Map<number, MinuteFigure>>();
  readonly delayMs: number;
  /** Figures of earlier minutes, shared by many trials (read, never written, through this one). */
  private readonly base: SimulatedCloudWatch | undefined;

  constructor(delayMs: number, base?: SimulatedCloudWatch) {
    this.delayMs = delayMs;
    this.base = base;
  }

  /** A metric's figure of a minute, this one's or its base's. */
  private figure(key: string, minute: number): MinuteFigure | undefined {
    return this.metrics.get(key)?.get(minute) ?? this.base?.figure(key, minute);
  }

  private has(key: string): boolean {
    return this.metrics.has(key) || (this.base?.has(key) ?? false);
  }

  /** Adds `count` datapoints of `value` (or of the values counted in `values`) to a minute. */
  add(key: string, minute: number, value: number, count = 1, values?: Map<number, number>): void {
    let minutes = this.metrics.get(key);
    if (!minutes) this.metrics.set(key, (minutes = new Map<number, MinuteFigure>()));
    let figure = minutes.get(minute);
    if (!figure) minutes.set(minute, (figure = { sum: 0, count: 0, values: new Map() }));
    if (values) {
      for (const [v, n] of values) {
        figure.values.set(v, (figure.values.get(v) ?? 0) + n);
        figure.sum += v * n;
        figure.count += n;
      }
      return;
    }
    // A count's values are its sum and its number (no percentile of a count is asked).
    figure.sum += value * count;
    figure.count += count;
  }

  /** Whether a minute's figures are in at `now`. */
  private arrived(minute: number, now: number): boolean {
    return minute + MINUTE + this.delayMs <= now;
  }

  /**
   * The values of a metric's minutes over [from, to) that are in at `now`, merged: kept from one
   * read to the next of the same window start (a watch reads a growing window again and again;
   * minutes come in in order and never change once in).
   */
  private readonly merged = new Map<
    string,
    { from: number; upTo: number; sum: number; count: number; values: Map<number, number> }
  >();

  private mergedValues(key: string, from: number, to: number, now: number) {
    const id = `${key}@${from}`;
    let merged = this.merged.get(id);
    if (!merged)
      this.merged.set(id, (merged = { from, upTo: from, sum: 0, count: 0, values: new Map() }));
    // Minutes before this one are in (a minute is in once it is over and the delay has passed).
    const arrivedUpTo = Math.floor((now - this.delayMs) / MINUTE) * MINUTE;
    const upTo = Math.min(to, Math.max(arrivedUpTo, from));
    if (upTo < merged.upTo) throw new Error('simulated CloudWatch: a window read back in time');
    for (let minute = merged.upTo; minute < upTo; minute += MINUTE) {
      const figure = this.figure(key, minute);
      if (!figure) continue;
      merged.sum += figure.sum;
      merged.count += figure.count;
      for (const [v, n] of figure.values) merged.values.set(v, (merged.values.get(v) ?? 0) + n);
    }
    merged.upTo = upTo;
    return merged;
  }

  /** A statistic of a metric over [from, to) as it is known at `now`; undefined: no datapoint. */
  stat(key: string, statistic: string, from: number, to: number, now: number): number | undefined {
    if (!this.has(key)) return undefined;
    if (statistic === 'p50') {
      const { count, values } = this.mergedValues(key, Math.ceil(from / MINUTE) * MINUTE, to, now);
      if (count === 0) return undefined;
      let seen = 0;
      for (const v of [...values.keys()].sort((a, b) => a - b)) {
        seen += values.get(v)!;
        if (seen >= count / 2) return v;
      }
      return undefined;
    }
    let sum = 0;
    let count = 0;
    for (let minute = Math.ceil(from / MINUTE) * MINUTE; minute < to; minute += MINUTE) {
      const figure = this.figure(key, minute);
      if (!figure || !this.arrived(minute, now)) continue;
      sum += figure.sum;
      count += figure.count;
    }
    if (count === 0) return undefined;
    switch (statistic) {
      case 'Sum':
        return sum;
      case 'SampleCount':
        return count;
      default:
        throw new Error(`simulated CloudWatch: no statistic ${statistic}`);
    }
  }

  /** GetMetricData as CloudWatch answers it at `now`: each query's periods from StartTime to EndTime. */
  getMetricData(
    input: GetMetricDataCommandInput,
    now: number,
  ): { MetricDataResults: MetricDataResult[] } {
    const start = input.StartTime!.getTime();
    const end = input.EndTime!.getTime();
    return {
      MetricDataResults: (input.MetricDataQueries ?? []).map((query) => {
        const { Metric, Period, Stat } = query.MetricStat!;
        if (!Period || Period % 60 !== 0) throw new Error(`simulated CloudWatch: period ${Period}`);
        const key = metricKey(
          Metric!.Namespace!,
          Metric!.MetricName!,
          Object.fromEntries((Metric!.Dimensions ?? []).map((d) => [d.Name!, d.Value!])),
        );
        const timestamps: Date[] = [];
        const values: number[] = [];
        const known = this.has(key);
        for (let at = start; known && at < end; at += Period * 1000) {
          let value: number | undefined;
          if (Period === 60 && Stat !== 'p50') {
            // A minute's sum or count as it is (the most frequent query, read directly).
            const figure = this.figure(key, at);
            if (figure && figure.count > 0 && this.arrived(at, now)) {
              value = Stat === 'Sum' ? figure.sum : figure.count;
            }
            if (Stat !== 'Sum' && Stat !== 'SampleCount') {
              throw new Error(`simulated CloudWatch: no statistic ${Stat}`);
            }
          } else {
            value = this.stat(key, Stat!, at, at + Period * 1000, now);
          }
          if (value === undefined) continue;
          timestamps.push(new Date(at));
          values.push(value);
        }
        timestamps.reverse();
        values.reverse();
        return { Id: query.Id, Timestamps: timestamps, Values: values, StatusCode: 'Complete' };
      }),
    };
  }

  /**
   * The minute an alarm of one-minute periods evaluates at `now`: the latest whose figures are in
   * at the last whole minute (CloudWatch evaluates once a minute).
   */
  evaluatedMinute(now: number): number {
    const evaluation = Math.floor(now / MINUTE) * MINUTE;
    return Math.floor((evaluation - this.delayMs) / MINUTE) * MINUTE - MINUTE;
  }

  /** Whether an alarm (its synthesized queries and threshold) is in ALARM at `now`. */
  inAlarm(queries: readonly AlarmQuery[], threshold: number, now: number): boolean {
    const minute = this.evaluatedMinute(now);
    const value = alarmValue(queries, (stat) =>
      this.stat(keyOf(stat), stat.Stat, minute, minute + MINUTE, now),
    );
    // Missing data is not breaching (infra/alarms.ts).
    return value !== undefined && value >= threshold;
  }
}

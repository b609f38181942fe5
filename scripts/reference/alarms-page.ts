/**
 * docs/alarms.md's generated part: every alarm of each stage as synthesized (infra/alarms.ts;
 * thresholds from infra/config.ts), of a kind (ALARM_FAMILIES) whose section of the page says
 * what to do.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/app.ts';
import { STAGES, type StageName } from '../../lib/deployment.ts';
import { githubAnchor, table } from './markdown.ts';

/** An alarm as the template holds it. */
export interface SynthesizedAlarm {
  readonly id: string;
  readonly threshold: number;
  readonly periodSeconds: number;
  readonly description: string;
}

/** The alarms of each stage, from its synthesized Api stack (no bundling). */
export function synthesizedAlarms(): Record<StageName, SynthesizedAlarm[]> {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const { stages } = buildApp(app);
  return Object.fromEntries(
    STAGES.map((stage, i) => [
      stage,
      alarmsOf(stage, Template.fromStack(stages[i]!.api).toJSON() as TemplateJson),
    ]),
  ) as Record<StageName, SynthesizedAlarm[]>;
}

type TemplateJson = { Resources: Record<string, { Type: string; Properties: AlarmProperties }> };
interface AlarmProperties {
  AlarmName: string;
  Threshold: number;
  AlarmDescription: string;
  Period?: number;
  Metrics?: { Period?: number; MetricStat?: { Period?: number } }[];
}

/** A stage's alarms in a template, in the template's order. */
export function alarmsOf(stage: StageName, template: TemplateJson): SynthesizedAlarm[] {
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::CloudWatch::Alarm')
    .map(({ Properties: p }) => ({
      id: p.AlarmName.replace(`store-orders-${stage}-`, ''),
      threshold: p.Threshold,
      periodSeconds:
        p.Period ??
        Math.max(...(p.Metrics ?? []).map((m) => m.MetricStat?.Period ?? m.Period ?? 0)),
      description: p.AlarmDescription,
    }));
}

/** A kind of alarm: which alarms it holds, how its threshold reads, the section saying what to do. */
interface AlarmFamily {
  readonly pattern: RegExp;
  /** The heading of its section in docs/alarms.md ("What to do"). */
  readonly section: string;
  readonly threshold: (value: number) => string;
}

const count = (value: number) => value.toLocaleString('en-US');

/** Every kind of alarm; an alarm that is of none fails the page (it has nothing saying what to do). */
export const ALARM_FAMILIES: readonly AlarmFamily[] = [
  {
    pattern: /^ServerErrorRate$/,
    section: 'ServerErrorRate',
    threshold: (v) => `${v * 100}% of requests`,
  },
  { pattern: /^LatencyP99$/, section: 'LatencyP99', threshold: (v) => `${count(v)} ms` },
  { pattern: /^AuthorizerErrors$/, section: 'AuthorizerErrors', threshold: count },
  { pattern: /^InternalErrors$/, section: 'InternalErrors', threshold: count },
  {
    pattern: /^\w+TableThrottledRequests$/,
    section: 'A table’s ThrottledRequests',
    threshold: count,
  },
  { pattern: /^\w+TableSystemErrors$/, section: 'A table’s SystemErrors', threshold: count },
  {
    pattern: /^OrdersIndex\w+WriteThrottles$/,
    section: 'An index’s WriteThrottles',
    threshold: count,
  },
  {
    pattern: /^OrdersTableBatchWriteThrottles$/,
    section: 'OrdersTableBatchWriteThrottles',
    threshold: count,
  },
  {
    pattern: /^ListOrdersNearTimeout$/,
    section: 'ListOrdersNearTimeout',
    threshold: (v) => `${count(v / 1000)} s`,
  },
  { pattern: /^RateLimiterStoreFailures$/, section: 'RateLimiterStoreFailures', threshold: count },
  { pattern: /^ListStreamFailures$/, section: 'ListStreamFailures', threshold: count },
  {
    pattern: /^ListResponseBytes$/,
    section: 'ListResponseBytes',
    threshold: (v) => `${count(v / 1e6)} MB`,
  },
  {
    pattern: /^\w+NewVersionFailures$/,
    section: 'A new version’s failures or latency',
    threshold: (v) => `a score of ${v.toFixed(1)}`,
  },
  {
    pattern: /^\w+NewVersionLatency$/,
    section: 'A new version’s failures or latency',
    threshold: (v) => `${v} times`,
  },
  // The functions' own, last: the patterns above are theirs too.
  { pattern: /^\w+Errors$/, section: 'A function’s Errors', threshold: count },
  { pattern: /^\w+Throttles$/, section: 'A function’s Throttles', threshold: count },
];

/** The family of an alarm; none is an error (a new alarm needs a section saying what to do). */
export function familyOf(id: string): AlarmFamily {
  // The first that matches: the specific patterns come before the general ones.
  const family = ALARM_FAMILIES.find((f) => f.pattern.test(id));
  if (!family) throw new Error(`alarm ${id} is of no family of scripts/reference/alarms-page.ts`);
  return family;
}

/** docs/alarms.md's generated part: every alarm, its thresholds, what it says, where to act. */
export function alarmsPart(alarms: Record<StageName, SynthesizedAlarm[]>): string {
  const production = alarms.production;
  const staging = new Map(alarms.staging.map((alarm) => [alarm.id, alarm]));
  const ids = [...new Set([...alarms.staging, ...production].map((alarm) => alarm.id))];
  return table([
    ['alarm', 'period', 'staging', 'production', 'says (production)', 'do'],
    ...ids.map((id) => {
      const family = familyOf(id);
      const at = (alarm: SynthesizedAlarm | undefined) =>
        alarm === undefined ? 'none' : family.threshold(alarm.threshold);
      const shown = production.find((alarm) => alarm.id === id) ?? staging.get(id)!;
      return [
        `**${id}**`,
        `${shown.periodSeconds / 60} min`,
        at(staging.get(id)),
        at(production.find((alarm) => alarm.id === id)),
        shown.description,
        `[what to do](#${githubAnchor(family.section)})`,
      ];
    }),
  ]);
}

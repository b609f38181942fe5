/**
 * A stage's alarms: each notifies the stage's topic when it fires and when it clears, and carries
 * its runbook line (what it means, where to look first) as description. Thresholds come from the
 * stage config.
 */
import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
  Unit,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { FilterPattern, MetricFilter, type IFilterPattern } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { LIVE_ALIAS } from '../lib/deployment.ts';
import {
  ERROR_SCORE_THRESHOLD,
  FLOOR_RATE,
  judgedMetrics,
  LATENCY_METRIC,
  LATENCY_RATIO,
  MIN_FAILURES,
  MIN_LATENCY_SAMPLES,
  SIGNIFICANCE,
  type JudgedMetric,
  type JudgedMetrics,
} from '../lib/deploy-judgement.ts';
import { TABLES } from '../lib/dynamodb/tables.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { METRIC_NAMES, stageMetricsNamespace } from '../lib/metrics.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import { FUNCTION_LOG_FIELDS } from './log-queries.ts';
import {
  batchWriteThrottles,
  indexWriteThrottles,
  tableOperationsSum,
  type Monitoring,
} from './monitoring.ts';
import { INDEX_SETTLE_MS } from '../lib/orders/page-tag.ts';

/** Every alarm evaluates one period of this length, but the deployment alarms (below). */
export const ALARM_PERIOD = Duration.minutes(5);

interface AlarmSpec {
  readonly metric: IMetric;
  readonly threshold: number;
  /** What it means when it fires. */
  readonly means: string;
  /** Where to look first. */
  readonly look: string;
}

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** One alarm of the stage, notifying its topic when it fires and when it clears. */
function stageAlarm(monitoring: Monitoring, topic: ITopic, id: string, spec: AlarmSpec): Alarm {
  const action = new SnsAction(topic);
  const alarm = new Alarm(monitoring, id, {
    alarmName: `store-orders-${monitoring.props.config.stage}-${id}`,
    alarmDescription: `${spec.means} First look: ${spec.look}`,
    metric: spec.metric,
    threshold: spec.threshold,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
  alarm.addAlarmAction(action);
  alarm.addOkAction(action);
  return alarm;
}

/** The stage's alarms, children of its monitoring. */
export function addAlarms(monitoring: Monitoring, topic: ITopic): Alarm[] {
  const { config, api, functions } = monitoring.props;
  const { alarms } = config;
  const period = ALARM_PERIOD;
  const sum = { period, statistic: 'Sum' };
  const service = (name: string, statistic = 'Sum') =>
    monitoring.serviceMetric(name, statistic, period);
  const created: Alarm[] = [];
  const alarm = (id: string, spec: AlarmSpec): void => {
    created.push(stageAlarm(monitoring, topic, id, spec));
  };

  alarm('ServerErrorRate', {
    metric: new MathExpression({
      expression: 'IF(requests > 0, errors / requests, 0)',
      usingMetrics: {
        errors: api.metricServerError(sum),
        requests: api.metricCount(sum),
      },
      period,
    }),
    threshold: alarms.serverErrorRate,
    means: `5XX answers reached ${alarms.serverErrorRate * 100}% of requests.`,
    look: 'the dashboard (requests by route, service errors), then the access log (status, errorType).',
  });
  alarm('LatencyP99', {
    metric: api.metricLatency({ period, statistic: 'p99' }),
    threshold: alarms.p99LatencyMs,
    means: `p99 API latency (time to first byte for lists) reached ${alarms.p99LatencyMs} ms.`,
    look: 'latency vs integration latency by route on the dashboard (authorizer or function?), then function durations.',
  });

  for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
    const id = pascal(name);
    // Its invocations by callers, through `live`: not the deploy check's calls of a version.
    const errors = new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      dimensionsMap: {
        FunctionName: fn.functionName,
        Resource: `${fn.functionName}:${LIVE_ALIAS}`,
      },
      ...sum,
    });
    if (name === 'authorizer') {
      alarm('AuthorizerErrors', {
        metric: errors,
        threshold: alarms.authorizerErrors,
        means:
          'The authorizer failed for callers: its key store did not answer or failed permanently, clients got 503 (uncached). A refused key is not an error.',
        look: "the authorizer's log ('Key check failed': WARN transient, ERROR permanent, which also pages through InternalErrors), ApiKeys table throttles and system errors.",
      });
    } else {
      alarm(`${id}Errors`, {
        metric: errors,
        threshold: alarms.functionErrors,
        means: `${name} failed for callers (crash, timeout, out of memory): clients got 5XX.`,
        look: `the ${name} log group (level ERROR) and its X-Ray traces; the last deploy.`,
      });
    }
    const reserved =
      name === 'listOrders' && config.concurrency.listOrdersReserved !== undefined
        ? ` (its reservation is ${config.concurrency.listOrdersReserved})`
        : '';
    alarm(`${id}Throttles`, {
      metric: fn.metricThrottles(sum),
      threshold: alarms.throttles,
      means: `Lambda refused to run ${name}: no concurrency left${reserved}.`,
      look: "concurrent executions on the dashboard, the account's Lambda concurrency quota.",
    });
  }

  for (const table of monitoring.tables) {
    const { name, operations } = table;
    const id = `${TABLES[name].id}Table`;
    alarm(`${id}ThrottledRequests`, {
      metric: tableOperationsSum(table, 'ThrottledRequests', { period }),
      threshold: alarms.tableThrottledRequests,
      means: `DynamoDB throttled requests to the ${name} table (${operations.join(', ')}).`,
      look: "the table's consumed capacity and Contributor Insights (hot keys); an on-demand peak above twice the previous one.",
    });
    alarm(`${id}SystemErrors`, {
      metric: tableOperationsSum(table, 'SystemErrors', { period }),
      threshold: alarms.tableSystemErrors,
      means: `DynamoDB answered internal errors on the ${name} table.`,
      look: 'the AWS Health Dashboard (DynamoDB in this region), the ServiceUnavailable metric.',
    });
  }

  // Each index of the orders table: a write it cannot take is throttled on the table.
  for (const index of config.ordersIndexes) {
    alarm(`OrdersIndex${pascal(index)}WriteThrottles`, {
      metric: indexWriteThrottles(monitoring.orders, index, { period }),
      threshold: alarms.indexWriteThrottles,
      means: `DynamoDB throttled writes of the orders table because its index ${index} could not take them (a hot index partition, or a burst of writes): cancels and ships are answered 503 once their retries run out, imports and reindexes slow down, and ${index} may trail the table. v2's pages from ${index} read the orders written in the last ${INDEX_SETTLE_MS / 1000} s again by key; an index that trails by more can show an order as it was before a write, or miss one, until it catches up (docs/architecture.md, "Exactness"). No 304 confirms such a page once the index has caught up.`,
      look: `the index's write throttles on the dashboard ("Orders indexes: write throttles") and the table's consumed writes; an orders import or reindex running (their own pace: --help); a pet or status with far more orders than the others.`,
    });
  }
  alarm('OrdersTableBatchWriteThrottles', {
    metric: batchWriteThrottles(monitoring.orders, { period }),
    threshold: alarms.batchWriteThrottles,
    means:
      "DynamoDB throttled the operator's bulk writes of the orders table (orders import's BatchWriteItem): the CLI retries what was not written and slows; an index that cannot keep up throttles them too (the index alarms say which).",
    look: 'the operator running the import (its progress line); the index write throttles on the dashboard; imports of many orders of one pet (one index partition).',
  });

  const listTimeoutMs = FUNCTIONS.listOrders.timeoutSeconds * 1000;
  alarm('ListOrdersNearTimeout', {
    metric: functions.listOrders.metricDuration({ period, statistic: 'Maximum' }),
    threshold: Math.round(listTimeoutMs * alarms.listDurationOfTimeout),
    means: `A list ran for ${alarms.listDurationOfTimeout * 100}% of its ${FUNCTIONS.listOrders.timeoutSeconds} s timeout: a larger table will be cut off.`,
    look: 'ListResponseBytes and ListOrdersSent on the dashboard (table growth), DynamoDB latency.',
  });
  alarm('RateLimiterStoreFailures', {
    metric: service(METRIC_NAMES.limiterStoreFailures),
    threshold: alarms.limiterStoreFailures,
    means: `The rate limiter could not reach its counters (it fails ${config.rateLimiter.failureMode}: ${
      config.rateLimiter.failureMode === 'closed' ? 'requests get 503' : 'requests go unlimited'
    }).`,
    look: "RateLimits table throttles and system errors, the functions' logs.",
  });
  alarm('InternalErrors', {
    metric: service(METRIC_NAMES.internalErrors),
    threshold: alarms.internalErrors,
    means:
      'The service answered 500 INTERNAL_ERROR: a bug or a permanent failure (access denied, missing table, malformed data).',
    look: "the functions' logs at level ERROR (failure.kind, failure.reason); the last deploy, IAM or table changes.",
  });
  alarm('ListStreamFailures', {
    metric: service(METRIC_NAMES.listStreamFailures),
    threshold: alarms.listStreamFailures,
    means: 'A list failed after its status line: a client got a cut-off body.',
    look: "listOrders' log (ERROR) and duration, Orders table errors.",
  });
  alarm('ListResponseBytes', {
    metric: service(METRIC_NAMES.listResponseBytes, 'Maximum'),
    threshold: alarms.listResponseBytes,
    means: `A list response reached ${alarms.listResponseBytes / 1e6} MB, half of Lambda's streaming ceiling.`,
    look: 'ListOrdersSent and ListResponseBytes trends: plan pagination (v2) before the ceiling.',
  });
  return created;
}

/** Deployment alarms evaluate one minute: a canary's first minutes decide. */
export const DEPLOYMENT_ALARM_PERIOD = Duration.minutes(1);

/**
 * The lines of a 500 answer to a caller (every error answer logs its `status`,
 * functions/shared/http-errors.ts; the deploy check's lines say `deploy_check`): a 503 is not
 * one, it is judged apart (UNAVAILABLE_ANSWER_PATTERN).
 */
export const INTERNAL_ERROR_ANSWER_PATTERN = FilterPattern.all(
  FilterPattern.numberValue('$.status', '=', 500),
  FilterPattern.notExists('$.deploy_check'),
);

/**
 * The lines of a 503 answer to a caller: a DynamoDB call that failed transiently or ran out of
 * its budget. A new version's share of them is judged against the old version's in the same
 * minutes (lib/deploy-judgement.ts).
 */
export const UNAVAILABLE_ANSWER_PATTERN = FilterPattern.all(
  FilterPattern.numberValue('$.status', '=', 503),
  FilterPattern.notExists('$.deploy_check'),
);

/** The authorizer's lines of a transient failure of its key store (functions/authorizer.ts). */
export const KEY_CHECK_TRANSIENT_PATTERN = FilterPattern.all(
  FilterPattern.stringValue('$.failure.kind', '=', 'transient'),
  FilterPattern.notExists('$.deploy_check'),
);

/** The metric filters' dimensions: fields of every line of the functions' logger. */
export const VERSION_FILTER_DIMENSIONS = {
  FunctionName: `$.${FUNCTION_LOG_FIELDS.functionName}`,
  FunctionVersion: `$.${FUNCTION_LOG_FIELDS.functionVersion}`,
} as const;

/** A metric the deploy judges read (lib/deploy-judgement.ts), as CDK's, over one minute. */
function judged(spec: JudgedMetric): Metric {
  return new Metric({
    namespace: spec.namespace,
    metricName: spec.metricName,
    dimensionsMap: { ...spec.dimensions },
    statistic: spec.statistic,
    period: DEPLOYMENT_ALARM_PERIOD,
  });
}

/**
 * The metric filters of a function's lines that its failures are counted from: by FunctionName
 * and FunctionVersion, and by FunctionName alone (all versions: an alarm cannot add up the
 * versions of a dimension, CloudWatch alarms take no SEARCH).
 */
function failureFilters(monitoring: Monitoring, name: FunctionName, fn: ServiceFunction): void {
  const namespace = stageMetricsNamespace(monitoring.props.config.stage);
  const counted: [string, IFilterPattern][] =
    name === 'authorizer'
      ? [[METRIC_NAMES.keyCheckTransientFailures, KEY_CHECK_TRANSIENT_PATTERN]]
      : [
          [METRIC_NAMES.internalErrorAnswers, INTERNAL_ERROR_ANSWER_PATTERN],
          [METRIC_NAMES.unavailableAnswers, UNAVAILABLE_ANSWER_PATTERN],
        ];
  for (const [metricName, filterPattern] of counted) {
    const filter = (id: string, dimensions: Record<string, string>) =>
      new MetricFilter(monitoring, `${pascal(name)}${id}`, {
        logGroup: fn.logs,
        filterPattern,
        metricNamespace: namespace,
        metricName,
        metricValue: '1',
        unit: Unit.COUNT,
        dimensions,
      });
    filter(metricName, { ...VERSION_FILTER_DIMENSIONS });
    filter(`${metricName}AllVersions`, { FunctionName: VERSION_FILTER_DIMENSIONS.FunctionName });
  }
}

/**
 * The metrics of one alarm under ids of their own, each metric once (the authorizer's transient
 * failures are both taken from its failures and judged as its 503s: one id for both).
 */
class AlarmMetrics {
  private readonly ids = new Map<string, string>();
  readonly usingMetrics: Record<string, IMetric> = {};

  /** The id of a metric, registering it under `id` the first time. */
  id(id: string, spec: JudgedMetric): string {
    const key = JSON.stringify(spec);
    const known = this.ids.get(key);
    if (known !== undefined) return known;
    this.ids.set(key, id);
    this.usingMetrics[id] = judged(spec);
    return id;
  }

  /** An expression over some of the registered ids. */
  expression(text: string, ids: readonly string[]): MathExpression {
    return new MathExpression({
      expression: text,
      usingMetrics: Object.fromEntries(ids.map((id) => [id, this.usingMetrics[id]!])),
      period: DEPLOYMENT_ALARM_PERIOD,
    });
  }
}

/** The sum of failure metrics as an expression: `FILL(a, 0) + FILL(b, 0) - FILL(c, 0)`. */
function failureSum(
  metrics: AlarmMetrics,
  prefix: 'new' | 'all',
  failures: JudgedMetrics['failures'],
): MathExpression {
  const ids = failures.map(({ metric }, i) => metrics.id(`${prefix}Failure${i}`, metric));
  return metrics.expression(
    failures
      .map(
        ({ sign }, i) =>
          `${i === 0 ? (sign < 0 ? '-' : '') : sign < 0 ? ' - ' : ' + '}FILL(${ids[i]}, 0)`,
      )
      .join(''),
    ids,
  );
}

/**
 * The alarms' score (lib/deploy-judgement.ts, errorScore) of a new version's k bad answers in
 * its n requests in a minute, against the old version's rate over the same minute — all
 * versions' figures less the new one's — or FLOOR_RATE, whichever is higher.
 */
function minuteScore(
  prefix: 'failure' | 'unavailable',
  k: IMetric,
  kAll: IMetric,
  counts: { readonly n: IMetric; readonly nAll: IMetric },
): MathExpression {
  const period = DEPLOYMENT_ALARM_PERIOD;
  // Ids are the alarm's, one namespace for all its expressions: each score's own are prefixed.
  const id = (name: string) => `${prefix}${name}`;
  const expression = (text: string, usingMetrics: Record<string, IMetric>) =>
    new MathExpression({
      expression: text.replace(/\b(k|kAll|oldRate|rate|share)\b/g, (name) => id(name)),
      usingMetrics: Object.fromEntries(
        Object.entries(usingMetrics).map(([name, metric]) => [
          ['n', 'nAll'].includes(name) ? name : id(name),
          metric,
        ]),
      ),
      period,
    });
  const { n, nAll } = counts;
  const oldRate = expression('IF(nAll - n > 0, (kAll - k) / (nAll - n), 0)', { k, kAll, n, nAll });
  const rate = expression(`IF(oldRate > ${FLOOR_RATE}, oldRate, ${FLOOR_RATE})`, { oldRate });
  const share = expression('IF(n > 0, IF(k > n, 1, k / n), 0)', { k, n });
  // Judged only beside another version (the old one's requests in the same minute): after the
  // last shift, and outside a deploy, there is nothing to compare with, and the score is 0.
  return expression(
    `IF(k >= ${MIN_FAILURES} AND nAll - n > 0 AND share > rate, n * (share * LOG(share / rate)` +
      ' + IF(share < 1, (1 - share) * LOG((1 - share) / (1 - rate)), 0)), 0)',
    { k, n, nAll, share, rate },
  );
}

/**
 * The failure alarm's score of a new version in a minute: the higher of its failures' score
 * (500 answers and failed invocations) and its 503s' score, each against the old version's own
 * rate in the same minute — a DynamoDB incident both versions see raises both.
 */
function failureScore(newer: JudgedMetrics, all: JudgedMetrics, label: string): MathExpression {
  const metrics = new AlarmMetrics();
  const single = (id: string, spec: JudgedMetric) => {
    const known = metrics.id(id, spec);
    return metrics.expression(`FILL(${known}, 0)`, [known]);
  };
  const counts = {
    n: single('newRequests', newer.requests),
    nAll: single('allRequests', all.requests),
  };
  const failures = minuteScore(
    'failure',
    failureSum(metrics, 'new', newer.failures),
    failureSum(metrics, 'all', all.failures),
    counts,
  );
  const unavailable = minuteScore(
    'unavailable',
    single('newUnavailable', newer.unavailable),
    single('allUnavailable', all.unavailable),
    counts,
  );
  return new MathExpression({
    expression: 'IF(failureScore > unavailableScore, failureScore, unavailableScore)',
    usingMetrics: { failureScore: failures, unavailableScore: unavailable },
    period: DEPLOYMENT_ALARM_PERIOD,
    label,
  });
}

/**
 * The alarms' latency ratio of a new version in a minute: its median over all versions', once
 * each of it and the others has MIN_LATENCY_SAMPLES requests.
 */
function latencyRatio(newer: JudgedMetrics, all: JudgedMetrics, label: string): MathExpression {
  return new MathExpression({
    expression:
      `IF(FILL(newSamples, 0) >= ${MIN_LATENCY_SAMPLES} AND FILL(allSamples, 0) - FILL(newSamples, 0) >= ${MIN_LATENCY_SAMPLES},` +
      ' newLatency / allLatency, 0)',
    usingMetrics: {
      newSamples: judged(newer.latencySamples),
      allSamples: judged(all.latencySamples),
      newLatency: judged(newer.latency),
      allLatency: judged(all.latency),
    },
    period: DEPLOYMENT_ALARM_PERIOD,
    label,
  });
}

/**
 * The alarms that stop a deploy during its shift and roll it back (infra/deployments.ts), per
 * function: the new version judged against the versions beside it (the old one, during a
 * canary) minute by minute, on its failures (NewVersionFailures) and its median latency
 * (NewVersionLatency), as lib/deploy-judgement.ts says. After the last shift the old version has
 * no traffic to compare with: the post-traffic hook judges the whole deployment against the old
 * version's own figures (functions/deploy-hooks/judge.ts). `version`: each function's version
 * `live` moves to (infra/stage-functions.ts).
 */
export function addDeploymentAlarms(
  monitoring: Monitoring,
  topic: ITopic,
): Record<FunctionName, Alarm[]> {
  const { config, functions } = monitoring.props;
  const namespace = stageMetricsNamespace(config.stage);
  const byFunction = {} as Record<FunctionName, Alarm[]>;
  const rollsBack =
    'During a deploy, CodeDeploy rolls it back (the alias goes back to the previous version).';
  for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
    const id = pascal(name);
    failureFilters(monitoring, name, fn);
    const newer = judgedMetrics(name, fn.functionName, namespace, fn.liveVersion);
    const all = judgedMetrics(name, fn.functionName, namespace);
    const failures =
      name === 'authorizer'
        ? "failed invocations, less its key store's transient failures; and those transient failures"
        : '500 answers and failed invocations; and its 503s';
    const latency = LATENCY_METRIC[name] === 'firstByte' ? 'time to first byte' : 'duration';
    byFunction[name] = [
      stageAlarm(monitoring, topic, `${id}NewVersionFailures`, {
        metric: failureScore(newer, all, `${name} new version: failure score`),
        threshold: ERROR_SCORE_THRESHOLD,
        means: `The version of ${name} a deploy moves live to failed more than the version beside it in a minute (${failures}, each against the other's own): ${MIN_FAILURES} or more, with a chance under ${SIGNIFICANCE} at the other's rate (at least ${FLOOR_RATE}). ${rollsBack}`,
        look: `aws deploy list-deployments for the ${name} group, then the ${name} log group (level ERROR) for that version (function_version).`,
      }),
      stageAlarm(monitoring, topic, `${id}NewVersionLatency`, {
        metric: latencyRatio(
          newer,
          all,
          `${name} new version: median ${latency} over all versions'`,
        ),
        threshold: LATENCY_RATIO,
        means: `The median ${latency} of the version of ${name} a deploy moves live to reached ${LATENCY_RATIO} times that of all versions in a minute, from ${MIN_LATENCY_SAMPLES} requests of each. ${rollsBack}`,
        look: `aws deploy list-deployments for the ${name} group, then the slowest-invocations saved query.`,
      }),
    ];
  }
  return byFunction;
}

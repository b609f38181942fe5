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
import { FilterPattern, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { LIVE_ALIAS } from '../lib/deployment.ts';
import { TABLES } from '../lib/dynamodb/tables.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { METRIC_NAMES, stageMetricsNamespace } from '../lib/metrics.ts';
import { NEW_VERSION_MIN_FAILURES, NEW_VERSION_MIN_INVOCATIONS } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import { FUNCTION_LOG_FIELDS } from './log-queries.ts';
import { HTTP_FUNCTIONS, tableOperationsSum, type Monitoring } from './monitoring.ts';

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
    if (name === 'authorizer') {
      alarm('AuthorizerErrors', {
        metric: fn.metricErrors(sum),
        threshold: alarms.authorizerErrors,
        means:
          'The authorizer failed: its key store did not answer or failed permanently, clients got 503 (uncached). A refused key is not an error.',
        look: "the authorizer's log ('Key check failed': WARN transient, ERROR permanent, which also pages through InternalErrors), ApiKeys table throttles and system errors.",
      });
    } else {
      alarm(`${id}Errors`, {
        metric: fn.metricErrors(sum),
        threshold: alarms.functionErrors,
        means: `${name} failed (crash, timeout, out of memory): clients got 5XX.`,
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
 * Functions whose duration is their latency, so that a p99 duration alarm judges how long a
 * caller waited: the answer is done when they are, within seconds. Not a list of the buffered
 * ones: listOrderPages streams too (both lists share one streamed integration), but a page is at
 * most 100 orders written at once; listOrders streams a whole list for up to its 900 s timeout,
 * so its duration is the list's size, not its caller's wait for a first byte.
 */
const DURATION_IS_LATENCY: ReadonlySet<FunctionName> = new Set([
  'listOrderPages',
  'cancelOrder',
  'authorizer',
]);

/**
 * The lines of a 5XX answer (every error answer logs its `status`, functions/shared/http-errors.ts):
 * what the ServerErrorAnswers metric filter counts.
 */
export const SERVER_ERROR_ANSWER_PATTERN = FilterPattern.numberValue('$.status', '>=', 500);

/** The metric filter's dimensions: fields of every line of the functions' logger. */
export const SERVER_ERROR_ANSWER_DIMENSIONS = {
  FunctionName: `$.${FUNCTION_LOG_FIELDS.functionName}`,
  FunctionVersion: `$.${FUNCTION_LOG_FIELDS.functionVersion}`,
} as const;

/**
 * A metric of the function's current version as invoked through its `live` alias (dimensions
 * FunctionName, Resource `<function>:live`, ExecutedVersion): during a deploy, the new version's
 * share of the traffic only, not the old version's.
 */
function newVersionMetric(fn: ServiceFunction, metricName: string, statistic: string): Metric {
  return new Metric({
    namespace: 'AWS/Lambda',
    metricName,
    dimensionsMap: {
      FunctionName: fn.functionName,
      Resource: `${fn.functionName}:${LIVE_ALIAS}`,
      ExecutedVersion: fn.currentVersion.version,
    },
    statistic,
    period: DEPLOYMENT_ALARM_PERIOD,
  });
}

/**
 * The 5XX answers of an HTTP function's current version: a metric filter on its log group counts
 * each 5XX answer line by the function's name and the version that wrote it. Lambda's Errors do
 * not see them: the function answers a 500, it does not fail.
 */
function newVersionServerErrorAnswers(
  monitoring: Monitoring,
  name: FunctionName,
  fn: ServiceFunction,
): Metric {
  const namespace = stageMetricsNamespace(monitoring.props.config.stage);
  new MetricFilter(monitoring, `${pascal(name)}ServerErrorAnswers`, {
    logGroup: fn.logs,
    filterPattern: SERVER_ERROR_ANSWER_PATTERN,
    metricNamespace: namespace,
    metricName: METRIC_NAMES.serverErrorAnswers,
    metricValue: '1',
    unit: Unit.COUNT,
    dimensions: { ...SERVER_ERROR_ANSWER_DIMENSIONS },
  });
  return new Metric({
    namespace,
    metricName: METRIC_NAMES.serverErrorAnswers,
    dimensionsMap: { FunctionName: fn.functionName, FunctionVersion: fn.currentVersion.version },
    statistic: 'Sum',
    period: DEPLOYMENT_ALARM_PERIOD,
  });
}

/**
 * The alarms that stop a deploy and roll it back (infra/deployments.ts), per function: the new
 * version's failure rate (5XX answers, crashes and timeouts over its invocations, from a minimum
 * count on: one transient failure is no verdict), and for a function whose duration is its
 * latency (DURATION_IS_LATENCY) its p99 duration (from a minimum of invocations on). They watch the version each deploy publishes; after a
 * deploy they keep watching it, the version in service.
 */
export function addDeploymentAlarms(
  monitoring: Monitoring,
  topic: ITopic,
): Record<FunctionName, Alarm[]> {
  const { config, functions } = monitoring.props;
  const { deployment } = config;
  const byFunction = {} as Record<FunctionName, Alarm[]>;
  const rate = `${deployment.newVersionFailureRate * 100}%`;
  for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
    const id = pascal(name);
    const rollsBack =
      'During a deploy and its watch after the last shift, it rolls the deploy back (the alias goes back to the previous version).';
    const invocations = newVersionMetric(fn, 'Invocations', 'Sum');
    const answers: Record<string, IMetric> = HTTP_FUNCTIONS.includes(name)
      ? { answers: newVersionServerErrorAnswers(monitoring, name, fn) }
      : {};
    const failures = [
      'FILL(errors, 0)',
      ...('answers' in answers ? ['FILL(answers, 0)'] : []),
    ].join(' + ');
    byFunction[name] = [
      stageAlarm(monitoring, topic, `${id}NewVersionFailureRate`, {
        metric: new MathExpression({
          expression: `IF(${failures} >= ${NEW_VERSION_MIN_FAILURES}, (${failures}) / invocations, 0)`,
          usingMetrics: { errors: newVersionMetric(fn, 'Errors', 'Sum'), invocations, ...answers },
          period: DEPLOYMENT_ALARM_PERIOD,
          label: `${name} new version: failed share of invocations`,
        }),
        threshold: deployment.newVersionFailureRate,
        means: `The version of ${name} behind its live alias failed ${rate} of its invocations in a minute (${
          HTTP_FUNCTIONS.includes(name)
            ? '5XX answers, crashes, timeouts'
            : 'errors: its key store failed'
        }), ${NEW_VERSION_MIN_FAILURES} or more. ${rollsBack}`,
        look: `aws deploy list-deployments for the ${name} group, then the ${name} log group (level ERROR) for that version (function_version).`,
      }),
      ...(DURATION_IS_LATENCY.has(name)
        ? [
            stageAlarm(monitoring, topic, `${id}NewVersionLatencyP99`, {
              metric: new MathExpression({
                expression: `IF(invocations >= ${NEW_VERSION_MIN_INVOCATIONS}, p99, 0)`,
                usingMetrics: { p99: newVersionMetric(fn, 'Duration', 'p99'), invocations },
                period: DEPLOYMENT_ALARM_PERIOD,
                label: `${name} new version: p99 duration (ms)`,
              }),
              threshold: deployment.newVersionP99DurationMs,
              means: `The p99 duration of the version of ${name} behind its live alias reached ${deployment.newVersionP99DurationMs} ms in a minute of ${NEW_VERSION_MIN_INVOCATIONS} invocations or more. ${rollsBack}`,
              look: `aws deploy list-deployments for the ${name} group, then the slowest-invocations saved query.`,
            }),
          ]
        : []),
    ];
  }
  return byFunction;
}

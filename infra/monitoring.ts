/**
 * What an operator of a stage sees: alarms (each notifying the stage's topic when it fires and
 * when it clears, each with its runbook line as description), a dashboard, and a Contributor
 * Insights rule showing which API keys hit their limits. Thresholds come from the stage config.
 */
import { Duration } from 'aws-cdk-lib';
import type { Method, RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type GraphWidgetProps,
  type IMetric,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Operation, type ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { TABLES, type TableName } from '../lib/dynamodb/tables.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { METRIC_NAMES, SERVICE_NAME, stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageConfig } from './config.ts';
import {
  ContributorInsightsWidget,
  LogContributorRule,
} from './constructs/contributor-insights.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

/** Every alarm evaluates one period of this length. */
export const ALARM_PERIOD = Duration.minutes(5);

/** The line the functions log on every 429 (Powertools JSON logger), and its caller field. */
export const RATE_LIMIT_REFUSAL_LOG = { message: 'Rate limit refusal', keyIdPath: '$.keyId' };

export interface MonitoringProps {
  readonly config: StageConfig;
  readonly api: RestApi;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  readonly topic: ITopic;
}

interface AlarmSpec {
  readonly metric: IMetric;
  readonly threshold: number;
  /** What it means when it fires. */
  readonly means: string;
  /** Where to look first. */
  readonly look: string;
}

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** The DynamoDB operations of a list of IAM actions (`dynamodb:Query` → Query). */
function operationsOf(actions: readonly string[]): Operation[] {
  const known = new Set<string>(Object.values(Operation));
  return [...new Set(actions.map((a) => a.replace(/^dynamodb:/, '')))]
    .filter((a) => known.has(a))
    .map((a) => a as Operation);
}

/** A table the functions use, with the operations they call on it. */
interface WatchedTable {
  readonly name: TableName;
  readonly table: ITableV2;
  readonly operations: readonly Operation[];
}

/**
 * A DynamoDB metric of a table (ThrottledRequests, SystemErrors: per operation) summed over the
 * operations given, with metric ids unique to the table, so that one graph can show every table.
 */
function tableOperationsSum(
  table: WatchedTable,
  metricName: 'ThrottledRequests' | 'SystemErrors',
  options: { period: Duration; label?: string },
): IMetric {
  const metrics = Object.fromEntries(
    table.operations.map((operation) => [
      [table.name, metricName, operation].join('_').toLowerCase(),
      table.table.metric(metricName, {
        dimensionsMap: { TableName: table.table.tableName, Operation: operation },
        statistic: 'Sum',
        period: options.period,
      }),
    ]),
  );
  return new MathExpression({
    expression: Object.keys(metrics).join(' + '),
    usingMetrics: metrics,
    period: options.period,
    ...(options.label ? { label: options.label } : {}),
  });
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  readonly rateLimitRefusals: LogContributorRule;
  private readonly props: MonitoringProps;
  private readonly tables: readonly WatchedTable[];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.props = props;
    const uses = Object.values(props.functions).flatMap((fn) => fn.tableUses);
    this.tables = [...new Set(uses.map((use) => use.name))].map((name) => ({
      name,
      table: uses.find((use) => use.name === name)!.table,
      operations: operationsOf(uses.filter((use) => use.name === name).flatMap((u) => u.actions)),
    }));
    this.rateLimitRefusals = new LogContributorRule(this, 'RateLimitRefusals', {
      ruleName: `store-orders-${props.config.stage}-rate-limit-refusals`,
      logGroups: [props.functions.listOrders.logs, props.functions.cancelOrder.logs],
      keys: [RATE_LIMIT_REFUSAL_LOG.keyIdPath],
      filters: [{ field: '$.message', in: [RATE_LIMIT_REFUSAL_LOG.message] }],
    });
    this.addAlarms();
    this.dashboard = this.addDashboard();
  }

  /** One of the service's own metrics (Powertools, dimension `service`). */
  private serviceMetric(name: string, statistic = 'Sum', period = ALARM_PERIOD): Metric {
    return new Metric({
      namespace: stageMetricsNamespace(this.props.config.stage),
      metricName: name,
      dimensionsMap: { service: SERVICE_NAME },
      statistic,
      period,
    });
  }

  private alarm(id: string, spec: AlarmSpec): void {
    const action = new SnsAction(this.props.topic);
    const alarm = new Alarm(this, id, {
      alarmName: `store-orders-${this.props.config.stage}-${id}`,
      alarmDescription: `${spec.means} First look: ${spec.look}`,
      metric: spec.metric,
      threshold: spec.threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
  }

  private addAlarms(): void {
    const { config, api, functions } = this.props;
    const { alarms } = config;
    const period = ALARM_PERIOD;
    const sum = { period, statistic: 'Sum' };

    this.alarm('ServerErrorRate', {
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
    this.alarm('LatencyP99', {
      metric: api.metricLatency({ period, statistic: 'p99' }),
      threshold: alarms.p99LatencyMs,
      means: `p99 API latency (time to first byte for lists) reached ${alarms.p99LatencyMs} ms.`,
      look: 'latency vs integration latency by route on the dashboard (authorizer or function?), then function durations.',
    });

    for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
      const id = pascal(name);
      if (name === 'authorizer') {
        this.alarm('AuthorizerErrors', {
          metric: fn.metricErrors(sum),
          threshold: alarms.authorizerErrors,
          means:
            'The authorizer failed: its key store did not answer or failed permanently, clients got 503 (uncached). A refused key is not an error.',
          look: "the authorizer's log ('Key check failed': WARN transient, ERROR permanent, which also pages through InternalErrors), ApiKeys table throttles and system errors.",
        });
      } else {
        this.alarm(`${id}Errors`, {
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
      this.alarm(`${id}Throttles`, {
        metric: fn.metricThrottles(sum),
        threshold: alarms.throttles,
        means: `Lambda refused to run ${name}: no concurrency left${reserved}.`,
        look: "concurrent executions on the dashboard, the account's Lambda concurrency quota.",
      });
    }

    for (const table of this.tables) {
      const { name, operations } = table;
      const id = `${TABLES[name].id}Table`;
      this.alarm(`${id}ThrottledRequests`, {
        metric: tableOperationsSum(table, 'ThrottledRequests', { period }),
        threshold: alarms.tableThrottledRequests,
        means: `DynamoDB throttled requests to the ${name} table (${operations.join(', ')}).`,
        look: "the table's consumed capacity and Contributor Insights (hot keys); an on-demand peak above twice the previous one.",
      });
      this.alarm(`${id}SystemErrors`, {
        metric: tableOperationsSum(table, 'SystemErrors', { period }),
        threshold: alarms.tableSystemErrors,
        means: `DynamoDB answered internal errors on the ${name} table.`,
        look: 'the AWS Health Dashboard (DynamoDB in this region), the ServiceUnavailable metric.',
      });
    }

    const listTimeoutMs = FUNCTIONS.listOrders.timeoutSeconds * 1000;
    this.alarm('ListOrdersNearTimeout', {
      metric: functions.listOrders.metricDuration({ period, statistic: 'Maximum' }),
      threshold: Math.round(listTimeoutMs * alarms.listDurationOfTimeout),
      means: `A list ran for ${alarms.listDurationOfTimeout * 100}% of its ${FUNCTIONS.listOrders.timeoutSeconds} s timeout: a larger table will be cut off.`,
      look: 'ListResponseBytes and ListOrdersSent on the dashboard (table growth), DynamoDB latency.',
    });
    this.alarm('RateLimiterStoreFailures', {
      metric: this.serviceMetric(METRIC_NAMES.limiterStoreFailures),
      threshold: alarms.limiterStoreFailures,
      means: `The rate limiter could not reach its counters (it fails ${config.rateLimiter.failureMode}: ${
        config.rateLimiter.failureMode === 'closed' ? 'requests get 503' : 'requests go unlimited'
      }).`,
      look: "RateLimits table throttles and system errors, the functions' logs.",
    });
    this.alarm('InternalErrors', {
      metric: this.serviceMetric(METRIC_NAMES.internalErrors),
      threshold: alarms.internalErrors,
      means:
        'The service answered 500 INTERNAL_ERROR: a bug or a permanent failure (access denied, missing table, malformed data).',
      look: "the functions' logs at level ERROR (failure.kind, failure.reason); the last deploy, IAM or table changes.",
    });
    this.alarm('ListStreamFailures', {
      metric: this.serviceMetric(METRIC_NAMES.listStreamFailures),
      threshold: alarms.listStreamFailures,
      means: 'A list failed after its status line: a client got a cut-off body.',
      look: "listOrders' log (ERROR) and duration, Orders table errors.",
    });
    this.alarm('ListResponseBytes', {
      metric: this.serviceMetric(METRIC_NAMES.listResponseBytes, 'Maximum'),
      threshold: alarms.listResponseBytes,
      means: `A list response reached ${alarms.listResponseBytes / 1e6} MB, half of Lambda's streaming ceiling.`,
      look: 'ListOrdersSent and ListResponseBytes trends: plan pagination (v2) before the ceiling.',
    });
  }

  private addDashboard(): Dashboard {
    const { config, api, functions } = this.props;
    const stage = api.deploymentStage;
    const minute = Duration.minutes(1);
    const sum = { period: minute, statistic: 'Sum' };
    const routeMethods = api.methods.filter((m) => m.httpMethod !== 'ANY');
    const routeLabel = (m: Method) => `${m.httpMethod} ${m.resource.path}`;
    const fns = Object.entries(functions) as [FunctionName, ServiceFunction][];
    const graph = (title: string, left: IMetric[], extra: Partial<GraphWidgetProps> = {}) =>
      new GraphWidget({ title, left, width: 12, height: 6, ...extra });

    const requestsByRoute = routeMethods.map((m) => {
      const count = m.metricCount(stage, sum);
      const client = m.metricClientError(stage, sum);
      const server = m.metricServerError(stage, sum);
      return graph(`Requests by status class: ${routeLabel(m)}`, [
        new MathExpression({
          expression: 'count - c4 - c5',
          usingMetrics: { count, c4: client, c5: server },
          label: '2XX/3XX',
          period: minute,
        }),
        client.with({ label: '4XX' }),
        server.with({ label: '5XX' }),
      ]);
    });
    const latency = graph(
      'API latency by route (ms)',
      routeMethods.flatMap((m) => [
        m.metricLatency(stage, { period: minute, statistic: 'p50', label: `${routeLabel(m)} p50` }),
        m.metricLatency(stage, { period: minute, statistic: 'p99', label: `${routeLabel(m)} p99` }),
        m.metricIntegrationLatency(stage, {
          period: minute,
          statistic: 'p99',
          label: `${routeLabel(m)} integration p99`,
        }),
      ]),
    );
    const service = (name: string, label: string, statistic = 'Sum') =>
      this.serviceMetric(name, statistic, minute).with({ label });
    const tooMany = graph('429 answers by code', [
      service(METRIC_NAMES.rateLimited, 'RATE_LIMITED'),
      service(METRIC_NAMES.bannedRequests, 'API_KEY_TEMPORARILY_BANNED'),
    ]);
    const serviceErrors = graph('Service errors', [
      service(METRIC_NAMES.internalErrors, '500 INTERNAL_ERROR'),
      service(METRIC_NAMES.serviceUnavailable, '503 SERVICE_UNAVAILABLE'),
      service(METRIC_NAMES.limiterStoreFailures, 'rate-limiter store failures'),
      service(METRIC_NAMES.listStreamFailures, 'lists cut off'),
      service(METRIC_NAMES.unreadableOrders, 'unreadable orders'),
      service(METRIC_NAMES.listVersionReleaseFailures, 'list version releases failed'),
    ]);
    const lists = graph(
      'List size',
      [service(METRIC_NAMES.listResponseBytes, 'bytes (max)', 'Maximum')],
      {
        right: [
          service(METRIC_NAMES.listOrdersSent, 'orders (max)', 'Maximum'),
          service(METRIC_NAMES.listNotModified, '304 Not Modified (sum)'),
        ],
        leftAnnotations: [{ value: config.alarms.listResponseBytes, label: 'alarm' }],
      },
    );
    const durations = graph(
      'Function duration (ms): p99 and max',
      fns.flatMap(([name, fn]) => [
        fn.metricDuration({ period: minute, statistic: 'p99', label: `${name} p99` }),
        fn.metricDuration({ period: minute, statistic: 'Maximum', label: `${name} max` }),
      ]),
    );
    const concurrency = graph(
      'Concurrent executions (max)',
      fns.map(([name, fn]) =>
        fn.metric('ConcurrentExecutions', { period: minute, statistic: 'Maximum', label: name }),
      ),
      config.concurrency.listOrdersReserved === undefined
        ? {}
        : {
            leftAnnotations: [
              { value: config.concurrency.listOrdersReserved, label: 'listOrders reservation' },
            ],
          },
    );
    const functionFailures = graph(
      'Function errors and throttles',
      fns.flatMap(([name, fn]) => [
        fn.metricErrors({ ...sum, label: `${name} errors` }),
        fn.metricThrottles({ ...sum, label: `${name} throttles` }),
      ]),
    );
    const capacity = graph(
      'DynamoDB consumed capacity (units per minute)',
      this.tables.flatMap(({ name, table }) => [
        table.metricConsumedReadCapacityUnits({ ...sum, label: `${name} read` }),
        table.metricConsumedWriteCapacityUnits({ ...sum, label: `${name} write` }),
      ]),
    );
    const tableErrors = graph(
      'DynamoDB throttled requests and system errors',
      this.tables.flatMap((table) => [
        tableOperationsSum(table, 'ThrottledRequests', {
          period: minute,
          label: `${table.name} throttled`,
        }),
        tableOperationsSum(table, 'SystemErrors', {
          period: minute,
          label: `${table.name} system errors`,
        }),
      ]),
    );

    const rows: IWidget[][] = [
      [
        new TextWidget({
          markdown: `# Store Orders — ${config.stage}\nAlarms notify the stage's SNS topic; each alarm's description is its runbook line. Which API keys hit their limits: the Contributor Insights graph at the bottom (rule \`${this.rateLimitRefusals.ruleName}\`).`,
          width: 24,
          height: 2,
        }),
      ],
      [new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 4 })],
      requestsByRoute,
      [latency, tooMany],
      [serviceErrors, lists],
      [durations, concurrency],
      [functionFailures, capacity],
      [
        tableErrors,
        new ContributorInsightsWidget({
          title: 'API keys refused with 429 (top 10 key ids)',
          ruleName: this.rateLimitRefusals.ruleName,
        }),
      ],
    ];
    const dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `store-orders-${config.stage}`,
      defaultInterval: Duration.hours(3),
      widgets: rows,
    });
    dashboard.node.addDependency(this.rateLimitRefusals);
    return dashboard;
  }
}

/**
 * A stage's dashboard: the alarms' states, requests by route and status class and latencies in
 * each version of the API (each an API Gateway stage, with metrics of its own), the
 * service's own metrics, the functions and the tables, and the API keys refused most (the
 * Contributor Insights rule on the functions' 429 log lines).
 */
import { Duration } from 'aws-cdk-lib';
import type { IStage, Method } from 'aws-cdk-lib/aws-apigateway';
import {
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  MathExpression,
  TextWidget,
  type Alarm,
  type GraphWidgetProps,
  type IMetric,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { API_STAGES, STAGE_ROUTES, type ApiStage } from '../lib/api/routes.ts';
import type { FunctionName } from '../lib/functions.ts';
import { METRIC_NAMES } from '../lib/metrics.ts';
import { ContributorInsightsWidget } from './constructs/contributor-insights.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import {
  batchWriteThrottles,
  indexWriteThrottles,
  tableOperationsSum,
  type Monitoring,
} from './monitoring.ts';

/** The stage's dashboard, a child of its monitoring, showing the alarms given. */
export function addDashboard(monitoring: Monitoring, alarms: Alarm[]): Dashboard {
  const { config, api, apiStages, functions } = monitoring.props;
  const { tables, rateLimitRefusals } = monitoring;
  const minute = Duration.minutes(1);
  const sum = { period: minute, statistic: 'Sum' };
  const fns = Object.entries(functions) as [FunctionName, ServiceFunction][];
  const graph = (title: string, left: IMetric[], extra: Partial<GraphWidgetProps> = {}) =>
    new GraphWidget({ title, left, width: 12, height: 6, ...extra });

  /** A version's routes: API Gateway's method of each (the stages share them), its operation. */
  const routesOf = (apiStage: ApiStage) =>
    STAGE_ROUTES[apiStage].map((route) => {
      const method = api.methods.find(
        (m) => m.httpMethod === route.method && m.resource.path === route.path,
      );
      if (!method) throw new Error(`no method ${route.method} ${route.path} for ${apiStage}`);
      return { method, label: `${apiStage} ${route.method} ${route.path} (${route.operationId})` };
    });
  const requestsByRoute = (apiStage: ApiStage, stage: IStage) =>
    routesOf(apiStage).map(({ method: m, label }) => {
      const count = m.metricCount(stage, sum);
      const client = m.metricClientError(stage, sum);
      const server = m.metricServerError(stage, sum);
      return graph(`Requests by status class: ${label}`, [
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
  const latency = (apiStage: ApiStage, stage: IStage) =>
    graph(
      `API latency by route (ms): ${apiStage}`,
      routesOf(apiStage).flatMap(({ method: m, label }: { method: Method; label: string }) => [
        m.metricLatency(stage, { period: minute, statistic: 'p50', label: `${label} p50` }),
        m.metricLatency(stage, { period: minute, statistic: 'p99', label: `${label} p99` }),
        m.metricIntegrationLatency(stage, {
          period: minute,
          statistic: 'p99',
          label: `${label} integration p99`,
        }),
      ]),
    );
  const service = (name: string, label: string, statistic = 'Sum') =>
    monitoring.serviceMetric(name, statistic, minute).with({ label });
  const tooMany = graph('403 and 429 answers by code', [
    service(METRIC_NAMES.rateLimited, 'RATE_LIMITED'),
    service(METRIC_NAMES.bannedRequests, 'API_KEY_TEMPORARILY_BANNED'),
    service(METRIC_NAMES.permissionDenied, 'PERMISSION_DENIED'),
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
  const dynamoDbCalls = graph(
    'DynamoDB calls as the functions see them (ms, SDK retries included)',
    ['p50', 'p99', 'Maximum'].map((statistic) =>
      service(METRIC_NAMES.dynamoDbCallDuration, statistic, statistic),
    ),
  );
  const capacity = graph(
    'DynamoDB consumed capacity (units per minute)',
    tables.flatMap(({ name, table }) => [
      table.metricConsumedReadCapacityUnits({ ...sum, label: `${name} read` }),
      table.metricConsumedWriteCapacityUnits({ ...sum, label: `${name} write` }),
    ]),
  );
  const tableErrors = graph(
    'DynamoDB throttled requests and system errors',
    tables.flatMap((table) => [
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

  const indexThrottles = graph(
    "Orders indexes: write throttles (and the CLI's throttled imports)",
    [
      ...config.ordersIndexes.map((index) =>
        indexWriteThrottles(monitoring.orders, index, { period: minute, label: index }),
      ),
      batchWriteThrottles(monitoring.orders, { period: minute, label: 'BatchWriteItem (CLI)' }),
    ],
  );

  const rows: IWidget[][] = [
    [
      new TextWidget({
        markdown: `# Store Orders — ${config.stage}\nAlarms notify the stage's SNS topic; each alarm's description is its runbook line. Which API keys hit their limits: the Contributor Insights graph at the bottom (rule \`${rateLimitRefusals.ruleName}\`).`,
        width: 24,
        height: 2,
      }),
    ],
    [new AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 4 })],
    ...API_STAGES.map((apiStage) => requestsByRoute(apiStage, apiStages[apiStage])),
    API_STAGES.map((apiStage) => latency(apiStage, apiStages[apiStage])),
    [tooMany, serviceErrors],
    [lists],
    [durations, concurrency],
    [functionFailures, capacity],
    [dynamoDbCalls, tableErrors],
    [indexThrottles],
    [
      new ContributorInsightsWidget({
        title: 'API keys refused with 429 (top 10 key ids)',
        ruleName: rateLimitRefusals.ruleName,
        width: 24,
      }),
    ],
  ];
  const dashboard = new Dashboard(monitoring, 'Dashboard', {
    dashboardName: `store-orders-${config.stage}`,
    defaultInterval: Duration.hours(3),
    widgets: rows,
  });
  dashboard.node.addDependency(rateLimitRefusals);
  return dashboard;
}

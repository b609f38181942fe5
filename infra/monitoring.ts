/**
 * What an operator of a stage watches: its API, its functions, the tables they use, the service's
 * own metrics (embedded metric format, dimension `service`), and a Contributor Insights rule showing which API
 * keys hit their limits. Its alarms (./alarms.ts) and its dashboard (./dashboard.ts) are built on
 * it, as its children.
 */
import type { Duration } from 'aws-cdk-lib';
import type { IStage, RestApi } from 'aws-cdk-lib/aws-apigateway';
import { MathExpression, Metric, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { Operation, type ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { HTTP_OPERATIONS, type ApiStage } from '../lib/api/routes.ts';
import type { TableName } from '../lib/dynamodb/tables.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import { SERVICE_NAME, stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageConfig } from './config.ts';
import { LogContributorRule } from './constructs/contributor-insights.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

/** The line the functions log on every 429 (functions/shared/logger.ts), and its caller field. */
export const RATE_LIMIT_REFUSAL_LOG = { message: 'Rate limit refusal', keyIdPath: '$.keyId' };

/**
 * The functions that answer HTTP requests (every route's; not the authorizer, which answers
 * policies and logs no request id), in lib/functions.ts order: derived from the route tables.
 */
export const HTTP_FUNCTIONS: readonly FunctionName[] = FUNCTION_NAMES.filter((name) =>
  (HTTP_OPERATIONS as ReadonlySet<string>).has(name),
);

export interface MonitoringProps {
  readonly config: StageConfig;
  readonly api: RestApi;
  /** The API's stage of each version: API Gateway's per-route metrics are per stage. */
  readonly apiStages: Readonly<Record<ApiStage, IStage>>;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
}

/** The DynamoDB operations of a list of IAM actions (`dynamodb:Query` → Query). */
function operationsOf(actions: readonly string[]): Operation[] {
  const known = new Set<string>(Object.values(Operation));
  return [...new Set(actions.map((a) => a.replace(/^dynamodb:/, '')))]
    .filter((a) => known.has(a))
    .map((a) => a as Operation);
}

/** A table the functions use, with the operations they call on it. */
export interface WatchedTable {
  readonly name: TableName;
  readonly table: ITableV2;
  readonly operations: readonly Operation[];
}

/**
 * A DynamoDB metric of a table (ThrottledRequests, SystemErrors: per operation) summed over the
 * operations given, with metric ids unique to the table, so that one graph can show every table.
 */
export function tableOperationsSum(
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

/**
 * The writes of the orders table an index of it throttled (AWS/DynamoDB WriteThrottleEvents and
 * WriteKeyRangeThroughputThrottleEvents with the index's GlobalSecondaryIndexName): DynamoDB
 * throttles a table's write when one of its indexes cannot take it.
 */
export function indexWriteThrottles(
  orders: WatchedTable,
  index: string,
  options: { period: Duration; label?: string },
): IMetric {
  const metric = (metricName: string) =>
    orders.table.metric(metricName, {
      dimensionsMap: { TableName: orders.table.tableName, GlobalSecondaryIndexName: index },
      statistic: 'Sum',
      period: options.period,
    });
  const id = index.toLowerCase();
  return new MathExpression({
    expression: `${id}_events + ${id}_key_range`,
    usingMetrics: {
      [`${id}_events`]: metric('WriteThrottleEvents'),
      [`${id}_key_range`]: metric('WriteKeyRangeThroughputThrottleEvents'),
    },
    period: options.period,
    ...(options.label ? { label: options.label } : {}),
  });
}

/**
 * The operator's bulk writes of the orders table DynamoDB throttled (ThrottledRequests of
 * BatchWriteItem: `orders import`, the seed), which no function makes: CloudWatch's view of the
 * CLI, as far as it has one (the CLI retries unprocessed items; the items it retried are not
 * counted here).
 */
export function batchWriteThrottles(
  orders: WatchedTable,
  options: { period: Duration; label?: string },
): IMetric {
  return orders.table.metric('ThrottledRequests', {
    dimensionsMap: { TableName: orders.table.tableName, Operation: 'BatchWriteItem' },
    statistic: 'Sum',
    period: options.period,
    ...(options.label ? { label: options.label } : {}),
  });
}

export class Monitoring extends Construct {
  readonly props: MonitoringProps;
  readonly tables: readonly WatchedTable[];
  readonly rateLimitRefusals: LogContributorRule;

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
      // Every HTTP function logs its 429s.
      logGroups: HTTP_FUNCTIONS.map((name) => props.functions[name].logs),
      keys: [RATE_LIMIT_REFUSAL_LOG.keyIdPath],
      filters: [{ field: '$.message', in: [RATE_LIMIT_REFUSAL_LOG.message] }],
    });
  }

  /** The orders table, as the functions use it. */
  get orders(): WatchedTable {
    const orders = this.tables.find((table) => table.name === 'orders');
    if (!orders) throw new Error('no function uses the orders table');
    return orders;
  }

  /** One of the service's own metrics. */
  serviceMetric(name: string, statistic: string, period: Duration): Metric {
    return new Metric({
      namespace: stageMetricsNamespace(this.props.config.stage),
      metricName: name,
      dimensionsMap: { service: SERVICE_NAME },
      statistic,
      period,
    });
  }
}

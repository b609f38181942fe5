/**
 * What a stage's alarms (./alarms.ts) and dashboard (./dashboard.ts) watch: its API, its
 * functions, the tables they use, and the service's own metrics (Powertools, dimension
 * `service`).
 */
import type { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { MathExpression, Metric, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { Operation, type ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { TableName } from '../lib/dynamodb/tables.ts';
import type { FunctionName } from '../lib/functions.ts';
import { SERVICE_NAME, stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageConfig } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

export interface Watched {
  readonly config: StageConfig;
  readonly api: RestApi;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  readonly tables: readonly WatchedTable[];
}

/** One of the service's own metrics in a stage. */
export function serviceMetric(
  stage: string,
  name: string,
  statistic: string,
  period: Duration,
): Metric {
  return new Metric({
    namespace: stageMetricsNamespace(stage),
    metricName: name,
    dimensionsMap: { service: SERVICE_NAME },
    statistic,
    period,
  });
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

/** The tables the functions use (in the order they were given to them), each once. */
export function watchedTables(
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
): WatchedTable[] {
  const uses = Object.values(functions).flatMap((fn) => fn.tableUses);
  return [...new Set(uses.map((use) => use.name))].map((name) => ({
    name,
    table: uses.find((use) => use.name === name)!.table,
    operations: operationsOf(uses.filter((use) => use.name === name).flatMap((u) => u.actions)),
  }));
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

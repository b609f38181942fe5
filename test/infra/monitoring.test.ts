/** What an operator gets per stage: alarms with their thresholds and actions, a dashboard, Contributor Insights. */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import {
  INTERNAL_ERROR_ANSWER_PATTERN,
  KEY_CHECK_TRANSIENT_PATTERN,
  UNAVAILABLE_ANSWER_PATTERN,
} from '../../infra/alarms.ts';
import { stageConfig, type StageConfig } from '../../infra/config.ts';
import { RATE_LIMIT_REFUSAL_LOG } from '../../infra/monitoring.ts';
import { API_STAGES, STAGE_ROUTES } from '../../lib/api/routes.ts';
import type { StageName } from '../../lib/deployment.ts';
import { FUNCTIONS } from '../../lib/functions.ts';
import {
  ERROR_SCORE_THRESHOLD,
  LATENCY_RATIO,
  MIN_LATENCY_SAMPLES,
} from '../../lib/deploy-judgement.ts';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { alarmValue, type AlarmQuery } from '../support/metric-math.ts';
import { matchesFilter } from '../support/deploy-stand-ins.ts';
import { docs } from '../support/runbook.ts';
import { templates, testApp } from './support.ts';

const { stages } = testApp();
const STAGE_NAMES = ['staging', 'production'] as const satisfies readonly StageName[];
const api = Object.fromEntries(
  STAGE_NAMES.map((stage) => [stage, templates(stages[stage]).api]),
) as Record<StageName, Template>;
const data = Object.fromEntries(
  STAGE_NAMES.map((stage) => [stage, templates(stages[stage]).data]),
) as Record<StageName, Template>;
const config = (stage: StageName) => stageConfig(stage, () => undefined, {});

type Resource = { Type: string; Properties: Record<string, unknown> };
const resources = (template: Template, type: string) =>
  Object.entries(template.findResources(type) as Record<string, Resource>);

/** Alarm properties by alarm name, without the `store-orders-<stage>-` prefix. */
function alarmsOf(stage: StageName): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    resources(api[stage], 'AWS::CloudWatch::Alarm').map(([, a]) => [
      String(a.Properties.AlarmName).replace(`store-orders-${stage}-`, ''),
      a.Properties,
    ]),
  );
}

/** The alarms each stage must have, with the threshold its config sets. */
function expectedThresholds(c: StageConfig): Record<string, number> {
  const a = c.alarms;
  return {
    ServerErrorRate: a.serverErrorRate,
    LatencyP99: a.p99LatencyMs,
    ListOrdersErrors: a.functionErrors,
    ListOrderPagesErrors: a.functionErrors,
    CancelOrderErrors: a.functionErrors,
    AuthorizerErrors: a.authorizerErrors,
    ListOrdersThrottles: a.throttles,
    ListOrderPagesThrottles: a.throttles,
    CancelOrderThrottles: a.throttles,
    AuthorizerThrottles: a.throttles,
    OrdersTableThrottledRequests: a.tableThrottledRequests,
    OrdersTableSystemErrors: a.tableSystemErrors,
    ApiKeysTableThrottledRequests: a.tableThrottledRequests,
    ApiKeysTableSystemErrors: a.tableSystemErrors,
    RateLimitsTableThrottledRequests: a.tableThrottledRequests,
    RateLimitsTableSystemErrors: a.tableSystemErrors,
    ...Object.fromEntries(
      c.ordersIndexes.map((index) => [
        `OrdersIndex${index[0]!.toUpperCase()}${index.slice(1)}WriteThrottles`,
        a.indexWriteThrottles,
      ]),
    ),
    OrdersTableBatchWriteThrottles: a.batchWriteThrottles,
    ListOrdersNearTimeout: FUNCTIONS.listOrders.timeoutSeconds * 1000 * a.listDurationOfTimeout,
    RateLimiterStoreFailures: a.limiterStoreFailures,
    InternalErrors: a.internalErrors,
    ListStreamFailures: a.listStreamFailures,
    ListResponseBytes: a.listResponseBytes,
    // What rolls a deploy back during a shift (infra/deployments.ts): the new version judged
    // against the one beside it (lib/deploy-judgement.ts), the same in every stage.
    ...Object.fromEntries(
      ['ListOrders', 'ListOrderPages', 'CancelOrder', 'Authorizer'].flatMap((fn) => [
        [`${fn}NewVersionFailures`, ERROR_SCORE_THRESHOLD],
        [`${fn}NewVersionLatency`, LATENCY_RATIO],
      ]),
    ),
  };
}

/** The logical id of a resource whose properties contain a string. */
function logicalId(template: Template, type: string, contains: string): string {
  const found = resources(template, type).find(([, r]) =>
    JSON.stringify(r.Properties).includes(contains),
  );
  if (!found) throw new Error(`no ${type} with ${contains}`);
  return found[0];
}

/** The dashboard's widgets, with every CloudFormation token rendered as "TOKEN". */
function dashboardWidgets(template: Template): Record<string, unknown>[] {
  const [dashboard] = resources(template, 'AWS::CloudWatch::Dashboard');
  const body = dashboard![1].Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
  const text = body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'TOKEN')).join('');
  return (JSON.parse(text) as { widgets: Record<string, unknown>[] }).widgets;
}

describe.each(STAGE_NAMES)('alarms (%s)', (stage) => {
  const alarms = alarmsOf(stage);

  it('are the ones an on-call needs, each with the threshold of the stage config', () => {
    const thresholds = Object.fromEntries(
      Object.entries(alarms).map(([name, a]) => [name, a.Threshold]),
    );
    expect(thresholds).toEqual(expectedThresholds(config(stage)));
  });

  it('each have a row in docs/alarms.md that links to what to do', () => {
    const page = docs('alarms.md');
    for (const name of Object.keys(alarms)) {
      expect(page, name).toMatch(new RegExp(`\\| \\*\\*${name}\\*\\* .*\\[what to do\\]\\(#`));
    }
  });

  it('each notify the stage topic when they fire and when they clear, with a runbook line', () => {
    const topic = { Ref: logicalId(api[stage], 'AWS::SNS::Topic', `${stage} alarms`) };
    for (const [name, alarm] of Object.entries(alarms)) {
      expect(alarm.AlarmActions, name).toEqual([topic]);
      expect(alarm.OKActions, name).toEqual([topic]);
      expect(alarm).toMatchObject({
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
      expect(alarm.AlarmDescription, name).toMatch(/\. First look: .{20,}/);
    }
  });

  it("watch the service's own metrics in the stage namespace, 500s and cut-off lists at one", () => {
    const namespace = `StoreOrders/${stage}`;
    const own = (metricName: string, statistic: string) => ({
      Namespace: namespace,
      MetricName: metricName,
      Dimensions: [{ Name: 'service', Value: 'store-orders' }],
      Statistic: statistic,
      Period: 300,
    });
    expect(alarms.InternalErrors).toMatchObject({
      ...own(METRIC_NAMES.internalErrors, 'Sum'),
      Threshold: 1,
    });
    expect(alarms.ListStreamFailures).toMatchObject({
      ...own(METRIC_NAMES.listStreamFailures, 'Sum'),
      Threshold: 1,
    });
    expect(alarms.RateLimiterStoreFailures).toMatchObject(
      own(METRIC_NAMES.limiterStoreFailures, 'Sum'),
    );
    // Half of Lambda's 200 MB streamed-response ceiling, on the largest list.
    expect(alarms.ListResponseBytes).toMatchObject({
      ...own(METRIC_NAMES.listResponseBytes, 'Maximum'),
      Threshold: 100_000_000,
    });
  });

  it("watch errors (callers': through live, not the deploy check's calls of a version) and throttles of each function, and the longest list against its timeout", () => {
    const fn = (description: string) => ({
      Ref: logicalId(api[stage], 'AWS::Lambda::Function', description),
    });
    const lambda = (metricName: string, description: string, statistic = 'Sum') => ({
      Namespace: 'AWS/Lambda',
      MetricName: metricName,
      Statistic: statistic,
      Dimensions: [{ Name: 'FunctionName', Value: fn(description) }],
    });
    for (const [name, definition] of [
      ['ListOrders', FUNCTIONS.listOrders],
      ['CancelOrder', FUNCTIONS.cancelOrder],
      ['Authorizer', FUNCTIONS.authorizer],
    ] as const) {
      expect(alarms[`${name}Errors`]).toMatchObject({
        ...lambda('Errors', definition.description),
        Dimensions: [
          { Name: 'FunctionName', Value: fn(definition.description) },
          {
            Name: 'Resource',
            Value: { 'Fn::Join': ['', [fn(definition.description), ':live']] },
          },
        ],
      });
      expect(alarms[`${name}Throttles`]).toMatchObject(lambda('Throttles', definition.description));
    }
    expect(alarms.ListOrdersNearTimeout).toMatchObject({
      ...lambda('Duration', FUNCTIONS.listOrders.description, 'Maximum'),
      Threshold: 720_000,
    });
  });

  it('watch DynamoDB throttled requests and system errors per table, over the operations the functions call', () => {
    const operations = (alarm: Record<string, unknown>) => {
      const metrics = alarm.Metrics as {
        Expression?: string;
        MetricStat?: {
          Metric: { MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
        };
      }[];
      const stats = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat!.Metric);
      return {
        metric: [...new Set(stats.map((m) => m.MetricName))],
        table: [
          ...new Set(
            stats.map(
              (m) =>
                JSON.stringify(m.Dimensions.find((d) => d.Name === 'TableName')!.Value).match(
                  /Orders|ApiKeys|RateLimits/,
                )?.[0],
            ),
          ),
        ],
        operations: stats.map((m) => m.Dimensions.find((d) => d.Name === 'Operation')!.Value),
        expression: metrics.find((m) => m.Expression)?.Expression,
      };
    };
    const expected = {
      Orders: ['Query', 'BatchGetItem', 'GetItem', 'UpdateItem'],
      ApiKeys: ['GetItem'],
      RateLimits: ['UpdateItem'],
    };
    for (const [table, ops] of Object.entries(expected)) {
      expect(operations(alarms[`${table}TableThrottledRequests`]!)).toEqual({
        metric: ['ThrottledRequests'],
        table: [table],
        operations: ops,
        // The alarm is on the sum over the operations.
        expression: ops
          .map((op) => `${table.toLowerCase()}_throttledrequests_${op.toLowerCase()}`)
          .join(' + '),
      });
      expect(operations(alarms[`${table}TableSystemErrors`]!)).toMatchObject({
        metric: ['SystemErrors'],
        table: [table],
        operations: ops,
      });
    }
  });

  it("watch each index's write throttles (both kinds) and the CLI's throttled BatchWriteItems of the orders table", () => {
    const { ordersIndexes } = config(stage);
    expect(ordersIndexes).toHaveLength(5);
    for (const index of ordersIndexes) {
      const alarm = alarms[`OrdersIndex${index[0]!.toUpperCase()}${index.slice(1)}WriteThrottles`]!;
      const metrics = alarm.Metrics as {
        Expression?: string;
        MetricStat?: {
          Metric: { MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
        };
      }[];
      const stats = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat!.Metric);
      expect(stats.map((m) => m.MetricName).sort()).toEqual([
        'WriteKeyRangeThroughputThrottleEvents',
        'WriteThrottleEvents',
      ]);
      for (const m of stats) {
        expect(m.Dimensions.find((d) => d.Name === 'GlobalSecondaryIndexName')?.Value).toBe(index);
        expect(JSON.stringify(m.Dimensions.find((d) => d.Name === 'TableName')?.Value)).toMatch(
          /Orders/,
        );
      }
      expect(String(alarm.AlarmDescription)).toContain(index);
      expect(String(alarm.AlarmDescription)).toMatch(/304/);
    }
    expect(alarms.OrdersTableBatchWriteThrottles).toMatchObject({
      MetricName: 'ThrottledRequests',
      Dimensions: expect.arrayContaining([{ Name: 'Operation', Value: 'BatchWriteItem' }]),
    });
  });

  it('watch the API 5XX rate and p99 latency of the stage API', () => {
    expect(alarms.ServerErrorRate!.Metrics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Expression: 'IF(requests > 0, errors / requests, 0)' }),
        expect.objectContaining({
          Id: 'errors',
          MetricStat: expect.objectContaining({
            Metric: {
              Namespace: 'AWS/ApiGateway',
              MetricName: '5XXError',
              Dimensions: [{ Name: 'ApiName', Value: `store-orders-${stage}` }],
            },
          }),
        }),
      ]),
    );
    expect(alarms.LatencyP99).toMatchObject({ MetricName: 'Latency', ExtendedStatistic: 'p99' });
  });
});

describe.each(STAGE_NAMES)('what a deploy is judged by (%s)', (stage) => {
  const alarms = alarmsOf(stage);
  const pascal = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
  const queries = (name: string) => alarms[name]!.Metrics as AlarmQuery[];

  /** A metric's figure in one minute: which version (`new`, all versions: `all`), which metric. */
  type Figures = Partial<Record<`${'new' | 'all'} ${string}`, number>>;
  /**
   * The alarm's value for one minute's figures: each MetricStat read as the new version's (a
   * version dimension) or all versions' (none), by its metric name and statistic.
   */
  function valueOf(name: string, figures: Figures) {
    return alarmValue(queries(name), ({ Metric, Stat }) => {
      const versioned = (Metric.Dimensions ?? []).some(
        (d) => d.Name === 'ExecutedVersion' || d.Name === 'FunctionVersion',
      );
      return figures[`${versioned ? 'new' : 'all'} ${Metric.MetricName} ${Stat}`];
    });
  }
  const fires = (name: string, figures: Figures) => {
    const value = valueOf(name, figures);
    return value !== undefined && value >= (alarms[name]!.Threshold as number);
  };

  it("counts each 500 answer and each 503 answer to a caller of an HTTP function apart, and the authorizer's transient failures, by function (and version): not the deploy check's", () => {
    const filters = resources(api[stage], 'AWS::Logs::MetricFilter').map(([, f]) => f.Properties);
    // Two per metric (by version, and all versions): the HTTP functions' 500s and 503s, the
    // authorizer's transient failures.
    expect(filters).toHaveLength(2 * (2 * 3 + 1));
    const byGroup = (fn: string) =>
      filters.filter((f) => JSON.stringify(f.LogGroupName).includes(`${fn}Logs`));
    const transformations = (name: string) => [
      [
        {
          MetricNamespace: `StoreOrders/${stage}`,
          MetricName: name,
          MetricValue: '1',
          Unit: 'Count',
          Dimensions: [
            { Key: 'FunctionName', Value: '$.function_name' },
            { Key: 'FunctionVersion', Value: '$.function_version' },
          ],
        },
      ],
      [
        {
          MetricNamespace: `StoreOrders/${stage}`,
          MetricName: name,
          MetricValue: '1',
          Unit: 'Count',
          Dimensions: [{ Key: 'FunctionName', Value: '$.function_name' }],
        },
      ],
    ];
    for (const fn of ['ListOrders', 'ListOrderPages', 'CancelOrder', 'Authorizer']) {
      const counted: [string, { logPatternString: string }][] =
        fn === 'Authorizer'
          ? [[METRIC_NAMES.keyCheckTransientFailures, KEY_CHECK_TRANSIENT_PATTERN]]
          : [
              [METRIC_NAMES.internalErrorAnswers, INTERNAL_ERROR_ANSWER_PATTERN],
              [METRIC_NAMES.unavailableAnswers, UNAVAILABLE_ANSWER_PATTERN],
            ];
      expect(byGroup(fn).map((f) => f.MetricTransformations)).toEqual(
        counted.flatMap(([name]) => transformations(name)),
      );
      expect(byGroup(fn).map((f) => f.FilterPattern)).toEqual(
        counted.flatMap(([, pattern]) => [pattern.logPatternString, pattern.logPatternString]),
      );
    }
    expect(INTERNAL_ERROR_ANSWER_PATTERN.logPatternString).toBe(
      '{ ($.status = 500) && ($.deploy_check NOT EXISTS) }',
    );
    expect(UNAVAILABLE_ANSWER_PATTERN.logPatternString).toBe(
      '{ ($.status = 503) && ($.deploy_check NOT EXISTS) }',
    );
    // A 503 is not a 500, and the other way round; the deploy check's are neither.
    const counts = (pattern: { logPatternString: string }, line: Record<string, unknown>) =>
      matchesFilter(pattern.logPatternString, line);
    expect(counts(INTERNAL_ERROR_ANSWER_PATTERN, { status: 500 })).toBe(true);
    expect(counts(INTERNAL_ERROR_ANSWER_PATTERN, { status: 503 })).toBe(false);
    expect(counts(INTERNAL_ERROR_ANSWER_PATTERN, { status: 500, deploy_check: true })).toBe(false);
    expect(counts(UNAVAILABLE_ANSWER_PATTERN, { status: 503 })).toBe(true);
    expect(counts(UNAVAILABLE_ANSWER_PATTERN, { status: 500 })).toBe(false);
    expect(counts(UNAVAILABLE_ANSWER_PATTERN, { status: 503, deploy_check: true })).toBe(false);
  });

  it.each(FUNCTION_NAMES.filter((fn) => fn !== 'authorizer'))(
    'rolls %s back when its new version answers 503 where the version beside it did not in the same minute, and not for a DynamoDB incident both meet',
    (fn: FunctionName) => {
      const name = `${pascal(fn)}NewVersionFailures`;
      const unavailable = `${METRIC_NAMES.unavailableAnswers} Sum`;
      const minute = (new503: number, old503: number): Figures => ({
        [`new ${unavailable}`]: new503,
        [`all ${unavailable}`]: new503 + old503,
        'new Invocations Sum': 20,
        'all Invocations Sum': 200,
      });
      expect(fires(name, minute(4, 0))).toBe(true);
      // DynamoDB slow for both: a fifth of each version's requests.
      expect(fires(name, minute(4, 36))).toBe(false);
      expect(fires(name, minute(1, 0))).toBe(false);
    },
  );

  it.each(FUNCTION_NAMES)(
    "rolls %s back when its new version fails both of 2 requests in a minute, and not on 1, nor on the old version's own share of failures",
    (fn: FunctionName) => {
      const name = `${pascal(fn)}NewVersionFailures`;
      const failed =
        fn === 'authorizer' ? 'Errors Sum' : `${METRIC_NAMES.internalErrorAnswers} Sum`;
      const minute = (
        newFailed: number,
        newRequests: number,
        oldFailed: number,
        oldRequests: number,
      ): Figures => ({
        [`new ${failed}`]: newFailed,
        [`all ${failed}`]: newFailed + oldFailed,
        'new Invocations Sum': newRequests,
        'all Invocations Sum': newRequests + oldRequests,
      });
      expect(fires(name, minute(2, 2, 0, 18))).toBe(true);
      expect(fires(name, minute(1, 1, 0, 9))).toBe(false);
      // The old version fails 2% of its requests in the same minute: 4 of 100 is no news.
      expect(fires(name, minute(4, 100, 18, 900))).toBe(false);
      expect(fires(name, minute(10, 100, 18, 900))).toBe(true);
      // No data at all (no traffic): no verdict.
      expect(fires(name, {})).toBe(false);
      // No version beside it (after the last shift, outside a deploy): nothing to compare with.
      expect(fires(name, minute(10, 10, 0, 0))).toBe(false);
    },
  );

  it("does not roll the authorizer back for its key store's transient failures (503s) that the version beside it met as much in the same minute; only for the rest of its failed invocations, or transient failures the other did not meet", () => {
    const transient = `${METRIC_NAMES.keyCheckTransientFailures} Sum`;
    const minute = (errors: number, transients: number, oldTransients: number): Figures => ({
      'new Errors Sum': errors,
      [`new ${transient}`]: transients,
      'all Errors Sum': errors + oldTransients,
      [`all ${transient}`]: transients + oldTransients,
      'new Invocations Sum': 10,
      'all Invocations Sum': 100,
    });
    expect(fires('AuthorizerNewVersionFailures', minute(5, 5, 45))).toBe(false);
    expect(fires('AuthorizerNewVersionFailures', minute(5, 0, 0))).toBe(true);
    expect(fires('AuthorizerNewVersionFailures', minute(5, 5, 0))).toBe(true);
  });

  it.each(FUNCTION_NAMES)(
    "rolls %s back when its new version's median latency is twice all versions', from enough requests of each (a list: its time to first byte)",
    (fn: FunctionName) => {
      const name = `${pascal(fn)}NewVersionLatency`;
      const [metric, count] =
        fn === 'listOrders'
          ? [METRIC_NAMES.timeToFirstByte, `${METRIC_NAMES.timeToFirstByte} SampleCount`]
          : ['Duration', 'Invocations Sum'];
      const minute = (
        newMs: number,
        allMs: number,
        newSamples: number,
        allSamples: number,
      ): Figures => ({
        [`new ${metric} p50`]: newMs,
        [`all ${metric} p50`]: allMs,
        [`new ${count}`]: newSamples,
        [`all ${count}`]: allSamples,
      });
      const enough = MIN_LATENCY_SAMPLES;
      expect(fires(name, minute(100, 22, enough, 10 * enough))).toBe(true);
      expect(fires(name, minute(30, 22, enough, 10 * enough))).toBe(false);
      // A few cold starts of the new version are no verdict.
      expect(fires(name, minute(100, 22, enough - 1, 10 * enough))).toBe(false);
      // Nothing beside it to compare with (after the last shift): no verdict here either.
      expect(fires(name, minute(100, 100, 10 * enough, 10 * enough))).toBe(false);
    },
  );

  it("reads the new version's figures through live by the version the alias moves to, and never the deploy check's calls", () => {
    let checked = 0;
    for (const fn of FUNCTION_NAMES) {
      for (const kind of ['Failures', 'Latency']) {
        for (const query of queries(`${pascal(fn)}NewVersion${kind}`)) {
          const metric = query.MetricStat?.Metric;
          if (metric?.Namespace !== 'AWS/Lambda') continue;
          checked++;
          const dimensions = Object.fromEntries(
            (metric.Dimensions ?? []).map((d) => [d.Name, JSON.stringify(d.Value)]),
          );
          // Through `live`: a direct call of the version (the deploy check) is not in it.
          expect(dimensions.Resource).toMatch(/:live/);
          if (dimensions.ExecutedVersion) {
            expect(dimensions.ExecutedVersion).toMatch(/LivePinned.*LiveVersion.*CurrentVersion/);
          }
        }
      }
    }
    // Every function's judged Lambda figures were read (the authorizer's failures, all latency).
    expect(checked).toBeGreaterThanOrEqual(FUNCTION_NAMES.length);
  });
});

describe('alarm thresholds', () => {
  it('are tighter in production than in staging', () => {
    const staging = alarmsOf('staging');
    const production = alarmsOf('production');
    expect(production.ServerErrorRate!.Threshold).toBe(0.01);
    expect(staging.ServerErrorRate!.Threshold).toBe(0.05);
    expect(production.LatencyP99!.Threshold).toBe(1500);
    expect(production.AuthorizerErrors!.Threshold).toBe(3);
    for (const name of Object.keys(production)) {
      expect(production[name]!.Threshold as number, name).toBeLessThanOrEqual(
        staging[name]!.Threshold as number,
      );
    }
  });
});

describe.each(STAGE_NAMES)('dashboard (%s)', (stage) => {
  const widgets = dashboardWidgets(api[stage]);
  const byTitle = (title: string) => {
    const widget = widgets.find((w) => (w.properties as { title?: string }).title === title);
    if (!widget) throw new Error(`no widget ${title}`);
    return widget.properties as {
      metrics: unknown[][];
      annotations?: { horizontal: { value: number }[] };
      insightRule?: Record<string, unknown>;
      alarms?: unknown[];
    };
  };
  /** [namespace, metric name, ...dimension name/value pairs] of each graphed metric. */
  const series = (title: string) =>
    byTitle(title).metrics.map((m) => m.filter((part) => typeof part === 'string').join(' '));

  it('is named for the stage', () => {
    api[stage].hasResourceProperties('AWS::CloudWatch::Dashboard', {
      DashboardName: `store-orders-${stage}`,
    });
  });

  it('shows requests by route and status class in each version, from the per-method API metrics', () => {
    for (const apiStage of API_STAGES) {
      for (const { method, path, operationId } of STAGE_ROUTES[apiStage]) {
        const dims = `ApiName store-orders-${stage} Method ${method} Resource ${path} Stage TOKEN`;
        expect(
          series(`Requests by status class: ${apiStage} ${method} ${path} (${operationId})`),
        ).toEqual([
          '',
          `AWS/ApiGateway Count ${dims}`,
          `AWS/ApiGateway 4XXError ${dims}`,
          `AWS/ApiGateway 5XXError ${dims}`,
        ]);
      }
      expect(series(`API latency by route (ms): ${apiStage}`)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^AWS\/ApiGateway Latency .*Method GET/),
          expect.stringMatching(/^AWS\/ApiGateway IntegrationLatency .*Method DELETE/),
        ]),
      );
    }
  });

  it("graphs each version's routes on that version's API stage: v2's traffic is on the dashboard", () => {
    // The API Gateway stage each route graph reads, by its StageName.
    const stageNames = Object.fromEntries(
      resources(api[stage], 'AWS::ApiGateway::Stage').map(([id, st]) => [
        id,
        String(st.Properties.StageName),
      ]),
    );
    const [, dashboard] = resources(api[stage], 'AWS::CloudWatch::Dashboard')[0]!;
    const body = dashboard.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    const text = body['Fn::Join'][1]
      .map((p) =>
        typeof p === 'string'
          ? p
          : 'Ref' in (p as object) && (p as { Ref: string }).Ref in stageNames
            ? `STAGE:${stageNames[(p as { Ref: string }).Ref]}`
            : 'TOKEN',
      )
      .join('');
    const graphs = (
      JSON.parse(text) as { widgets: { properties: { title?: string; metrics?: unknown[][] } }[] }
    ).widgets.map((w) => w.properties);
    for (const apiStage of API_STAGES) {
      const routes = graphs.filter((g) =>
        g.title?.startsWith(`Requests by status class: ${apiStage} `),
      );
      expect(routes.map((g) => g.title)).toEqual(
        STAGE_ROUTES[apiStage].map(
          (r) => `Requests by status class: ${apiStage} ${r.method} ${r.path} (${r.operationId})`,
        ),
      );
      const latency = graphs.find((g) => g.title === `API latency by route (ms): ${apiStage}`)!;
      for (const graph of [...routes, latency]) {
        const stagesRead = graph.metrics!.flatMap((m) =>
          m.filter((part) => typeof part === 'string' && part.startsWith('STAGE:')),
        );
        expect(stagesRead.length, graph.title).toBeGreaterThan(0);
        expect(new Set(stagesRead), graph.title).toEqual(new Set([`STAGE:${apiStage}`]));
      }
    }
    expect(graphs.some((g) => g.title?.includes('(listOrderPages)'))).toBe(true);
  });

  it("shows the DynamoDB calls' latency as the functions record it: p50, p99, max", () => {
    const calls = byTitle('DynamoDB calls as the functions see them (ms, SDK retries included)');
    expect(series('DynamoDB calls as the functions see them (ms, SDK retries included)')).toEqual(
      Array(3).fill(
        `StoreOrders/${stage} ${METRIC_NAMES.dynamoDbCallDuration} service store-orders`,
      ),
    );
    expect(JSON.stringify(calls.metrics)).toMatch(/"stat":"p50".*"stat":"p99".*"stat":"Maximum"/);
  });

  it("shows 403s and 429s by code, the limiter's store failures and the service errors", () => {
    const own = (name: string) => `StoreOrders/${stage} ${name} service store-orders`;
    expect(series('403 and 429 answers by code')).toEqual([
      own(METRIC_NAMES.rateLimited),
      own(METRIC_NAMES.bannedRequests),
      own(METRIC_NAMES.permissionDenied),
    ]);
    expect(series('Service errors')).toEqual(
      expect.arrayContaining([
        own(METRIC_NAMES.limiterStoreFailures),
        own(METRIC_NAMES.internalErrors),
        own(METRIC_NAMES.serviceUnavailable),
        own(METRIC_NAMES.listStreamFailures),
        own(METRIC_NAMES.listVersionReleaseFailures),
      ]),
    );
    expect(series('List size')).toEqual([
      own(METRIC_NAMES.listResponseBytes),
      own(METRIC_NAMES.listOrdersSent),
      own(METRIC_NAMES.listNotModified),
    ]);
  });

  it('shows function durations and concurrency, with the listOrders reservation', () => {
    // p99 and max of each of the four functions.
    expect(series('Function duration (ms): p99 and max')).toHaveLength(8);
    expect(new Set(series('Function duration (ms): p99 and max'))).toEqual(
      new Set(['AWS/Lambda Duration FunctionName TOKEN']),
    );
    expect(series('Concurrent executions (max)')).toEqual(
      Array(4).fill('AWS/Lambda ConcurrentExecutions FunctionName TOKEN'),
    );
    expect(byTitle('Concurrent executions (max)').annotations?.horizontal[0]?.value).toBe(
      config(stage).concurrency.listOrdersReserved,
    );
  });

  it('shows DynamoDB consumed capacity and throttles of every table', () => {
    const capacity = series('DynamoDB consumed capacity (units per minute)');
    expect(capacity.filter((s) => s.includes('ConsumedReadCapacityUnits'))).toHaveLength(3);
    expect(capacity.filter((s) => s.includes('ConsumedWriteCapacityUnits'))).toHaveLength(3);
    const errors = series('DynamoDB throttled requests and system errors');
    // Per table and operation: Orders' Query, BatchGetItem, GetItem and UpdateItem, the others'
    // one each.
    expect(errors.filter((s) => s.includes('ThrottledRequests'))).toHaveLength(6);
    expect(errors.filter((s) => s.includes('SystemErrors'))).toHaveLength(6);
  });

  it('shows every alarm, and which API keys hit their limits (Contributor Insights)', () => {
    expect(byTitle('Alarms').alarms).toHaveLength(Object.keys(alarmsOf(stage)).length);
    expect(byTitle('API keys refused with 429 (top 10 key ids)').insightRule).toMatchObject({
      ruleName: `store-orders-${stage}-rate-limit-refusals`,
      orderBy: 'Sum',
    });
  });
});

describe.each(STAGE_NAMES)('which API keys hit their limits (%s)', (stage) => {
  it("a Contributor Insights rule counts the functions' 'Rate limit refusal' lines by key id", () => {
    const rules = resources(api[stage], 'AWS::CloudWatch::InsightRule');
    expect(rules).toHaveLength(1);
    const [, rule] = rules[0]!;
    expect(rule.Properties).toMatchObject({
      RuleName: `store-orders-${stage}-rate-limit-refusals`,
      RuleState: 'ENABLED',
    });
    const join = (rule.Properties.RuleBody as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    const body = JSON.parse(
      join.map((p) => (typeof p === 'string' ? p : JSON.stringify(p).replace(/"/g, "'"))).join(''),
    ) as Record<string, unknown>;
    expect(body).toEqual({
      Schema: { Name: 'CloudWatchLogRule', Version: 1 },
      LogGroupNames: [
        expect.stringMatching(/^\{'Ref':'ListOrdersLogs[0-9A-F]{8}'\}$/),
        expect.stringMatching(/^\{'Ref':'ListOrderPagesLogs[0-9A-F]{8}'\}$/),
        expect.stringMatching(/^\{'Ref':'CancelOrderLogs[0-9A-F]{8}'\}$/),
      ],
      LogFormat: 'JSON',
      Contribution: {
        Keys: ['$.keyId'],
        Filters: [{ Match: '$.message', In: [RATE_LIMIT_REFUSAL_LOG.message] }],
      },
      AggregateOn: 'Count',
    });
  });

  it('DynamoDB Contributor Insights watches the rate counters (one item per key) only', () => {
    data[stage].hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      Replicas: [
        Match.objectLike({
          ContributorInsightsSpecification: {
            Enabled: true,
            Mode: 'ACCESSED_AND_THROTTLED_KEYS',
          },
        }),
      ],
    });
    const watched = resources(data[stage], 'AWS::DynamoDB::GlobalTable').filter(([, t]) =>
      JSON.stringify(t.Properties.Replicas).includes('ContributorInsightsSpecification'),
    );
    expect(watched).toHaveLength(1);
  });
});

/**
 * What the on-call engineer relies on in the synthesized stages: log groups named per stage and
 * listed in the outputs, saved Logs Insights queries on the fields the service really writes,
 * every function invoked through its `live` alias and deployed by CodeDeploy with rollback on
 * alarms, and what `cdk destroy` deletes and keeps in each stage (as docs/operations.md says).
 */
import { API_STAGES } from '../../lib/api/routes.ts';
import middy from '@middy/core';
import type { Template } from 'aws-cdk-lib/assertions';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';

// The functions' logger reads its level at load (the test setup silences it): these tests read
// the lines it writes.
vi.hoisted(() => {
  process.env.LOG_LEVEL = 'INFO';
});
import { stageConfig } from '../../infra/config.ts';
import {
  FUNCTION_LOG_FIELDS,
  LOG_QUERIES,
  REQUEST_ID_PLACEHOLDER,
} from '../../infra/log-queries.ts';
import { ApiError, httpErrors, toApiError } from '../../functions/shared/http-errors.ts';
import { Logger } from '../../functions/shared/logger.ts';
import { accessLogTemplate, renderAccessLog } from '../../lib/api/access-log.ts';
import { ERROR_ANSWER_LOG } from '../../lib/api/errors.ts';
import { settingsFromEnv } from '../../functions/deploy-hooks/settings.ts';
import { WATCH_RESERVE_MS } from '../../functions/deploy-hooks/hooks.ts';
import { DEPLOY_CHECK_LEADING_KEYS } from '../../infra/deploy-hooks.ts';
import { DEPLOY_CHECK_PARTITIONS, DEPLOY_CHECK_SHARD } from '../../lib/dynamodb/tables.ts';
import {
  deploymentApplicationName,
  DO_NOT_SHIP_ALIAS,
  EXECUTION_LOG_SOURCES,
  executionLogGroupName,
  HOOK_ENV,
  FUNCTION_OUTPUTS,
  LIVE_ALIAS,
  ROLLBACK_ALIAS,
  LOG_GROUP_OUTPUTS,
  logGroupName,
  queryPrefix,
  STACK_OUTPUTS,
  STAGES,
  type LogSource,
  type StageName,
} from '../../lib/deployment.ts';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import { DependencyFailure } from '../../lib/failures.ts';
import { RateLimitRefusal } from '../../lib/limits/limiter.ts';
import { InvalidOrderId } from '../../lib/orders/operations.ts';
import { RATE_LIMIT_REFUSAL_LOG } from '../../infra/monitoring.ts';
import { awsSteps, docs, markdownTable, shellBlocks, standInAws } from '../support/runbook.ts';
import { templates, testApp } from './support.ts';

const { stages } = testApp();
const stageTemplates = Object.fromEntries(
  STAGES.map((stage) => [stage, templates(stages[stage])]),
) as Record<StageName, { data: Template; api: Template }>;

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  UpdatePolicy?: Record<string, unknown>;
};
const resources = (template: Template, type: string) =>
  Object.entries(template.findResources(type) as Record<string, Resource>);
const ref = (id: string) => ({ Ref: id });

/** The logical id of a stage's resource, by the construct it was made by. */
function idOf(stage: StageName, construct: { node: { defaultChild?: unknown } }): string {
  return stages[stage].api.getLogicalId(construct.node.defaultChild as never);
}

/** The logical id of the version a function's alias points at (its current version). */
function versionId(stage: StageName, fn: { node: { defaultChild?: unknown } }): string {
  const fnId = idOf(stage, fn);
  const [found] = resources(stageTemplates[stage].api, 'AWS::Lambda::Version').filter(
    ([, v]) => JSON.stringify(v.Properties.FunctionName) === JSON.stringify(ref(fnId)),
  );
  if (!found) throw new Error(`no version of ${fnId}`);
  return found[0];
}

/** The REST API id, a function and a table of the stand-in AWS CLI's stage. */
const STAND_IN_REST_API_ID = 'abc123defg';
const FUNCTION_NAME = 'Production-Api-CancelOrder87F627D3-AbCdEf';
const ORDERS_TABLE = 'Production-Data-OrdersE1F3A9C2-1XK8W2P7ZQ4R';
const ALARM_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:Production-Api-AlarmsD4D3A4A9-AbCdEf';
/** An access-log line of a request, as the deployed format writes it. */
const ACCESS_LINE = renderAccessLog(accessLogTemplate(), {
  requestId: '85963121-7f65-4547-be99-ff66c140533b',
  'authorizer.principalId': 'key_rbTbkLzCiXhA',
  status: 404,
});

/** A stack's outputs as a deployed stack lists them: every one the template has, some given. */
function outputsOf(template: Template, values: Record<string, string>): Record<string, string> {
  const keys = Object.keys(template.toJSON().Outputs as object);
  for (const key of Object.keys(values)) expect(keys).toContain(key);
  return Object.fromEntries(keys.map((key) => [key, values[key] ?? `${key}-value`]));
}

const SOURCES: readonly LogSource[] = [
  'access',
  'listOrders',
  'listOrderPages',
  'cancelOrder',
  'authorizer',
  'deployHooks',
  'execution',
  'executionV2',
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(STAGES)('logs you can query (%s)', (stage) => {
  const { api } = stageTemplates[stage];
  const stack = stages[stage].api;
  const groupId = (source: LogSource) => idOf(stage, logGroupOf(stage, source));
  /** A group's name as the template gives it (the execution log's holds the API's id). */
  const expectedName = (source: LogSource) =>
    source === 'execution' || source === 'executionV2'
      ? {
          'Fn::Join': [
            '',
            [
              'API-Gateway-Execution-Logs_',
              ref(idOf(stage, stack.api)),
              source === 'execution' ? '/v1' : '/v2',
            ],
          ],
        }
      : logGroupName(stage, source);

  it('names each log group for the stage, keeps it as long as the stage keeps logs, and lists it in the outputs', () => {
    const retention = stage === 'production' ? 365 : 14;
    for (const source of SOURCES) {
      const [, group] = resources(api, 'AWS::Logs::LogGroup').find(
        ([id]) => id === groupId(source),
      )!;
      expect(group.Properties).toMatchObject({
        LogGroupName: expectedName(source),
        RetentionInDays: retention,
      });
      const outputs = api.findOutputs(LOG_GROUP_OUTPUTS[source]);
      expect(Object.values(outputs).map((o) => (o as { Value: unknown }).Value)).toEqual([
        ref(groupId(source)),
      ]);
    }
    // Every log group of the stack is one of these: none left unnamed, unkept or unlisted.
    expect(
      resources(api, 'AWS::Logs::LogGroup')
        .map(([id]) => id)
        .sort(),
    ).toEqual(SOURCES.map(groupId).sort());
    expect(new Set(SOURCES.map((s) => JSON.stringify(expectedName(s)))).size).toBe(SOURCES.length);
  });

  it("creates API Gateway's execution log group before the stage that writes to it (else API Gateway makes one that never expires)", () => {
    const [[stageId, apiStage]] = resources(api, 'AWS::ApiGateway::Stage') as [[string, Resource]];
    expect(stageId).toBeDefined();
    expect((apiStage as { DependsOn?: string[] }).DependsOn).toContain(groupId('execution'));
    expect(JSON.stringify(apiStage.Properties.MethodSettings)).toContain('"LoggingLevel":"ERROR"');
  });

  it("writes each function's logs to its named group, and the deploy hooks' to theirs", () => {
    const hooks = stack.deployments.hooks;
    for (const hook of [hooks.preTraffic, hooks.postTraffic]) {
      const fn = api.toJSON().Resources[idOf(stage, hook)] as Resource;
      expect(fn.Properties.LoggingConfig).toEqual({ LogGroup: ref(groupId('deployHooks')) });
    }
    for (const name of FUNCTION_NAMES) {
      const fnId = idOf(stage, stack.functions[name]);
      const fn = api.toJSON().Resources[fnId] as Resource;
      expect(fn.Properties.LoggingConfig).toEqual({ LogGroup: ref(groupId(name)) });
    }
  });

  it('saves each query under store-orders/<stage>/, on the log groups it reads', () => {
    const saved = resources(api, 'AWS::Logs::QueryDefinition').map(([, q]) => q.Properties);
    expect(saved.map((q) => q.Name).sort()).toEqual(
      LOG_QUERIES.map((q) => `${queryPrefix(stage)}${q.name}`).sort(),
    );
    for (const query of LOG_QUERIES) {
      const definition = saved.find((q) => q.Name === `${queryPrefix(stage)}${query.name}`)!;
      expect(definition.LogGroupNames).toEqual(query.sources.map((s) => ref(groupId(s))));
      expect(definition.QueryString).toBe(query.query.toString());
    }
  });
});

/** The construct of a stage's log group, by what writes to it. */
function logGroupOf(stage: StageName, source: LogSource): { node: { defaultChild?: unknown } } {
  const stack = stages[stage].api;
  if (source === 'access') return stack.node.findChild('AccessLogs');
  if (source === 'execution') return stack.node.findChild('ExecutionLogs');
  if (source === 'executionV2') return stack.node.findChild('ExecutionLogsV2');
  if (source === 'deployHooks') return stack.deployments.hooks.logs;
  return stack.functions[source].logs;
}

describe('the saved queries', () => {
  /** Every field of the lines the service writes: access log, function lines, Lambda's own. */
  function writtenFields(): Set<string> {
    const access = JSON.parse(renderAccessLog(accessLogTemplate(), {})) as object;
    const lines: Record<string, unknown>[] = [];
    const capture = new Logger('DEBUG', (text) => lines.push(JSON.parse(text) as never));
    capture
      .startInvocation({ functionName: 'f', functionVersion: '7', awsRequestId: 'r' }, 'c')
      .info('line');
    // The refusal and the error-answer lines, as the functions' error handling writes them.
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((text) => {
      lines.push(JSON.parse(String(text)) as never);
      return true;
    });
    toApiError(new RateLimitRefusal('limited', 'key_x', 5));
    out.mockRestore();
    return new Set([...Object.keys(access), ...lines.flatMap((line) => Object.keys(line))]);
  }

  /**
   * The field names a query uses: every identifier outside quotes, functions and keywords; of a
   * nested field (`failure.reason`), the top-level name.
   */
  function fieldsUsed(query: string): string[] {
    const keywords = new Set(
      'fields filter stats sort limit by as and or not asc desc count bin like'.split(' '),
    );
    return [
      ...query
        .replace(/"[^"]*"/g, '')
        .replace(/\b\d+[a-z]?\b/g, '')
        .matchAll(/(?<![@\w.])[a-z_][A-Za-z_]*(?:\.[A-Za-z_]+)*\b(?!\()/g),
    ]
      .map((m) => m[0].split('.')[0]!)
      .filter((word) => !keywords.has(word));
  }

  it('use only fields the access log and the functions write (or Lambda and Logs Insights give)', async () => {
    const written = writtenFields();
    // The error-answer line of a function answering an error.
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((text) => {
      for (const key of Object.keys(JSON.parse(String(text)) as object)) written.add(key);
      return true;
    });
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((text) => {
      for (const key of Object.keys(JSON.parse(String(text)) as object)) written.add(key);
      return true;
    });
    await middy(() => {
      throw new ApiError('ORDER_NOT_FOUND');
    })
      .use(httpErrors())({}, {} as never)
      .catch(() => undefined);
    // A failure's line: what request-by-id shows of it (failure.kind, failure.reason).
    await middy(() => {
      throw new DependencyFailure('permanent', 'orders table', 'missing-table');
    })
      .use(httpErrors())({}, {} as never)
      .catch(() => undefined);
    out.mockRestore();
    err.mockRestore();
    for (const field of [
      'code',
      'status',
      'keyId',
      'outcome',
      'failure',
      FUNCTION_LOG_FIELDS.correlationId,
      FUNCTION_LOG_FIELDS.functionVersion,
    ])
      expect(written).toContain(field);
    // What Logs Insights derives itself: the query's own names for its results.
    const derived = new Set(['answers', 'refusals']);
    for (const { name, query } of LOG_QUERIES) {
      for (const field of fieldsUsed(query.toString())) {
        if (!derived.has(field)) expect(written, `${name}: ${field}`).toContain(field);
      }
    }
  });

  it("find a request by the id its client got, in the access log, the function lines and API Gateway's execution log, with what went wrong", () => {
    const byId = LOG_QUERIES.find((q) => q.name === 'request-by-id')!;
    const text = byId.query.toString();
    expect(text).toContain(`requestId = "${REQUEST_ID_PLACEHOLDER}"`);
    expect(text).toContain(`${FUNCTION_LOG_FIELDS.correlationId} = "${REQUEST_ID_PLACEHOLDER}"`);
    // API Gateway starts each execution-log message with the request id in parentheses.
    expect(text).toContain(`@message like "(${REQUEST_ID_PLACEHOLDER})"`);
    const fields = /^fields (.*)$/m.exec(text)![1]!.split(', ');
    expect(fields).toEqual(
      expect.arrayContaining([
        'errorMessage',
        'message',
        'code',
        'failure.kind',
        'failure.reason',
        'function_version',
      ]),
    );
    expect(byId.sources).toEqual([
      'access',
      'listOrders',
      'listOrderPages',
      'cancelOrder',
      'execution',
      'executionV2',
    ]);
  });

  it('count every error answer of a function by its code: one line each, whatever the error', async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = (text: unknown) => {
      lines.push(JSON.parse(String(text)) as never);
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    const handler = middy((event: { fail: unknown }) => {
      throw event.fail;
    }).use(httpErrors());
    const failures = [
      new ApiError('NOT_ACCEPTABLE'),
      new InvalidOrderId('x'),
      new RateLimitRefusal('banned', 'key_x', 30),
      new DependencyFailure('transient', 'orders table', 'timeout'),
      new Error('a bug'),
    ];
    const statuses = [];
    for (const fail of failures) {
      statuses.push(((await handler({ fail }, {} as never)) as { statusCode: number }).statusCode);
    }
    const counted = lines.filter((l) => l.code !== undefined);
    expect(counted.map((l) => [l.code, l.status])).toEqual([
      ['NOT_ACCEPTABLE', 406],
      ['INVALID_ORDER_ID', 400],
      ['API_KEY_TEMPORARILY_BANNED', 429],
      ['SERVICE_UNAVAILABLE', 503],
      ['INTERNAL_ERROR', 500],
    ]);
    expect(counted.map((l) => l.status)).toEqual(statuses);
    expect(counted.map((l) => l.message)).toEqual([
      ERROR_ANSWER_LOG,
      ERROR_ANSWER_LOG,
      RATE_LIMIT_REFUSAL_LOG.message,
      'Dependency unavailable: answering 503',
      'Request failed: answering 500',
    ]);
  });

  it('are each shown in docs/operations.md with the command that runs it', () => {
    const text = docs('operations.md');
    for (const { name } of LOG_QUERIES) expect(text, name).toContain(`${name}`);
    const prefixes = [...text.matchAll(/--query-definition-name-prefix\s+([\w/.-]+)/g)].map(
      (m) => m[1]!,
    );
    expect(prefixes.length).toBeGreaterThan(0);
    const names = STAGES.flatMap((stage) =>
      LOG_QUERIES.map((q) => `${queryPrefix(stage)}${q.name}`),
    );
    for (const prefix of prefixes) {
      const plain = prefix.replace(/["']/g, '').replace(/\$\{?\w+\}?/g, 'production');
      expect(
        names.some((n) => n.startsWith(plain)),
        prefix,
      ).toBe(true);
    }
  });
});

describe.each(STAGES)('safe deployments (%s)', (stage) => {
  const { api } = stageTemplates[stage];
  const stack = stages[stage].api;
  const config = stageConfig(stage, () => undefined, {});
  const aliasId = (name: FunctionName) => idOf(stage, stack.functions[name].live);

  it("give each function one alias, live, on the function's current version, or on the version a rollback pins (the stack parameter <Function>LiveVersion)", () => {
    const aliases = resources(api, 'AWS::Lambda::Alias');
    expect(aliases).toHaveLength(FUNCTION_NAMES.length);
    const json = api.toJSON() as {
      Parameters: Record<string, Record<string, unknown>>;
      Conditions: Record<string, unknown>;
    };
    for (const name of FUNCTION_NAMES) {
      const fn = stack.functions[name];
      const pin = `${name.charAt(0).toUpperCase()}${name.slice(1)}LiveVersion`;
      const pinned = `${name.charAt(0).toUpperCase()}${name.slice(1)}LivePinned`;
      const alias = api.toJSON().Resources[aliasId(name)] as Resource;
      expect(alias.Properties).toEqual({
        FunctionName: ref(idOf(stage, fn)),
        FunctionVersion: {
          'Fn::If': [pinned, ref(pin), { 'Fn::GetAtt': [versionId(stage, fn), 'Version'] }],
        },
        Name: LIVE_ALIAS,
      });
      // Unpinned unless given: a deploy without it moves live to its own version.
      expect(json.Parameters[pin]).toMatchObject({
        Type: 'String',
        Default: '',
        AllowedPattern: '^[0-9]*$',
      });
      expect(json.Conditions[pinned]).toEqual({
        'Fn::Not': [{ 'Fn::Equals': [ref(pin), ''] }],
      });
    }
  });

  it('point every API method integration and the authorizer at an alias, never at a function', () => {
    const aliasIds = new Set(FUNCTION_NAMES.map(aliasId));
    const functionIds = new Set(FUNCTION_NAMES.map((n) => idOf(stage, stack.functions[n])));
    const targets = (value: unknown) =>
      [...JSON.stringify(value).matchAll(/"(?:Ref|Fn::GetAtt)":\[?"([^"]+)"/g)].map((m) => m[1]!);
    const methods = resources(api, 'AWS::ApiGateway::Method').filter(
      ([, m]) => (m.Properties.Integration as { Type: string }).Type === 'AWS_PROXY',
    );
    expect(methods.length).toBe(2);
    // Each stage (version) of the API, by name, with its stage variables.
    const stageVariables = Object.fromEntries(
      resources(api, 'AWS::ApiGateway::Stage').map(([, st]) => [
        st.Properties.StageName as string,
        (st.Properties.Variables ?? {}) as Record<string, unknown>,
      ]),
    );
    expect(Object.keys(stageVariables).sort()).toEqual([...API_STAGES]);
    for (const [id, method] of methods) {
      const uri = (method.Properties.Integration as { Uri: unknown }).Uri;
      const variable = /\$\{stageVariables\.(\w+)\}/.exec(JSON.stringify(uri))?.[1];
      // An alias named in the URI, or in a stage variable the URI names, in every stage.
      const named = variable
        ? API_STAGES.map((apiStage) => targets(stageVariables[apiStage]![variable]))
        : [targets(uri)];
      for (const found of named) {
        const fnTargets = found.filter((t) => aliasIds.has(t) || functionIds.has(t));
        expect(fnTargets, id).toHaveLength(1);
        expect(aliasIds.has(fnTargets[0]!), id).toBe(true);
      }
    }
    // The lists stream through their aliases: the streaming invocation path, and in each stage
    // the alias of its version's list (v1: listOrders, v2: listOrderPages).
    const [, list] = methods.find(([, m]) => m.Properties.HttpMethod === 'GET')!;
    const listUri = JSON.stringify((list.Properties.Integration as { Uri: unknown }).Uri);
    expect(listUri).toContain('/response-streaming-invocations');
    const listVariable = /\$\{stageVariables\.(\w+)\}/.exec(listUri)![1]!;
    expect(stageVariables.v1![listVariable]).toEqual({ Ref: aliasId('listOrders') });
    expect(stageVariables.v2![listVariable]).toEqual({ Ref: aliasId('listOrderPages') });
    const [[, authorizer]] = resources(api, 'AWS::ApiGateway::Authorizer') as [[string, Resource]];
    expect(targets(authorizer.Properties.AuthorizerUri)).toContain(aliasId('authorizer'));
    expect(targets(authorizer.Properties.AuthorizerUri).some((t) => functionIds.has(t))).toBe(
      false,
    );
    // API Gateway may invoke the aliases, and nothing else.
    const fromApi = resources(api, 'AWS::Lambda::Permission').filter(
      ([, p]) => p.Properties.Principal === 'apigateway.amazonaws.com',
    );
    expect(fromApi.length).toBeGreaterThan(0);
    for (const [, permission] of fromApi) {
      expect(aliasIds.has(targets(permission.Properties.FunctionName)[0]!)).toBe(true);
    }
  });

  const hooks = stack.deployments.hooks;
  const hookIds = { pre: idOf(stage, hooks.preTraffic), post: idOf(stage, hooks.postTraffic) };
  const resource = (id: string) => api.toJSON().Resources[id] as Resource;
  /** The statements of the hooks' role's inline policies. */
  const hookStatements = () =>
    resources(api, 'AWS::IAM::Policy')
      .filter(
        ([, p]) =>
          JSON.stringify(p.Properties.Roles) === JSON.stringify([ref(idOf(stage, hooks.role))]),
      )
      .flatMap(
        ([, p]) =>
          (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement,
      );

  it(`deploy each function with CodeDeploy, ${stage === 'production' ? 'a canary first' : 'all at once'}, called before any traffic moves and watched after the last shift, rolling back on failure, on a stop and on alarm`, () => {
    const configName = {
      production: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      staging: 'CodeDeployDefault.LambdaAllAtOnce',
    }[stage];
    expect(config.deployment.trafficShift).toBe(
      stage === 'production' ? 'CANARY_10PERCENT_5MINUTES' : 'ALL_AT_ONCE',
    );
    const [[applicationId, application]] = resources(api, 'AWS::CodeDeploy::Application') as [
      [string, Resource],
    ];
    expect(application.Properties).toMatchObject({
      ApplicationName: deploymentApplicationName(stage),
      ComputePlatform: 'Lambda',
    });
    expect(resources(api, 'AWS::CodeDeploy::DeploymentGroup')).toHaveLength(FUNCTION_NAMES.length);
    for (const name of FUNCTION_NAMES) {
      const group = stack.deployments.groups[name];
      const groupId = idOf(stage, group);
      const props = resource(groupId).Properties;
      const pinned = `${name.charAt(0).toUpperCase()}${name.slice(1)}LivePinned`;
      expect(props).toMatchObject({
        ApplicationName: ref(applicationId),
        DeploymentGroupName: name,
        // A rollback (a pinned version) moves all at once.
        DeploymentConfigName:
          stage === 'production'
            ? { 'Fn::If': [pinned, 'CodeDeployDefault.LambdaAllAtOnce', configName] }
            : configName,
        DeploymentStyle: { DeploymentOption: 'WITH_TRAFFIC_CONTROL', DeploymentType: 'BLUE_GREEN' },
        AutoRollbackConfiguration: {
          Enabled: true,
          Events: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_REQUEST', 'DEPLOYMENT_STOP_ON_ALARM'],
        },
        AlarmConfiguration: { Enabled: true },
      });
      // The hooks know the new version (they are updated first), then the alias moves, only
      // through its deployment group, between the two hooks.
      expect((resource(aliasId(name)) as { DependsOn?: string[] }).DependsOn).toEqual(
        expect.arrayContaining([hookIds.pre, hookIds.post]),
      );
      expect(resource(aliasId(name)).UpdatePolicy).toEqual({
        CodeDeployLambdaAliasUpdate: {
          ApplicationName: ref(applicationId),
          DeploymentGroupName: ref(groupId),
          BeforeAllowTrafficHook: ref(hookIds.pre),
          AfterAllowTrafficHook: ref(hookIds.post),
        },
      });
    }
  });

  it("judge, during each deploy's shift, the new version (the one live moves to) against the versions beside it, on its failures and its latency", () => {
    const alarms = Object.fromEntries(resources(api, 'AWS::CloudWatch::Alarm'));
    for (const name of FUNCTION_NAMES) {
      const fn = stack.functions[name];
      const group = resource(idOf(stage, stack.deployments.groups[name])).Properties as {
        AlarmConfiguration: { Alarms: { Name: { Ref: string } }[] };
      };
      const watched = group.AlarmConfiguration.Alarms.map((a) => alarms[a.Name.Ref]!.Properties);
      const pascal = `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
      expect(watched.map((a) => String(a.AlarmName).replace(`store-orders-${stage}-`, ''))).toEqual(
        [`${pascal}NewVersionFailures`, `${pascal}NewVersionLatency`],
      );
      // The version live moves to: this deploy's, or the one a rollback pins.
      const version = {
        'Fn::If': [
          `${pascal}LivePinned`,
          ref(`${pascal}LiveVersion`),
          { 'Fn::GetAtt': [versionId(stage, fn), 'Version'] },
        ],
      };
      for (const alarm of watched) {
        const metrics = (
          alarm.Metrics as {
            MetricStat?: {
              Metric: { Namespace: string; Dimensions: { Name: string; Value: unknown }[] };
            };
          }[]
        )
          .filter((m) => m.MetricStat)
          .map((m) => m.MetricStat!.Metric);
        expect(metrics.length).toBeGreaterThanOrEqual(4);
        const versions = metrics.flatMap((m) =>
          m.Dimensions.filter((d) => d.Name === 'ExecutedVersion' || d.Name === 'FunctionVersion'),
        );
        // Half of them the new version's, half all versions' (the old one's is their difference).
        expect(versions.length * 2).toBe(metrics.length);
        for (const dimension of versions) expect(dimension.Value).toEqual(version);
        expect(alarm).toMatchObject({ EvaluationPeriods: 1 });
      }
    }
  });

  it("give the hooks what they act on: each function (never a version: CodeDeploy's deployment names it), the alarms, the bake, how many versions to keep, the deploy check's tables, the metrics' namespace", () => {
    const pre = resource(hookIds.pre).Properties;
    const post = resource(hookIds.post).Properties;
    expect(pre).toMatchObject({ Handler: 'index.preTraffic', Runtime: 'nodejs24.x' });
    expect(post).toMatchObject({
      Handler: 'index.postTraffic',
      // The watch (the bake, and longer while the figures to pass the version are not in) and
      // the pruning in one invocation: Lambda's longest.
      Timeout: 900,
    });
    expect(config.deployment.bakeMinutes * 60 * 1000 + WATCH_RESERVE_MS).toBeLessThan(900_000);
    const env = (post.Environment as { Variables: Record<string, unknown> }).Variables;
    expect((pre.Environment as { Variables: unknown }).Variables).toEqual(env);
    expect(env).toMatchObject({
      [HOOK_ENV.bakeSeconds]: String(config.deployment.bakeMinutes * 60),
      [HOOK_ENV.watchProbe]: String(stage === 'staging'),
      [HOOK_ENV.versionsKept]: String(config.deployment.versionsKept),
      [HOOK_ENV.ignoreAlarms]: 'false',
      [HOOK_ENV.metricsNamespace]: `StoreOrders/${stage}`,
    });
    // What the hooks read from it, as CloudFormation resolves it on a deploy: each function's
    // name, its deployment alarms by name, its provisioning; the tables.
    const resolve = (value: unknown): string => {
      if (typeof value === 'string') return value;
      const token = value as Record<string, unknown>;
      if ('Fn::Join' in token) {
        const [separator, parts] = token['Fn::Join'] as [string, unknown[]];
        return parts.map(resolve).join(separator);
      }
      if ('Fn::ImportValue' in token) return `imported-${JSON.stringify(token['Fn::ImportValue'])}`;
      expect(Object.keys(token)).toEqual(['Ref']);
      const target = resource(token.Ref as string);
      return target.Type === 'AWS::CloudWatch::Alarm'
        ? String(target.Properties.AlarmName)
        : `deployed-${String(token.Ref)}`;
    };
    const settings = settingsFromEnv(
      Object.fromEntries(Object.entries(env).map(([name, value]) => [name, resolve(value)])),
    );
    const pascal = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
    expect(settings).toEqual({
      targets: Object.fromEntries(
        FUNCTION_NAMES.map((name) => [
          name,
          {
            functionName: `deployed-${idOf(stage, stack.functions[name])}`,
            // The alarms its deployment group rolls back on.
            alarms: (
              resource(idOf(stage, stack.deployments.groups[name])).Properties as {
                AlarmConfiguration: { Alarms: { Name: { Ref: string } }[] };
              }
            ).AlarmConfiguration.Alarms.map((a) =>
              String(resource(a.Name.Ref).Properties.AlarmName),
            ),
            provisioned: config.concurrency.provisioned[name] > 0,
          },
        ]),
      ),
      bakeSeconds: config.deployment.bakeMinutes * 60,
      watchProbe: config.deployment.watchProbe,
      versionsKept: config.deployment.versionsKept,
      ignoreAlarms: config.deployment.ignoreAlarms,
      ordersTable: expect.stringMatching(/^imported-.*Orders/),
      apiKeysTable: expect.stringMatching(/^imported-.*ApiKeys/),
      metricsNamespace: `StoreOrders/${stage}`,
    });
    for (const name of FUNCTION_NAMES) {
      expect(settings.targets[name].alarms).toContain(
        `store-orders-${stage}-${pascal(name)}NewVersionFailures`,
      );
    }
    expect(config.deployment.bakeMinutes).toBe(stage === 'production' ? 10 : 2);
  });

  it('keep every version a deploy replaces, for a rollback (the post-traffic hook prunes them)', () => {
    const versions = resources(api, 'AWS::Lambda::Version');
    expect(versions).toHaveLength(FUNCTION_NAMES.length);
    for (const [, version] of versions) {
      expect(version.DeletionPolicy).toBe('Retain');
      expect(version.UpdateReplacePolicy).toBe('Retain');
    }
  });

  const rules = () => resources(api, 'AWS::Events::Rule').map(([, rule]) => rule.Properties);

  it('resume the scaling of provisioned concurrency after a failed or stopped deployment (EventBridge to the post-traffic hook)', () => {
    const rule = rules().find((r) => JSON.stringify(r.EventPattern).includes('aws.codedeploy'))!;
    expect(rule.EventPattern).toEqual({
      source: ['aws.codedeploy'],
      'detail-type': ['CodeDeploy Deployment State-change Notification'],
      detail: { application: [expect.anything()], state: ['FAILURE', 'STOP'] },
    });
    expect(JSON.stringify(rule.Targets)).toContain(hookIds.post);
  });

  it("hand the post-traffic hook this stack's rolled-back updates (it publishes each function again, so that the same deploy can be retried)", () => {
    const rule = rules().find((r) =>
      JSON.stringify(r.EventPattern).includes('aws.cloudformation'),
    )!;
    expect(rule.EventPattern).toEqual({
      source: ['aws.cloudformation'],
      'detail-type': ['CloudFormation Stack Status Change'],
      detail: {
        'stack-id': [{ Ref: 'AWS::StackId' }],
        'status-details': { status: ['UPDATE_ROLLBACK_COMPLETE'] },
      },
    });
    expect(JSON.stringify(rule.Targets)).toContain(hookIds.post);
  });

  it("let the hooks invoke and delete any version of each function by a pattern granted once, never a version's own grant (no deploy's grant races its probe)", () => {
    const statements = hookStatements();
    const text = JSON.stringify(statements);
    // No statement names a version (its ARN changes with every deploy).
    expect(text).not.toMatch(/CurrentVersion/);
    const actionsOn = (resource: unknown) =>
      statements
        .filter((st) => JSON.stringify(st.Resource).includes(JSON.stringify(resource)))
        .flatMap((st) => [st.Action].flat());
    for (const name of FUNCTION_NAMES) {
      const arn = { 'Fn::GetAtt': [idOf(stage, stack.functions[name]), 'Arn'] };
      expect(actionsOn({ 'Fn::Join': ['', [arn, ':*']] })).toEqual(
        expect.arrayContaining(['lambda:InvokeFunction', 'lambda:DeleteFunction']),
      );
      expect(actionsOn(arn)).toEqual(
        expect.arrayContaining([
          'lambda:PublishVersion',
          'lambda:CreateAlias',
          'lambda:UpdateAlias',
        ]),
      );
    }
  });

  it("let the hooks write the orders table only in the deploy check's partitions, read the do-not-ship mark but not write it, and read this stack's own record and the alarms they watch", () => {
    const statements = hookStatements();
    // No managed policy beside it (an inline policy too large would overflow into one).
    expect(resources(api, 'AWS::IAM::ManagedPolicy')).toEqual([]);
    const on = (action: string) => statements.filter((st) => [st.Action].flat().includes(action));
    const orderWrites = statements.filter(
      (st) =>
        [st.Action].flat().some((a) => String(a).startsWith('dynamodb:')) &&
        JSON.stringify(st.Resource).includes('Orders'),
    );
    expect(orderWrites).toHaveLength(1);
    expect(orderWrites[0]).toMatchObject({
      Action: ['dynamodb:BatchWriteItem', 'dynamodb:UpdateItem'],
      Condition: {
        'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...DEPLOY_CHECK_LEADING_KEYS] },
      },
    });
    // The deploy check's order and its version items (lib/dynamodb/tables.ts), nothing else.
    expect(DEPLOY_CHECK_LEADING_KEYS).toEqual([
      String(DEPLOY_CHECK_SHARD),
      String(DEPLOY_CHECK_PARTITIONS.versionKey(0).shard),
    ]);
    expect(JSON.stringify(on('lambda:GetAlias'))).toContain(`:${DO_NOT_SHIP_ALIAS}`);
    expect(on('lambda:GetAlias')).toHaveLength(1);
    for (const write of ['lambda:UpdateAlias', 'lambda:CreateAlias', 'lambda:DeleteAlias']) {
      expect(JSON.stringify(on(write))).not.toContain(DO_NOT_SHIP_ALIAS);
    }
    expect(on('cloudformation:ListStackResources')).toEqual([
      expect.objectContaining({
        Action: ['cloudformation:DescribeStacks', 'cloudformation:ListStackResources'],
        Resource: { Ref: 'AWS::StackId' },
      }),
    ]);
    // GetMetricData takes no resource and no condition: with X-Ray's writes (tracing) and the
    // scaling's registration, the only grants on every resource.
    const everywhere = statements.filter((st) => st.Resource === '*');
    expect(everywhere.flatMap((st) => [st.Action].flat()).sort()).toEqual(
      [
        'cloudwatch:GetMetricData',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
        ...(Object.values(config.concurrency.provisioned).some((n) => n > 0)
          ? ['application-autoscaling:RegisterScalableTarget']
          : []),
      ].sort(),
    );
    expect(JSON.stringify(on('cloudwatch:DescribeAlarms'))).not.toContain('"*"');
  });

  it('output the CodeDeploy application that docs/rollback.md watches', () => {
    const [output] = Object.values(api.findOutputs(STACK_OUTPUTS.deploymentApplication));
    expect(output).toBeDefined();
    const text = docs('rollback.md');
    for (const [, value] of text.matchAll(/--application-name\s+(\S+)/g)) {
      expect(STAGES.map(deploymentApplicationName)).toContain(value);
    }
    for (const [, value] of text.matchAll(/--deployment-group-name\s+(\S+)/g)) {
      expect(FUNCTION_NAMES as readonly string[]).toContain(value);
    }
    expect(text).toMatch(/aws deploy stop-deployment .*--auto-rollback-enabled/);
  });
});

describe('what cdk destroy deletes and keeps', () => {
  /** `kept` or `deleted` for each resource type of a stage (one answer per type). */
  function fates(stage: StageName): Record<string, 'kept' | 'deleted'> {
    const fate: Record<string, 'kept' | 'deleted'> = {};
    for (const template of Object.values(stageTemplates[stage])) {
      for (const resource of Object.values(
        template.toJSON().Resources as Record<string, Resource>,
      )) {
        const kept = resource.DeletionPolicy === 'Retain';
        // A replacement keeps the old resource exactly when a deletion does.
        expect(resource.UpdateReplacePolicy ?? 'Delete', resource.Type).toBe(
          resource.DeletionPolicy ?? 'Delete',
        );
        const now = kept ? 'kept' : 'deleted';
        expect(fate[resource.Type] ?? now, `${stage} ${resource.Type}`).toBe(now);
        fate[resource.Type] = now;
      }
    }
    return fate;
  }

  it("keeps the tables and the logs of production, deletes everything else of staging; function versions are left to their function's deletion", () => {
    const kept = (stage: StageName) =>
      Object.entries(fates(stage))
        .filter(([, f]) => f === 'kept')
        .map(([t]) => t)
        .sort();
    expect(kept('production')).toEqual([
      'AWS::DynamoDB::GlobalTable',
      'AWS::Lambda::Version',
      'AWS::Logs::LogGroup',
    ]);
    expect(kept('staging')).toEqual(['AWS::Lambda::Version']);
  });

  it('is the table docs/operations.md gives, type by type and stage by stage', () => {
    const rows = Object.fromEntries(
      [
        ...docs('operations.md').matchAll(
          /^\| `(AWS::[\w:]+)`[^|]*\| (\w+)[^|]*\| (\w+)[^|]*\|$/gm,
        ),
      ].map((m) => [m[1]!, { staging: m[2]!, production: m[3]! }]),
    );
    const staging = fates('staging');
    const production = fates('production');
    expect(Object.keys(rows).sort()).toEqual(Object.keys(production).sort());
    for (const type of Object.keys(production)) {
      // A type staging has none of (provisioned concurrency's scaling, at 0 there): `none`.
      expect(rows[type], type).toEqual({
        staging: staging[type] ?? 'none',
        production: production[type],
      });
    }
  });
});

/**
 * A stand-in for the AWS CLI: it logs each call's arguments and answers the calls the runbooks
 * make from the synthesized production stage (query definitions, CodeDeploy names, the stacks'
 * outputs, the functions' versions, the access log, a restore); any other call, or a name the
 * stage does not have, fails as the CLI would.
 */
const AWS_STAND_IN = `
const [service, command] = args;
const call = service + ' ' + command;
// What CloudFormation records of live, where the alias is, the pin: kept between runs.
const stateFile = process.env.AWS_STAND_IN_FIXTURE + '.state';
const state = () => fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) : { ...fixture.initialState };
const save = (s) => fs.writeFileSync(stateFile, JSON.stringify(s));
const fn = () => { if (![fixture.functionName, ...fixture.otherFunctionNames].includes(option('--function-name'))) fail('no function ' + option('--function-name')); };
if (call === 'logs describe-query-definitions') {
  const query = fixture.queries.find((q) => q.name === option('--query-definition-name-prefix'));
  if (!query) fail('no query definition ' + option('--query-definition-name-prefix'));
  const expression = option('--query');
  if (expression === 'queryDefinitions[0].logGroupNames') console.log(query.logGroups.join('\\t'));
  else if (expression === 'queryDefinitions[0].queryString') console.log(query.queryString);
  else fail('stand-in: unknown --query ' + expression);
} else if (call === 'logs start-query') {
  console.log('q-1');
} else if (call === 'logs get-query-results') {
  console.log('{"status":"Complete","results":[]}');
} else if (call === 'logs filter-log-events') {
  if (option('--log-group-name') !== fixture.accessLogGroup) fail('no log group ' + option('--log-group-name'));
  const line = fixture.accessLines.find((l) => option('--filter-pattern') === '{ $.requestId = "' + JSON.parse(l).requestId + '" }');
  if (option('--query') !== 'events[0].message') fail('stand-in: unknown --query ' + option('--query'));
  console.log(line ?? 'None');
} else if (call === 'deploy list-deployments') {
  if (option('--application-name') !== fixture.application) fail('no application');
  if (!fixture.groups.includes(option('--deployment-group-name'))) fail('no deployment group');
  console.log('["d-EXAMPLE111"]');
} else if (call === 'deploy get-deployment' || call === 'deploy stop-deployment') {
  if (!/^d-[A-Z0-9]+$/.test(option('--deployment-id'))) fail('bad deployment id');
  console.log('{}');
} else if (call === 'cloudformation describe-stacks' && option('--query') === 'Stacks[0].StackStatus') {
  if (option('--stack-name') !== fixture.apiStack) fail('Stack with id ' + option('--stack-name') + ' does not exist');
  console.log(state().stackStatus ?? 'UPDATE_COMPLETE');
} else if (call === 'cloudformation describe-stacks') {
  const outputs = fixture.outputs[option('--stack-name')];
  if (!outputs) fail('Stack with id ' + option('--stack-name') + ' does not exist');
  const key = /OutputKey=='(\\w+)'/.exec(option('--query') ?? '')?.[1];
  if (!(key in outputs)) fail('stand-in: no output ' + key);
  console.log(outputs[key]);
} else if (call === 'lambda get-alias' && option('--name') === fixture.doNotShipAlias) {
  fn();
  const mark = state().mark;
  if (mark === undefined) fail('ResourceNotFoundException: Alias not found');
  if (option('--query') !== '[FunctionVersion,Description]') fail('stand-in: unknown --query ' + option('--query'));
  console.log(mark.version + '\t' + mark.description);
} else if (call === 'lambda get-alias') {
  fn();
  const name = option('--name');
  if (name !== fixture.alias && name !== fixture.rollbackAlias) fail('ResourceNotFoundException: no alias ' + name);
  const version = name === fixture.alias ? state().alias : fixture.rollbackVersion;
  console.log(option('--query') === 'FunctionVersion' ? version : '{}');
} else if ((call === 'lambda create-alias' || call === 'lambda update-alias' || call === 'lambda delete-alias') && option('--name') === fixture.doNotShipAlias) {
  // The do-not-ship mark: an alias of the function's (the pre-traffic hook refuses its version).
  fn();
  const s = state();
  if (call === 'lambda create-alias' && s.mark) fail('ResourceConflictException: Alias already exists');
  if (call !== 'lambda create-alias' && !s.mark) fail('ResourceNotFoundException: Alias not found');
  if (call === 'lambda delete-alias') delete s.mark;
  else {
    if (!fixture.versions.includes(option('--function-version'))) fail('no version ' + option('--function-version'));
    s.mark = { version: option('--function-version'), description: option('--description') ?? '' };
  }
  save(s);
  if (call !== 'lambda delete-alias') console.log('{}');
} else if (call === 'lambda get-function-configuration') {
  fn();
  if (option('--query') !== 'CodeSha256') fail('stand-in: unknown --query ' + option('--query'));
  console.log(fixture.codeSha256);
} else if (call === 'lambda publish-version') {
  fn();
  const sha = option('--code-sha256');
  if (sha !== undefined && sha !== fixture.codeSha256) fail('InvalidParameterValueException: CodeSHA256 (' + sha + ') is different from current CodeSHA256 in $LATEST');
  console.log('{"Version":"11"}');
} else if (call === 'cloudformation update-stack') {
  // CloudFormation moving live through CodeDeploy: the deployment's AppSpec names the version
  // CloudFormation recorded as the alias's; an alias moved by hand is not on it (reported
  // against SAM: such deployments fail; this stand-in refuses them).
  if (option('--stack-name') !== fixture.apiStack) fail('Stack ' + option('--stack-name') + ' does not exist');
  if (!args.includes('--use-previous-template') && !args.includes('--template-body')) fail('a template is required');
  if (option('--capabilities') !== 'CAPABILITY_IAM') fail('Requires capabilities : [CAPABILITY_IAM]');
  const given = args.slice(args.indexOf('--parameters') + 1).filter((a) => a.startsWith('ParameterKey='));
  const params = Object.fromEntries(given.map((p) => {
    const fields = Object.fromEntries(p.split(',').map((kv) => kv.split('=')));
    return [fields.ParameterKey, fields.UsePreviousValue === 'true' ? { previous: true } : { value: fields.ParameterValue ?? '' }];
  }));
  if (given.length !== Object.keys(params).length) fail('a parameter given twice');
  for (const key of fixture.parameters) if (!(key in params)) fail('Parameters: [' + key + '] must have values');
  for (const key of Object.keys(params)) if (!fixture.parameters.includes(key)) fail('Parameters: [' + key + '] do not exist in the template');
  const s = state();
  const pin = params[fixture.pinParameter];
  const pinned = pin.previous ? s.pin : pin.value;
  // A new template names the version of its code (template-<version>.json here).
  const templateVersion = /template-(\\d+)\\.json$/.exec(option('--template-body') ?? '')?.[1] ?? s.templateVersion;
  const target = pinned !== '' ? pinned : templateVersion;
  if (target !== s.record) {
    if (s.alias !== s.record) fail("UPDATE_ROLLBACK_COMPLETE: the deployment failed: alias live is on version " + s.alias + ", the AppSpec's CurrentVersion is " + s.record);
    // The pre-traffic hook refuses a version marked do-not-ship (functions/deploy-hooks/do-not-ship.ts).
    if (s.mark && s.mark.version === target) fail('UPDATE_ROLLBACK_COMPLETE: Pre-traffic check failed: the new version is marked do-not-ship (version ' + target + ')');
    s.alias = target;
    s.record = target;
  }
  s.pin = pinned;
  save(s);
  console.log('{"StackId":"arn:aws:cloudformation:eu-west-1:123456789012:stack/Production-Api/1"}');
} else if (call === 'cloudformation wait') {
  if (args[2] !== 'stack-update-complete' || option('--stack-name') !== fixture.apiStack) fail('stand-in: unknown wait');
} else if (call === 'lambda list-versions-by-function') {
  fn();
  if (option('--query') !== 'Versions[].Version') fail('stand-in: unknown --query ' + option('--query'));
  console.log(['$LATEST', ...fixture.versions].join('\\t'));
} else if (call === 'lambda update-alias') {
  fn();
  if (option('--name') !== fixture.alias) fail('no alias ' + option('--name'));
  if (!fixture.versions.includes(option('--function-version'))) fail('no version ' + option('--function-version'));
  const s = state();
  s.alias = option('--function-version');
  save(s);
  console.log('{}');
} else if (call === 'lambda delete-provisioned-concurrency-config') {
  fn();
  if (option('--qualifier') !== fixture.alias) fail('no provisioned concurrency on ' + option('--qualifier'));
} else if (call === 'apigateway flush-stage-authorizers-cache') {
  if (option('--rest-api-id') !== fixture.restApiId) fail('Invalid API identifier specified');
  if (!fixture.apiStages.includes(option('--stage-name'))) fail('Invalid stage identifier specified');
} else if (call === 'sns list-subscriptions-by-topic') {
  if (option('--topic-arn') !== fixture.alarmTopic) fail('NotFound: Topic does not exist');
  if (option('--query') !== 'Subscriptions[].[Endpoint,SubscriptionArn]') fail('stand-in: unknown --query ' + option('--query'));
  console.log('oncall@example.com\\tPendingConfirmation');
} else if (call === 'logs describe-log-groups') {
  const prefix = option('--log-group-name-prefix');
  if (option('--query') !== 'logGroups[].logGroupName') fail('stand-in: unknown --query ' + option('--query'));
  console.log(fixture.logGroups.filter((name) => name.startsWith(prefix)).join('\\t'));
} else if (call === 'logs delete-log-group') {
  if (!fixture.logGroups.includes(option('--log-group-name'))) fail('ResourceNotFoundException: ' + option('--log-group-name'));
} else if (call === 'dynamodb restore-table-to-point-in-time') {
  if (option('--source-table-name') !== fixture.ordersTable) fail('no table ' + option('--source-table-name'));
  fs.writeFileSync(process.env.AWS_STAND_IN_LOG + '.polls', '0');
  console.log('{}');
} else if (call === 'dynamodb describe-table') {
  if (option('--table-name') !== fixture.ordersTable + '-restored') fail('no table ' + option('--table-name'));
  // CREATING for the first three reads (a restore takes long), then ACTIVE.
  const polls = Number(fs.readFileSync(process.env.AWS_STAND_IN_LOG + '.polls', 'utf8')) + 1;
  fs.writeFileSync(process.env.AWS_STAND_IN_LOG + '.polls', String(polls));
  console.log(polls > 3 ? 'ACTIVE' : 'CREATING');
} else if (call === 'dynamodb delete-table') {
  if (option('--table-name') !== fixture.ordersTable + '-restored') fail('no table ' + option('--table-name'));
  console.log('{}');
} else fail('stand-in: unknown call ' + call);
`;

describe('the runbooks, run with a stand-in AWS CLI against the synthesized production stage', () => {
  const { api } = stageTemplates.production;
  // A name holding the API's id (the execution log's) as a deployed stack would have it.
  const named = (name: unknown) =>
    typeof name === 'string'
      ? name
      : executionLogGroupName(
          STAND_IN_REST_API_ID,
          JSON.stringify(name).includes('/v2') ? 'v2' : 'v1',
        );
  const groupNames = Object.fromEntries(
    resources(api, 'AWS::Logs::LogGroup').map(([id, g]) => [id, named(g.Properties.LogGroupName)]),
  );
  const standIn = standInAws(AWS_STAND_IN, {
    queries: resources(api, 'AWS::Logs::QueryDefinition').map(([, q]) => ({
      name: q.Properties.Name,
      queryString: q.Properties.QueryString,
      logGroups: (q.Properties.LogGroupNames as { Ref: string }[]).map((g) => groupNames[g.Ref]),
    })),
    application: deploymentApplicationName('production'),
    groups: resources(api, 'AWS::CodeDeploy::DeploymentGroup').map(
      ([, g]) => g.Properties.DeploymentGroupName,
    ),
    alias: LIVE_ALIAS,
    outputs: {
      [stages.production.api.stackName]: outputsOf(api, {
        [FUNCTION_OUTPUTS.cancelOrder]: FUNCTION_NAME,
        [STACK_OUTPUTS.restApiId]: STAND_IN_REST_API_ID,
        AlarmTopicArn: ALARM_TOPIC,
      }),
      [stages.production.data.stackName]: outputsOf(stageTemplates.production.data, {
        [STACK_OUTPUTS.ordersTable]: ORDERS_TABLE,
      }),
    },
    functionName: FUNCTION_NAME,
    versions: ['3', '5', '6', '7', '10'],
    // live serves 7, the last deployment that passed replaced 5 (6 is a kept version whose own
    // deploy failed): CloudFormation records live on 7; this deploy's template publishes 10.
    initialState: { record: '7', alias: '7', pin: '', templateVersion: '10' },
    rollbackAlias: ROLLBACK_ALIAS,
    rollbackVersion: '5',
    doNotShipAlias: DO_NOT_SHIP_ALIAS,
    otherFunctionNames: FUNCTION_NAMES.filter((name) => name !== 'cancelOrder').map(
      (name) => `${FUNCTION_OUTPUTS[name]}-value`,
    ),
    codeSha256: 'sha-of-the-rolled-back-code',
    apiStack: stages.production.api.stackName,
    parameters: Object.keys((api.toJSON() as { Parameters: object }).Parameters),
    pinParameter: 'CancelOrderLiveVersion',
    restApiId: STAND_IN_REST_API_ID,
    apiStages: API_STAGES,
    ordersTable: ORDERS_TABLE,
    accessLogGroup: logGroupName('production', 'access'),
    accessLines: [ACCESS_LINE],
    alarmTopic: ALARM_TOPIC,
    // Every log group of the stage, as the account lists them (the execution logs' by API id).
    logGroups: Object.values(groupNames),
  });
  afterAll(() => standIn.remove());
  const runbookOutput = (script: string) => standIn.run(script);
  const runbook = async (script: string) => (await standIn.run(script)).calls;
  const after = (call: string[], flag: string) => call[call.indexOf(flag) + 1];

  it("runs a saved query: the request query, on its log groups, with the client's request id in it", async () => {
    const calls = await runbook(shellBlocks('operations.md', '## Log groups and saved queries'));
    const start = calls.find((c) => c[0] === 'logs' && c[1] === 'start-query')!;
    expect(start).toBeDefined();
    const groups = start.slice(
      start.indexOf('--log-group-names') + 1,
      start.indexOf('--start-time'),
    );
    expect(groups).toEqual([
      logGroupName('production', 'access'),
      logGroupName('production', 'listOrders'),
      logGroupName('production', 'listOrderPages'),
      logGroupName('production', 'cancelOrder'),
      executionLogGroupName(STAND_IN_REST_API_ID, 'v1'),
      executionLogGroupName(STAND_IN_REST_API_ID, 'v2'),
    ]);
    const [from, to] = [Number(after(start, '--start-time')), Number(after(start, '--end-time'))];
    // An hour back from now: the two `date` calls may fall in different seconds.
    expect(to - from).toBeGreaterThanOrEqual(3600);
    expect(to - from).toBeLessThan(3600 + 60);
    const query = after(start, '--query-string')!;
    expect(query).toContain('requestId = "85963121-7f65-4547-be99-ff66c140533b"');
    expect(query).not.toContain(REQUEST_ID_PLACEHOLDER);
    expect(calls.at(-1)).toEqual(['logs', 'get-query-results', '--query-id', 'q-1']);
  });

  it("watches a deploy and stops it with rollback, on the groups the stage has; the alias by the function's output (not a listing cut at 100 resources)", async () => {
    const calls = await runbook(shellBlocks('rollback.md', '## Watch a deploy and stop it'));
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'deploy list-deployments',
      'deploy get-deployment',
      'deploy stop-deployment',
      'cloudformation describe-stacks',
      'lambda get-alias',
    ]);
    expect(calls[2]).toContain('--auto-rollback-enabled');
    expect(after(calls[4]!, '--function-name')).toBe(FUNCTION_NAME);
    // The stack has more than 100 resources: describe-stack-resources would not list them all.
    expect(Object.keys(api.toJSON().Resources as object).length).toBeGreaterThan(100);
  });

  it("removes a provisioned concurrency left on the live alias of the function the stack's output names", async () => {
    const calls = await runbook(shellBlocks('deploy.md', '### Provisioned concurrency'));
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      'lambda delete-provisioned-concurrency-config',
    ]);
    expect(after(calls[1]!, '--function-name')).toBe(FUNCTION_NAME);
    expect(after(calls[1]!, '--qualifier')).toBe(LIVE_ALIAS);
  });

  /** Runs a script from a fresh state of the stage (live on 7, recorded so). */
  const fromFreshState = (script: string) =>
    standIn.run(`rm -f "$AWS_STAND_IN_FIXTURE.state"\n${script}`);
  /** What `cdk deploy --no-previous-parameters` asks CloudFormation for: the new template, no pin. */
  const nextDeploy = `aws cloudformation update-stack --stack-name Production-Api --template-body file://template.json --capabilities CAPABILITY_IAM --parameters ${[
    ...Object.keys((api.toJSON() as { Parameters: object }).Parameters),
  ]
    .map((key) => `ParameterKey=${key},ParameterValue=`)
    .join(' ')}`;
  const aliasNow = async () =>
    (
      await standIn.run(
        `aws lambda get-alias --function-name ${FUNCTION_NAME} --name live --query FunctionVersion`,
      )
    ).stdout.trim();

  it('rolls a function back to the version the last passed deployment replaced (its rollback alias), not the version before, through CloudFormation: every parameter kept but the pin', async () => {
    const { calls } = await fromFreshState(shellBlocks('rollback.md', '## Roll back at once'));
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      'lambda get-alias',
      'lambda get-alias',
      'lambda create-alias',
      'cloudformation update-stack',
      'cloudformation wait',
    ]);
    expect(after(calls[1]!, '--name')).toBe(ROLLBACK_ALIAS);
    // The version found wrong, the one live served, is marked do-not-ship.
    expect(after(calls[3]!, '--name')).toBe(DO_NOT_SHIP_ALIAS);
    expect(after(calls[3]!, '--function-version')).toBe('7');
    const update = calls[4]!;
    expect(update).toContain('--use-previous-template');
    const parameters = update.slice(update.indexOf('--parameters') + 1);
    expect(parameters).toContain('ParameterKey=CancelOrderLiveVersion,ParameterValue=5');
    // live serves 5 now, not 6 (the version before 7, whose own deploy failed).
    expect(await aliasNow()).toBe('5');
  });

  it('lets the next deploy (the fix) move live on from a rollback through CloudFormation, where one after a manual update-alias is refused', async () => {
    await fromFreshState(shellBlocks('rollback.md', '## Roll back at once'));
    await standIn.run(nextDeploy);
    expect(await aliasNow()).toBe('10');
    // The rollback this runbook used to give: the alias moved by hand, CloudFormation not told.
    await fromFreshState(
      `aws lambda update-alias --function-name ${FUNCTION_NAME} --name live --function-version 5 --routing-config '{"AdditionalVersionWeights":{}}'`,
    );
    await expect(standIn.run(nextDeploy)).rejects.toThrow(/AppSpec's CurrentVersion is 7/);
  });

  it('keeps a rollback rolled back: the next deploy of unchanged code does not move live back to the version found wrong, the fix does move it on, and the mark is cleared by its runbook', async () => {
    await fromFreshState(shellBlocks('rollback.md', '## Roll back at once'));
    expect(await aliasNow()).toBe('5');
    // A routine deploy of something else: the template still names version 7, the one found wrong.
    await expect(
      standIn.run(nextDeploy.replace('template.json', 'template-7.json')),
    ).rejects.toThrow(/marked do-not-ship \(version 7\)/);
    expect(await aliasNow()).toBe('5');
    // The runbook run again, live on the good version: it stops, and marks nothing (not that one).
    await expect(standIn.run(shellBlocks('rollback.md', '## Roll back at once'))).rejects.toThrow(
      /live already serves version 5: nothing to roll back/,
    );
    // The fix: a new version.
    await standIn.run(nextDeploy.replace('template.json', 'template-10.json'));
    expect(await aliasNow()).toBe('10');
    const { calls, stdout } = await standIn.run(
      shellBlocks('rollback.md', '## Clear a do-not-ship mark'),
    );
    expect(stdout).toContain('7\trolled back from: do not serve again');
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      'lambda get-alias',
      'lambda delete-alias',
    ]);
    expect(after(calls[2]!, '--name')).toBe(DO_NOT_SHIP_ALIAS);
    await expect(
      standIn.run(
        `aws lambda get-alias --function-name ${FUNCTION_NAME} --name ${DO_NOT_SHIP_ALIAS} --query '[FunctionVersion,Description]'`,
      ),
    ).rejects.toThrow(/Alias not found/);
  });

  it('deploys with every stack parameter back to its default (a rollback pin does not outlive the next deploy)', () => {
    const deploys = ['deploy.md', 'rollback.md', 'first-stage.md']
      .flatMap((file) => docs(file).split('\n'))
      .filter((line) => /^\s*npx cdk deploy /.test(line));
    expect(deploys.length).toBeGreaterThanOrEqual(3);
    for (const line of deploys) expect(line).toContain('--no-previous-parameters');
  });

  it("publishes each function's rolled-back code by hand, with its CodeSha256, before a retry right after a rollback; and nothing while the stack is not rolled back", async () => {
    const withStatus = (status: string) =>
      standIn.run(
        `echo '${JSON.stringify({ record: '7', alias: '7', pin: '', templateVersion: '10', stackStatus: status })}' > "$AWS_STAND_IN_FIXTURE.state"\n${shellBlocks('rollback.md', '## Deploy the same code again after a rollback')}`,
      );
    const { calls } = await withStatus('UPDATE_ROLLBACK_COMPLETE');
    expect(calls[0]).toEqual(expect.arrayContaining(['describe-stacks', 'Stacks[0].StackStatus']));
    const published = calls.filter((c) => c[1] === 'publish-version');
    expect(published.map((c) => after(c, '--function-name'))).toEqual([
      ...FUNCTION_NAMES.map((name) =>
        name === 'cancelOrder' ? FUNCTION_NAME : `${FUNCTION_OUTPUTS[name]}-value`,
      ),
    ]);
    for (const call of published) {
      expect(after(call, '--code-sha256')).toBe('sha-of-the-rolled-back-code');
    }
    // A retry already under way: the runbook stops before publishing anything.
    await expect(withStatus('UPDATE_IN_PROGRESS')).rejects.toThrow();
  });

  it('restores the orders: the live table from the stack, a restore waited for however long it takes, the copy deleted', async () => {
    // Steps 1, 2 and 7 (3 to 6 are the operator CLI's: test/admin/restore.test.ts).
    const calls = await runbook(
      awsSteps('runbooks.md', '## Restore the orders to a point in time'),
    );
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      'dynamodb restore-table-to-point-in-time',
      'dynamodb describe-table',
      'dynamodb describe-table',
      'dynamodb describe-table',
      'dynamodb describe-table',
      'dynamodb delete-table',
    ]);
    expect(after(calls[1]!, '--target-table-name')).toBe(`${ORDERS_TABLE}-restored`);
  });

  it("leads from a customer's request id to their key id in one command, with no tool but the AWS CLI and POSIX ones (no jq, no GNU date)", async () => {
    const block = shellBlocks('runbooks.md', "## From a customer's request id to their key");
    expect(block.trim().split('\n')).toHaveLength(1);
    const { stdout, calls } = await runbookOutput(block);
    expect(stdout.trim()).toBe('key_rbTbkLzCiXhA');
    const [call] = calls;
    const from = Number(after(call!, '--start-time')) / 1000;
    expect(Date.now() / 1000 - from).toBeGreaterThanOrEqual(7 * 86_400 - 60);
  });

  it("flushes every API stage's authorizer cache after a revocation (each stage caches its own answers), on the stage's API", async () => {
    const block = awsSteps('runbooks.md', '## A leaked key: make it stop working now');
    const calls = await runbook(block);
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      ...API_STAGES.map(() => 'apigateway flush-stage-authorizers-cache'),
    ]);
    const flushes = calls.slice(1);
    for (const flush of flushes) expect(after(flush, '--rest-api-id')).toBe(STAND_IN_REST_API_ID);
    expect(flushes.map((flush) => after(flush, '--stage-name'))).toEqual([...API_STAGES]);
    // The stages the API has are the ones the stack deploys (one AWS::ApiGateway::Stage each).
    expect(
      resources(api, 'AWS::ApiGateway::Stage')
        .map(([, st]) => st.Properties.StageName)
        .sort(),
    ).toEqual([...API_STAGES].sort());
    // The permission the runbook names covers every stage's cache.
    expect(docs('operations.md')).toContain('/restapis/<id>/stages/*/cache/authorizers');
  });

  it("lists who the alarms page: the topic from the stack's outputs, then its subscriptions", async () => {
    const { calls, stdout } = await runbookOutput(shellBlocks('alarms.md', '## Who is paged'));
    expect(calls.map((c) => `${c[0]} ${c[1]}`)).toEqual([
      'cloudformation describe-stacks',
      'sns list-subscriptions-by-topic',
    ]);
    expect(after(calls[1]!, '--topic-arn')).toBe(ALARM_TOPIC);
    expect(stdout).toContain('PendingConfirmation');
  });

  it('deletes, before production is deployed again after a destroy, every kept log group named for the stage (and only those)', async () => {
    const calls = await runbook(
      shellBlocks('operations.md', '### Deploy production again after a destroy'),
    );
    expect(calls[0]!.slice(0, 2)).toEqual(['logs', 'describe-log-groups']);
    const deleted = calls.slice(1).map((c) => {
      expect(c.slice(0, 2)).toEqual(['logs', 'delete-log-group']);
      return after(c, '--log-group-name');
    });
    // The groups named /store-orders/production/<source>: every source but API Gateway's
    // execution logs (named after the old API's id, which a new deploy does not reuse).
    const executionSources: readonly LogSource[] = Object.values(EXECUTION_LOG_SOURCES);
    const named = (Object.keys(LOG_GROUP_OUTPUTS) as LogSource[])
      .filter((source) => !executionSources.includes(source))
      .map((source) => logGroupName('production', source as Parameters<typeof logGroupName>[1]));
    expect([...deleted].sort()).toEqual([...named].sort());
  });
});

describe('the settings the documents give, as synth reads them', () => {
  /** The `-c <stage>:key=value` settings of a text, for a stage, as a context. */
  function contextOf(text: string, stage: StageName): Record<string, unknown> {
    const found = [...text.matchAll(/-c '?(<stage>|staging|production):(\w+)=(.*?)'?(?=\s|`|$)/gm)];
    return Object.fromEntries(
      found
        .filter(([, prefix]) => prefix === '<stage>' || prefix === stage)
        .map(([, , key, value]) => [`${stage}:${key}`, value]),
    );
  }

  it.each(STAGES)(
    "lets a small account (a concurrency limit of 10) run %s with docs/deploy.md's settings: no reservation, nothing provisioned for any function",
    (stage) => {
      const text = docs('deploy.md');
      const section = text.slice(
        text.indexOf('### Concurrency'),
        text.indexOf('### Provisioned concurrency'),
      );
      const context = {
        ...contextOf(section, stage),
        [`${stage}:accountConcurrencyLimit`]: '10',
      };
      expect(Object.keys(context).sort()).toEqual(
        [
          `${stage}:accountConcurrencyLimit`,
          `${stage}:listOrdersReservedConcurrency`,
          `${stage}:provisionedConcurrency`,
        ].sort(),
      );
      // A function the settings do not name keeps its stage default, which would not fit.
      const config = stageConfig(stage, (key) => context[key], {});
      expect(config.concurrency.listOrdersReserved).toBeUndefined();
      expect(config.concurrency.provisioned).toEqual(
        Object.fromEntries(FUNCTION_NAMES.map((name) => [name, 0])),
      );
      expect(
        Object.keys(
          JSON.parse(String(context[`${stage}:provisionedConcurrency`])) as object,
        ).sort(),
      ).toEqual([...FUNCTION_NAMES].sort());
    },
  );

  it("deploys a hotfix ignoring the alarms with docs/rollback.md's command, that one deploy only", () => {
    const block = shellBlocks('rollback.md', '## A hotfix while an alarm is in ALARM');
    const context = contextOf(block, 'production');
    expect(context).toEqual({ 'production:deployIgnoringAlarms': 'true' });
    expect(stageConfig('production', (key) => context[key], {}).deployment.ignoreAlarms).toBe(true);
    expect(stageConfig('production', () => undefined, {}).deployment.ignoreAlarms).toBe(false);
  });

  it("subscribes docs/alarms.md's alarm subscribers", () => {
    const text = docs('alarms.md');
    const section = text.slice(text.indexOf('## Who is paged'));
    const json = /```json\n([\s\S]*?)```/.exec(section)![1]!;
    const { context } = JSON.parse(json) as { context: Record<string, unknown> };
    expect(stageConfig('production', (key) => context[key], {}).alarmSubscriptions).toEqual([
      { protocol: 'email', endpoint: 'oncall@example.com' },
      { protocol: 'https', endpoint: 'https://events.pagerduty.com/integration/KEY/enqueue' },
    ]);
  });
});

describe('the tables of docs/operations.md, against the code', () => {
  /** The rows of the markdown table whose header starts with `| <first> |`. */
  function tableRows(first: string): string[][] {
    const rows = markdownTable('operations.md', first);
    expect(rows, first).toBeDefined();
    return rows!;
  }

  it('lists every log group of a stage with its output (LOG_GROUP_OUTPUTS), v2 and listOrderPages included', () => {
    const rows = tableRows('log group');
    expect(rows.map((row) => row[2]!.replace(/`/g, '')).sort()).toEqual(
      Object.values(LOG_GROUP_OUTPUTS).sort(),
    );
    for (const row of rows) {
      const source = (Object.keys(LOG_GROUP_OUTPUTS) as LogSource[]).find(
        (s) => LOG_GROUP_OUTPUTS[s] === row[2]!.replace(/`/g, ''),
      )!;
      const apiStage = API_STAGES.find((s) => EXECUTION_LOG_SOURCES[s] === source);
      expect(row[0]).toBe(
        `\`${
          apiStage
            ? executionLogGroupName('<restApiId>', apiStage)
            : logGroupName('<stage>' as StageName, source as Parameters<typeof logGroupName>[1])
        }\``,
      );
    }
  });

  it('says which log groups each saved query reads, as LOG_QUERIES binds them', () => {
    const rows = tableRows('query');
    expect(rows.map((row) => row[0])).toEqual(LOG_QUERIES.map((q) => `\`${q.name}\``));
    for (const [name, reads] of rows) {
      const query = LOG_QUERIES.find((q) => `\`${q.name}\`` === name)!;
      expect(reads!.split(', '), name).toEqual(query.sources);
    }
  });

  it('shows an access-log line with every field the deployed format writes, without a date', () => {
    const text = docs('operations.md');
    const section = text.slice(text.indexOf('## Access logs'));
    const sample = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as Record<
      string,
      string
    >;
    expect(Object.keys(sample)).toEqual(Object.keys(JSON.parse(ACCESS_LINE) as object));
    expect(API_STAGES as readonly string[]).toContain(sample.stage);
    expect(JSON.stringify(sample)).not.toMatch(/\d{4}:\d\d:\d\d|\b20\d\d\b/);
  });
});

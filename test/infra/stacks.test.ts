/** Assertion tests of the CDK app: the properties that matter, with matchers, not snapshots. */
import { createServer } from 'node:http';
import { App } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ACCESS_LOG_FIELDS, ERROR_MESSAGE_VARIABLE } from '../../lib/api/access-log.ts';
import { ApiStack } from '../../infra/api-stack.ts';
import { stageConfig } from '../../infra/config.ts';
import { BUNDLING } from '../../infra/constructs/service-function.ts';
import { DataStack } from '../../infra/data-stack.ts';
import { NAG_ACKNOWLEDGEMENTS } from '../../infra/nag.ts';
import {
  GATEWAY_RESPONSES,
  gatewayAnswer,
  methodNotAllowedAnswer,
} from '../../lib/api/gateway-responses.ts';
import {
  methodsByPath,
  resolveRoute,
  ROUTES,
  ROUTES_V2,
  type RouteDefinition,
} from '../../lib/api/routes.ts';
import { createAuthorizerHandler } from '../../functions/authorizer.ts';
import { createGateway } from '../../local/gateway.ts';
import { invokeHandler } from '../../local/invoker.ts';
import { tokenAuthorizer } from '../../local/token-authorizer.ts';
import type { KeyStore } from '../../lib/keys/key-store.ts';
import { STACK_OUTPUTS, stackNames } from '../../lib/deployment.ts';
import { TABLES } from '../../lib/dynamodb/tables.ts';
import { DEPLOY_HOOKS, FUNCTION_NAMES, FUNCTIONS } from '../../lib/functions.ts';
import { BEARER_KEY_PATTERN, generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { templates, testApp } from './support.ts';

const { app, stages } = testApp();
const staging = templates(stages.staging);
const production = templates(stages.production);

type Resource = { Type: string; Properties: Record<string, unknown> } & Record<string, unknown>;
const resources = (template: Template, type: string) =>
  Object.entries(template.findResources(type) as Record<string, Resource>);

/** The logical id of a function, found by its description. */
function functionId(template: Template, description: RegExp): string {
  const found = resources(template, 'AWS::Lambda::Function').find(([, r]) =>
    description.test(String(r.Properties.Description)),
  );
  if (!found) throw new Error(`no function ${description}`);
  return found[0];
}

describe('stages', () => {
  it('are staging and production, each a data and an api stack', () => {
    expect(app.node.children.map((c) => c.node.id).sort()).toEqual(['Production', 'Staging']);
    expect(stages.staging.data.stackName).toBe(stackNames('staging').data);
    expect(stages.staging.api.stackName).toBe(stackNames('staging').api);
    expect(stages.production.data.stackName).toBe('Production-Data');
    expect(stages.production.api.stackName).toBe('Production-Api');
  });

  it('serve the API at stage v1, with throttling, tracing and JSON access logs', () => {
    for (const { api } of [staging, production]) {
      api.hasResourceProperties('AWS::ApiGateway::Stage', {
        StageName: 'v1',
        TracingEnabled: true,
        AccessLogSetting: {
          Format: Match.stringLikeRegexp('^\\{.*"requestId":"\\$context.requestId".*\\}$'),
        },
        MethodSettings: Match.arrayWith([
          Match.objectLike({
            ThrottlingRateLimit: Match.anyValue(),
            ThrottlingBurstLimit: Match.anyValue(),
          }),
        ]),
      });
    }
    staging.api.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 }),
      ]),
    });
  });

  it('log each request as JSON: caller key id, route, status, latencies, error, trace id; never the key', () => {
    for (const { api } of [staging, production]) {
      const [, stage] = resources(api, 'AWS::ApiGateway::Stage')[0]!;
      const format = (stage.Properties.AccessLogSetting as { Format: string }).Format;
      // The error message is written pre-quoted by API Gateway: the only unquoted variable.
      expect(format).toContain(`"errorMessage":${ERROR_MESSAGE_VARIABLE}`);
      const fields = JSON.parse(format.replace(ERROR_MESSAGE_VARIABLE, '"-"')) as Record<
        string,
        string
      >;
      expect(fields).toMatchObject({
        requestId: '$context.requestId',
        keyId: '$context.authorizer.principalId',
        status: '$context.status',
        httpMethod: '$context.httpMethod',
        resourcePath: '$context.resourcePath',
        responseLatencyMs: '$context.responseLatency',
        integrationLatencyMs: '$context.integration.latency',
        errorType: '$context.error.responseType',
        xrayTraceId: '$context.xrayTraceId',
      });
      expect(Object.keys(fields)).toEqual([...Object.keys(ACCESS_LOG_FIELDS), 'errorMessage']);
      // No header, no request parameter, no API Gateway key: nothing that could hold the key.
      expect(format).not.toMatch(/Authorization|\$input|\$method|header|identity\.apiKey/i);
    }
  });

  it('protect every production stack from termination, and no staging one', () => {
    expect(stages.production.data.terminationProtection).toBe(true);
    expect(stages.production.api.terminationProtection).toBe(true);
    expect(stages.staging.data.terminationProtection).toBe(false);
    expect(stages.staging.api.terminationProtection).toBe(false);
  });

  it('create no account-wide API Gateway setting by default (an account has one)', () => {
    for (const { api } of [staging, production]) {
      expect(resources(api, 'AWS::ApiGateway::Account')).toEqual([]);
      expect(
        resources(api, 'AWS::IAM::Role').filter(([id]) => id.startsWith('ApiCloudWatchRole')),
      ).toEqual([]);
    }
  });

  it('give the account its API Gateway CloudWatch role from the one stage told to, kept when that stage is deleted', () => {
    const owned = testApp({ 'production:apiGatewayAccountRole': 'true' }).stages;
    const accounts = (stage: typeof owned.staging) =>
      resources(templates(stage).api, 'AWS::ApiGateway::Account');
    expect(accounts(owned.staging)).toEqual([]);
    const [[, account]] = accounts(owned.production) as [[string, Resource]];
    expect(account.DeletionPolicy).toBe('Retain');
    const roles = resources(templates(owned.production).api, 'AWS::IAM::Role').filter(([id]) =>
      id.startsWith('ApiCloudWatchRole'),
    );
    expect(roles).toHaveLength(1);
    expect(roles[0]![1].DeletionPolicy).toBe('Retain');
  });

  it('refuse two owners of the API Gateway account setting in one account', () => {
    const both = {
      'staging:apiGatewayAccountRole': true,
      'production:apiGatewayAccountRole': true,
    };
    expect(() => testApp(both)).toThrow(/can have one owner only/);
    expect(() =>
      testApp({ ...both, 'staging:account': '111111111111', 'production:account': '111111111111' }),
    ).toThrow(/can have one owner only/);
    expect(() =>
      testApp({ ...both, 'staging:account': '111111111111', 'production:account': '222222222222' }),
    ).not.toThrow();
  });

  it('accept only true or false for the account role setting', () => {
    const reader = (key: string) => (key === 'staging:apiGatewayAccountRole' ? 'yes' : undefined);
    expect(() => stageConfig('staging', reader, {})).toThrow(
      'staging:apiGatewayAccountRole must be true or false, got "yes"',
    );
  });

  it('output the base URL (ending in /v1), the table names and the region for the operator CLI', () => {
    const url = staging.api.findOutputs(STACK_OUTPUTS.apiUrl);
    expect(JSON.stringify(Object.values(url)[0])).toMatch(/\/v1"\]\]\}/);
    for (const key of [
      STACK_OUTPUTS.region,
      STACK_OUTPUTS.ordersTable,
      STACK_OUTPUTS.apiKeysTable,
      STACK_OUTPUTS.rateLimitsTable,
    ]) {
      expect(Object.keys(staging.data.findOutputs(key)), key).toHaveLength(1);
    }
  });
});

describe('API Gateway', () => {
  it('puts every GET and DELETE behind the API-key TOKEN authorizer, cached 60 s by default', () => {
    staging.api.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'TOKEN',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: 60,
    });
    const [authorizerId] = Object.keys(staging.api.findResources('AWS::ApiGateway::Authorizer'));
    const methods = resources(staging.api, 'AWS::ApiGateway::Method').filter(
      ([, m]) => m.Properties.HttpMethod !== 'ANY',
    );
    expect(methods.map(([, m]) => m.Properties.HttpMethod).sort()).toEqual(
      ROUTES.map((r) => r.method).sort(),
    );
    for (const [, method] of methods) {
      expect(method.Properties).toMatchObject({
        AuthorizationType: 'CUSTOM',
        AuthorizerId: { Ref: authorizerId },
      });
    }
  });

  it("leaves a key's permissions to the functions, from one answer a token, deployed as locally", async () => {
    // Deployed: each stage caches one answer per Authorization header (the identity source alone,
    // so never per route) for its TTL, and every route is a proxy integration: the function's
    // 403 reaches the client as it gave it.
    const ttls: number[] = [];
    for (const [name, { api }] of [
      ['staging', staging],
      ['production', production],
    ] as const) {
      const [, authorizer] = resources(api, 'AWS::ApiGateway::Authorizer')[0]!;
      const ttl = stageConfig(name, () => undefined).authorizerCacheTtl.toSeconds();
      expect(authorizer.Properties).toMatchObject({
        Type: 'TOKEN',
        IdentitySource: 'method.request.header.Authorization',
        AuthorizerResultTtlInSeconds: ttl,
      });
      ttls.push(ttl);
      for (const [, method] of resources(api, 'AWS::ApiGateway::Method').filter(
        ([, m]) => m.Properties.HttpMethod !== 'ANY',
      )) {
        expect((method.Properties.Integration as { Type: string }).Type).toBe('AWS_PROXY');
      }
    }
    // The emulator, with each deployed TTL and the real authorizer: a read-only key's one answer
    // serves every route of the stage, whichever was asked first, with the permissions in it.
    const key = generateApiKey();
    const keys: KeyStore = {
      findByHash: (hash) =>
        Promise.resolve(
          hash === hashApiKey(key)
            ? {
                keyId: 'key_readonly',
                keyHash: hash,
                plan: 'free' as const,
                status: 'active' as const,
                createdAt: '2026-11-28T00:00:00.000Z',
                permissions: ['read' as const],
              }
            : undefined,
        ),
      create: () => Promise.resolve(false),
    };
    const authorizer = createAuthorizerHandler({ keys: () => keys });
    const arn = (method: string, path: string) =>
      `arn:aws:execute-api:local:000000000000:local/v1/${method}${path}`;
    const routes = ROUTES.map((r) => arn(r.method, r.path.replace('{orderId}', '1')));
    for (const ttlSeconds of ttls) {
      for (const order of [routes, [...routes].reverse()]) {
        let invocations = 0;
        const authorize = tokenAuthorizer({
          invoker: {
            invoke: (_name, event, options) => {
              invocations += 1;
              return invokeHandler(authorizer, 'authorizer', event, options);
            },
          },
          ttlSeconds,
          timeoutMs: 10_000,
          now: () => 0,
        });
        for (const methodArn of order) {
          const answer = await authorize(`Bearer ${key}`, methodArn, 'v1');
          expect(answer.ok, methodArn).toBe(true);
          expect(answer.ok && answer.result.context?.permissions).toBe('read');
        }
        expect(invocations).toBe(1);
      }
    }
  });

  it('refuses a header that cannot hold a key before invoking the authorizer (identity validation)', () => {
    for (const { api } of [staging, production]) {
      api.hasResourceProperties('AWS::ApiGateway::Authorizer', {
        Type: 'TOKEN',
        IdentityValidationExpression: BEARER_KEY_PATTERN,
      });
    }
  });

  it('streams listOrders and buffers cancelOrder', () => {
    const byMethod = Object.fromEntries(
      resources(staging.api, 'AWS::ApiGateway::Method').map(([, m]) => [
        m.Properties.HttpMethod,
        m.Properties.Integration as Record<string, unknown>,
      ]),
    );
    expect(byMethod.GET).toMatchObject({
      Type: 'AWS_PROXY',
      ResponseTransferMode: 'STREAM',
      // API Gateway keeps the stream open as long as the function may run.
      TimeoutInMillis: FUNCTIONS.listOrders.timeoutSeconds * 1000,
    });
    expect(JSON.stringify(byMethod.GET?.Uri)).toContain('response-streaming-invocations');
    expect(byMethod.DELETE).toMatchObject({ Type: 'AWS_PROXY' });
    expect(byMethod.DELETE?.ResponseTransferMode ?? 'BUFFERED').toBe('BUFFERED');
  });

  it('answers other methods on known paths with 405 and Allow, from a mock, before authentication', () => {
    const any = resources(staging.api, 'AWS::ApiGateway::Method').filter(
      ([, m]) => m.Properties.HttpMethod === 'ANY',
    );
    expect(any).toHaveLength(methodsByPath().size);
    const allows = any.map(([, m]) => {
      const integration = m.Properties.Integration as {
        Type: string;
        IntegrationResponses: {
          StatusCode: string;
          ResponseParameters: Record<string, string>;
          ResponseTemplates: Record<string, string>;
        }[];
      };
      expect(m.Properties.AuthorizationType).toBe('NONE');
      expect(integration.Type).toBe('MOCK');
      const [response] = integration.IntegrationResponses;
      expect(response?.StatusCode).toBe('405');
      expect(JSON.parse(response!.ResponseTemplates['application/json']!)).toEqual(
        methodNotAllowedAnswer(['GET']).body,
      );
      return response!.ResponseParameters['method.response.header.Allow'];
    });
    expect(allows.sort()).toEqual(["'DELETE'", "'GET'"]);
  });

  it('answers every gateway response in the Error shape, with its status and headers', () => {
    const installed = resources(staging.api, 'AWS::ApiGateway::GatewayResponse');
    expect(installed).toHaveLength(GATEWAY_RESPONSES.length);
    for (const { type } of GATEWAY_RESPONSES) {
      const answer = gatewayAnswer(type);
      staging.api.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        StatusCode: String(answer.status),
        ResponseTemplates: { 'application/json': JSON.stringify(answer.body) },
        ResponseParameters: Object.fromEntries(
          Object.entries(answer.headers).map(([name, value]) => [
            `gatewayresponse.header.${name}`,
            `'${value}'`,
          ]),
        ),
      });
    }
  });
});

describe('tables', () => {
  it('are on demand, from the shared definitions: PITR on orders, TTL on the rate counters', () => {
    for (const definition of Object.values(TABLES)) {
      staging.data.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        KeySchema: Match.arrayWith([
          { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
        ]),
        BillingMode: 'PAY_PER_REQUEST',
      });
    }
    staging.data.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [
        { AttributeName: 'shard', KeyType: 'HASH' },
        { AttributeName: 'id', KeyType: 'RANGE' },
      ],
      Replicas: [
        Match.objectLike({
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        }),
      ],
    });
    staging.data.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [{ AttributeName: 'keyHash', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'byKeyId',
          KeySchema: [{ AttributeName: 'keyId', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ],
    });
    staging.data.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
  });

  it('are retained and deletion-protected in production, and may be destroyed in staging', () => {
    const prod = resources(production.data, 'AWS::DynamoDB::GlobalTable');
    expect(prod).toHaveLength(3);
    for (const [, table] of prod) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
      expect(JSON.stringify(table.Properties.Replicas)).toContain(
        '"DeletionProtectionEnabled":true',
      );
    }
    expect(stages.production.data.terminationProtection).toBe(true);
    for (const [, table] of resources(staging.data, 'AWS::DynamoDB::GlobalTable')) {
      expect(table.DeletionPolicy).toBe('Delete');
      expect(JSON.stringify(table.Properties.Replicas)).not.toContain(
        '"DeletionProtectionEnabled":true',
      );
    }
  });

  it('keep logs two weeks in staging and a year in production', () => {
    staging.api.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 14 });
    production.api.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 365 });
    for (const [, group] of resources(production.api, 'AWS::Logs::LogGroup'))
      expect(group.DeletionPolicy).toBe('Retain');
  });
});

describe('functions', () => {
  it('run Node.js 24 on arm64 with X-Ray and their own log groups, parsing no source maps', () => {
    const fns = resources(staging.api, 'AWS::Lambda::Function');
    // The three of the API and the two deploy hooks.
    expect(fns.map(([, fn]) => fn.Properties.Description).sort()).toEqual(
      [...Object.values(FUNCTIONS), ...Object.values(DEPLOY_HOOKS)]
        .map((d) => d.description)
        .sort(),
    );
    for (const [, fn] of fns) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: expect.stringMatching(/^index\.(handler|preTraffic|postTraffic)$/),
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
        Environment: {
          Variables: expect.objectContaining({
            LOG_LEVEL: expect.stringMatching(/^(DEBUG|INFO|WARN|ERROR)$/),
          }),
        },
      });
      // --enable-source-maps would parse every module's map as it loads: ~25 ms per cold start.
      const { Environment } = fn.Properties as { Environment: { Variables: object } };
      expect(Environment.Variables).not.toHaveProperty('NODE_OPTIONS');
    }
  });

  it('have the memory, timeout and description of the shared function definitions', () => {
    for (const definition of Object.values(FUNCTIONS)) {
      staging.api.hasResourceProperties('AWS::Lambda::Function', {
        Description: definition.description,
        MemorySize: definition.memoryMb,
        Timeout: definition.timeoutSeconds,
      });
    }
  });

  it('have the environment each needs, and all publish metrics under the stage namespace', () => {
    const byDescription = (d: RegExp) =>
      staging.api.toJSON().Resources[functionId(staging.api, d)] as Resource;
    const listEnv = (
      byDescription(/^GET/).Properties.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(Object.keys(listEnv)).toEqual(
      expect.arrayContaining([
        TABLES.orders.envVar,
        TABLES.rateLimits.envVar,
        'RATE_LIMIT_FAILURE_MODE',
        'METRICS_NAMESPACE',
      ]),
    );
    expect(listEnv).not.toHaveProperty(TABLES.apiKeys.envVar);
    expect(listEnv.METRICS_NAMESPACE).toBe('StoreOrders/staging');
    const authorizerEnv = (
      byDescription(/authorizer/).Properties.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(Object.keys(authorizerEnv)).toContain(TABLES.apiKeys.envVar);
    expect(authorizerEnv).not.toHaveProperty(TABLES.orders.envVar);
    // The authorizer counts its own failures (InternalErrors): in the stage's namespace too.
    expect(authorizerEnv.METRICS_NAMESPACE).toBe('StoreOrders/staging');
  });

  it('are bundled as one CommonJS file with the AWS SDK inside and no source map', () => {
    expect(BUNDLING).toMatchObject({
      format: 'cjs',
      sourceMap: false,
      externalModules: [],
      target: 'node24',
    });
  });

  it('cap listOrders with reserved concurrency (10 in staging, 100 in production), not the others', () => {
    const reserved = (template: Template): Record<string, unknown> =>
      Object.fromEntries(
        resources(template, 'AWS::Lambda::Function').map(([, fn]): [string, unknown] => [
          String(fn.Properties.Description).split(':')[0]!,
          fn.Properties.ReservedConcurrentExecutions,
        ]),
      );
    expect(reserved(staging.api)).toEqual({
      'GET /store/orders': 10,
      'DELETE /store/orders/{orderId}': undefined,
      'API key authorizer': undefined,
      'CodeDeploy BeforeAllowTraffic': undefined,
      'CodeDeploy AfterAllowTraffic': undefined,
    });
    expect(reserved(production.api)['GET /store/orders']).toBe(100);
  });

  it('may only do what they use, on the tables they use: no * on DynamoDB', () => {
    const policies = resources(staging.api, 'AWS::IAM::Policy');
    const dynamoStatements = (roleMatch: RegExp) =>
      policies
        .filter(([, p]) => JSON.stringify(p.Properties.Roles).match(roleMatch))
        .flatMap(
          ([, p]) =>
            (
              p.Properties.PolicyDocument as {
                Statement: { Action: string | string[]; Resource: unknown }[];
              }
            ).Statement,
        )
        .filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')));
    const shape = (statements: { Action: string | string[]; Resource: unknown }[]) =>
      statements
        .map((s) => [
          [s.Action].flat().join(','),
          JSON.stringify(s.Resource).match(/DataNestedStack|Orders|ApiKeys|RateLimits/g)?.[0],
        ])
        .sort();
    expect(shape(dynamoStatements(/ListOrdersRole/))).toEqual([
      ['dynamodb:Query,dynamodb:BatchGetItem', 'Orders'],
      ['dynamodb:UpdateItem', 'RateLimits'],
    ]);
    expect(shape(dynamoStatements(/CancelOrderRole/))).toEqual([
      ['dynamodb:GetItem,dynamodb:UpdateItem', 'Orders'],
      ['dynamodb:UpdateItem', 'RateLimits'],
    ]);
    expect(shape(dynamoStatements(/AuthorizerRole/))).toEqual([['dynamodb:GetItem', 'ApiKeys']]);
    for (const statement of dynamoStatements(/./)) {
      expect([statement.Action].flat().some((a) => a.includes('*'))).toBe(false);
      expect(JSON.stringify(statement.Resource)).not.toMatch(/"\*"|index\/\*/);
    }
    // No managed execution policy: each role writes to its own log group only.
    for (const [, role] of resources(staging.api, 'AWS::IAM::Role')) {
      expect(JSON.stringify(role.Properties.ManagedPolicyArns ?? [])).not.toContain(
        'AWSLambdaBasicExecutionRole',
      );
    }
  });
});

describe('cdk-nag', () => {
  it('finds nothing left: the whole app synthesizes with the AwsSolutions checks', () => {
    expect(() => app.synth()).not.toThrow();
  });

  it('fails synthesis on a finding nobody acknowledged', () => {
    const { app: other, stages: s } = testApp();
    // A wildcard on DynamoDB that no acknowledgement covers.
    s.staging.api.functions.listOrders.addToRolePolicy(
      new PolicyStatement({ actions: ['dynamodb:*'], resources: ['*'] }),
    );
    expect(() => other.synth()).toThrow(/AwsSolutions-IAM5/);
  });

  it('accepts each acknowledged finding for a written reason', () => {
    for (const { id, reason } of Object.values(NAG_ACKNOWLEDGEMENTS)) {
      expect(id).toMatch(/^AwsSolutions-/);
      expect(reason.length).toBeGreaterThan(40);
    }
  });
});

describe('provisioned concurrency on live (<stage>:provisionedConcurrency)', () => {
  type Target = [string, Resource & { DependsOn?: string[] }];
  const targets = (template: Template) =>
    resources(template, 'AWS::ApplicationAutoScaling::ScalableTarget') as Target[];
  const aliasOf = (template: Template, fnDescription: RegExp) =>
    resources(template, 'AWS::Lambda::Alias').find(
      ([, a]) =>
        JSON.stringify(a.Properties.FunctionName) ===
        JSON.stringify({ Ref: functionId(template, fnDescription) }),
    )!;

  it('is 0 in staging (no scaling target) and 1, 1, 2, 2 in production, each with target tracking at 70% up to 4 times the floor', () => {
    expect(targets(staging.api)).toEqual([]);
    expect(stageConfig('production', () => undefined, {}).concurrency.provisioned).toEqual({
      listOrders: 1,
      listOrderPages: 1,
      cancelOrder: 2,
      authorizer: 2,
    });
    const floors = Object.fromEntries(
      targets(production.api).map(([, t]) => [
        JSON.stringify(t.Properties.ResourceId).match(
          /ListOrderPages|ListOrders|CancelOrder|Authorizer/,
        )![0],
        [t.Properties.MinCapacity, t.Properties.MaxCapacity],
      ]),
    );
    expect(floors).toEqual({
      ListOrders: [1, 4],
      ListOrderPages: [1, 4],
      CancelOrder: [2, 8],
      Authorizer: [2, 8],
    });
    for (const [, target] of targets(production.api)) {
      expect(target.Properties).toMatchObject({
        ScalableDimension: 'lambda:function:ProvisionedConcurrency',
        ServiceNamespace: 'lambda',
      });
      expect(JSON.stringify(target.Properties.ResourceId)).toContain(':live');
    }
    for (const [, policy] of resources(
      production.api,
      'AWS::ApplicationAutoScaling::ScalingPolicy',
    )) {
      expect(policy.Properties.TargetTrackingScalingPolicyConfiguration).toMatchObject({
        TargetValue: 0.7,
        PredefinedMetricSpecification: {
          PredefinedMetricType: 'LambdaProvisionedConcurrencyUtilization',
        },
      });
    }
  });

  it("changes only after the alias's deployment: the floor is the scaling target's, which depends on the alias; the alias itself carries none", () => {
    // Every function (production provisions each), found by its description in lib/functions.ts.
    const provisioned = stageConfig('production', () => undefined, {}).concurrency.provisioned;
    expect(FUNCTION_NAMES.filter((name) => provisioned[name] > 0)).toEqual(FUNCTION_NAMES);
    expect(targets(production.api)).toHaveLength(FUNCTION_NAMES.length);
    for (const name of FUNCTION_NAMES) {
      const description = new RegExp(
        `^${FUNCTIONS[name].description.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
      );
      const [aliasId, alias] = aliasOf(production.api, description);
      expect(alias.Properties, name).not.toHaveProperty('ProvisionedConcurrencyConfig');
      // The scaling target of that alias (its ResourceId names the alias).
      const aliasRef = JSON.stringify({ Ref: aliasId });
      const found = targets(production.api).filter(([, t]) =>
        JSON.stringify(t.Properties.ResourceId).includes(aliasRef),
      );
      expect(found, name).toHaveLength(1);
      expect(found[0]![1].DependsOn, name).toContain(aliasId);
    }
  });

  it('takes a floor per function from context, refuses one listOrders cannot hold or an unknown function', () => {
    const provisioned = (value: unknown) =>
      stageConfig(
        'staging',
        (key) => (key === 'staging:provisionedConcurrency' ? value : undefined),
        {},
      ).concurrency.provisioned;
    expect(provisioned('{"cancelOrder": 3}')).toEqual({
      listOrders: 0,
      listOrderPages: 0,
      cancelOrder: 3,
      authorizer: 0,
    });
    expect(provisioned({ authorizer: 1 })).toEqual({
      listOrders: 0,
      listOrderPages: 0,
      cancelOrder: 0,
      authorizer: 1,
    });
    expect(() => provisioned('{"cancelOrders": 3}')).toThrow(/cancelOrders is not a function/);
    expect(() => provisioned('3')).toThrow(/must be an object such as/);
    // Staging reserves 10 for listOrders: a floor of 3 scales to 12.
    expect(() => provisioned({ listOrders: 3 })).toThrow(
      /listOrders=3 scales up to 12, above listOrders' reserved concurrency of 10/,
    );
    const { stages: custom } = testApp({ 'staging:provisionedConcurrency': { cancelOrder: 3 } });
    const [, target] = resources(
      templates(custom.staging).api,
      'AWS::ApplicationAutoScaling::ScalableTarget',
    )[0]!;
    expect(target.Properties).toMatchObject({ MinCapacity: 3, MaxCapacity: 12 });
  });
});

describe('a hotfix (<stage>:deployIgnoringAlarms)', () => {
  it('deploys although a deployment alarm is in ALARM: CodeDeploy and the bake ignore the alarms, the pre-traffic call still runs', () => {
    const { stages: hotfix } = testApp({ 'production:deployIgnoringAlarms': 'true' });
    const api = templates(hotfix.production).api;
    const groups = resources(api, 'AWS::CodeDeploy::DeploymentGroup');
    // One per function.
    expect(groups).toHaveLength(4);
    for (const [, group] of groups) {
      expect(group.Properties.AlarmConfiguration).toMatchObject({ Enabled: false });
      // The alarms stay listed: the next deploy without the setting watches them again.
      expect(
        (group.Properties.AlarmConfiguration as { Alarms: unknown[] }).Alarms.length,
      ).toBeGreaterThan(0);
    }
    const hooks = resources(api, 'AWS::Lambda::Function').filter(([, f]) =>
      String(f.Properties.Description).startsWith('CodeDeploy'),
    );
    for (const [, hook] of hooks) {
      expect((hook.Properties.Environment as { Variables: object }).Variables).toMatchObject({
        IGNORE_ALARMS: 'true',
      });
    }
    expect(JSON.stringify(resources(api, 'AWS::Lambda::Alias')[0]![1].UpdatePolicy)).toContain(
      'BeforeAllowTrafficHook',
    );
    // Only that one deploy: without the setting, the alarms are on.
    for (const [, group] of resources(production.api, 'AWS::CodeDeploy::DeploymentGroup')) {
      expect(group.Properties.AlarmConfiguration).toMatchObject({ Enabled: true });
    }
    expect(() =>
      stageConfig(
        'production',
        (k) => (k === 'production:deployIgnoringAlarms' ? 'yes' : undefined),
        {},
      ),
    ).toThrow('production:deployIgnoringAlarms must be true or false, got "yes"');
  });
});

describe('pages that reach a person (<stage>:alarmSubscriptions)', () => {
  it('subscribes the e-mail addresses and HTTPS endpoints given to the alarm topic', () => {
    const { stages: paged } = testApp({
      'production:alarmSubscriptions': [
        'oncall@example.com',
        'https://events.pagerduty.com/integration/abc/enqueue',
      ],
      'staging:alarmSubscriptions': 'dev@example.com',
    });
    const subscriptions = (stage: typeof paged.staging) =>
      resources(templates(stage).api, 'AWS::SNS::Subscription').map(([, sub]) => sub.Properties);
    const topic = (stage: typeof paged.staging) => ({
      Ref: resources(templates(stage).api, 'AWS::SNS::Topic')[0]![0],
    });
    expect(subscriptions(paged.production)).toEqual([
      { Protocol: 'email', Endpoint: 'oncall@example.com', TopicArn: topic(paged.production) },
      {
        Protocol: 'https',
        Endpoint: 'https://events.pagerduty.com/integration/abc/enqueue',
        TopicArn: topic(paged.production),
      },
    ]);
    expect(subscriptions(paged.staging)).toEqual([
      { Protocol: 'email', Endpoint: 'dev@example.com', TopicArn: topic(paged.staging) },
    ]);
    expect(resources(production.api, 'AWS::SNS::Subscription')).toEqual([]);
  });

  it.each(['http://example.com/hook', 'not an address', 'a@b', '["a@b"]', '[not json'])(
    'refuses %j',
    (value) => {
      expect(() =>
        stageConfig('staging', (k) => (k === 'staging:alarmSubscriptions' ? value : undefined), {}),
      ).toThrow(/staging:alarmSubscriptions takes e-mail addresses and https:\/\/ URLs/);
    },
  );

  it('takes a list as JSON text on a command line (-c), as cdk.json gives it', () => {
    const value = '["oncall@example.com", "https://events.example.com/alarms"]';
    expect(
      stageConfig('staging', (k) => (k === 'staging:alarmSubscriptions' ? value : undefined), {})
        .alarmSubscriptions,
    ).toEqual([
      { protocol: 'email', endpoint: 'oncall@example.com' },
      { protocol: 'https', endpoint: 'https://events.example.com/alarms' },
    ]);
  });
});

describe('configuration', () => {
  const context = (values: Record<string, unknown>) => (key: string) => values[key];

  it('reads account, region, authorizer TTL and failure mode per stage', () => {
    const config = stageConfig(
      'staging',
      context({
        'staging:account': '123456789012',
        'staging:region': 'eu-west-1',
        'staging:authorizerCacheTtlSeconds': '30',
      }),
      {},
    );
    expect(config.env).toEqual({ account: '123456789012', region: 'eu-west-1' });
    expect(config.authorizerCacheTtl.toSeconds()).toBe(30);
    expect(stageConfig('production', context({}), {}).rateLimiter.failureMode).toBe('closed');
  });

  it.each([
    [{ 'staging:account': '12345' }, /12-digit/],
    [{ 'staging:region': 'Mars' }, /AWS region/],
    [{ 'staging:authorizerCacheTtlSeconds': '7200' }, /from 0 to 3600/],
    [{ 'staging:rateLimitFailureMode': 'maybe' }, /open or closed/],
    [
      { 'staging:rateLimitBanSeconds': '30' },
      /rateLimitBanSeconds \(a ban at least as long as the minute window, at most a day\) must be an integer from 60 to 86400, got "30"/,
    ],
    [{ 'staging:rateLimitBanSeconds': '90000' }, /from 60 to 86400, got "90000"/],
    [{ 'staging:rateLimitBanAfterRefusals': '0' }, /from 1 to 1000, got "0"/],
    [{ 'staging:domainName': 'api.example.com' }, /go together/],
    [{ 'staging:listOrdersReservedConcurrency': '0' }, /from 1 to 1000000, got "0"/],
    [{ 'staging:listOrdersReservedConcurrency': 'lots' }, /\(or none\) must be an integer/],
    [
      { 'staging:listOrdersReservedConcurrency': '950' },
      /=950 leaves fewer than the 100 unreserved executions Lambda requires of an account limit of 1000/,
    ],
    [
      { 'staging:accountConcurrencyLimit': '10' },
      /=10 leaves fewer than the 100 unreserved executions .* set it to none/,
    ],
    [{ 'staging:deploymentBakeMinutes': '13' }, /from 0 to 12, got "13"/],
    [{ 'staging:deploymentWatchProbe': 'yes' }, /deploymentWatchProbe must be true or false/],
    [{ 'staging:versionsKept': '1' }, /versionsKept must be an integer from 2 to 100, got "1"/],
  ])('refuses %j with a clear message', (values, message) => {
    expect(() => stageConfig('staging', context(values), {})).toThrow(message);
  });

  it('probes the new version during the watch in staging (often without callers), not in production, unless a stage says otherwise', () => {
    const watchProbe = (stage: 'staging' | 'production', values: Record<string, unknown> = {}) =>
      stageConfig(stage, context(values), {}).deployment.watchProbe;
    expect([watchProbe('staging'), watchProbe('production')]).toEqual([true, false]);
    expect(watchProbe('production', { 'production:deploymentWatchProbe': 'true' })).toBe(true);
    expect(watchProbe('staging', { 'staging:deploymentWatchProbe': false })).toBe(false);
  });

  it('gives each stage its ban threshold and length from context, and the functions get them', () => {
    const { stages: custom } = testApp({
      'staging:rateLimitBanAfterRefusals': 3,
      'staging:rateLimitBanSeconds': '120',
    });
    const limiterEnv = templates(custom.staging)
      .api.findResources('AWS::Lambda::Function')
      .valueOf() as Record<string, Resource>;
    const counted = Object.values(limiterEnv)
      .map(
        (r) =>
          (r.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
            ?.Variables,
      )
      .filter((vars) => vars?.[TABLES.rateLimits.envVar] !== undefined);
    // The functions that count requests: both lists and the cancel.
    expect(counted).toHaveLength(3);
    for (const vars of counted) {
      expect(vars).toMatchObject({
        RATE_LIMIT_BAN_AFTER_REFUSALS: '3',
        RATE_LIMIT_BAN_SECONDS: '120',
      });
    }
    // Production keeps its own (the defaults).
    expect(
      stageConfig('production', context({ 'staging:rateLimitBanSeconds': '120' }), {}).rateLimiter,
    ).toMatchObject({
      banAfterRefusals: 10,
      banSeconds: 900,
    });
  });

  it('reserves listOrders concurrency per stage: a number within the account limit, or none', () => {
    const reserved = (values: Record<string, unknown>) =>
      stageConfig('production', context(values), {}).concurrency.listOrdersReserved;
    expect(reserved({})).toBe(100);
    expect(reserved({ 'production:listOrdersReservedConcurrency': '250' })).toBe(250);
    expect(reserved({ 'production:listOrdersReservedConcurrency': 'none' })).toBeUndefined();
    expect(
      reserved({
        'production:listOrdersReservedConcurrency': '1900',
        'production:accountConcurrencyLimit': '2000',
        // Provisioned concurrency of the others would come out of the 100 left unreserved.
        'production:provisionedConcurrency': { listOrderPages: 0, cancelOrder: 0, authorizer: 0 },
      }),
    ).toBe(1900);
    // A new account (limit 10) can reserve nothing, nor provision: `none` and 0 deploy there.
    const newAccount = {
      'production:listOrdersReservedConcurrency': 'none',
      'production:accountConcurrencyLimit': '10',
    };
    expect(() => reserved(newAccount)).toThrow(
      'production:provisionedConcurrency scales up to 24 executions, more than the account limit of 10 leaves',
    );
    expect(
      reserved({
        ...newAccount,
        'production:provisionedConcurrency': {
          listOrders: 0,
          listOrderPages: 0,
          cancelOrder: 0,
          authorizer: 0,
        },
      }),
    ).toBeUndefined();
    const { stages: unreserved } = testApp({ 'staging:listOrdersReservedConcurrency': 'none' });
    for (const [, fn] of resources(templates(unreserved.staging).api, 'AWS::Lambda::Function'))
      expect(fn.Properties).not.toHaveProperty('ReservedConcurrentExecutions');
  });

  describe('a custom domain certificate (REGIONAL endpoint)', () => {
    const domain = (certificateRegion: string, region?: string) => ({
      'staging:domainName': 'api.example.com',
      'staging:certificateArn': `arn:aws:acm:${certificateRegion}:123456789012:certificate/abc-123`,
      ...(region ? { 'staging:region': region } : {}),
    });

    it('must be in the stage region: checked at synth, not at deploy', () => {
      expect(() => stageConfig('staging', context(domain('us-east-1', 'eu-west-1')), {})).toThrow(
        "staging:certificateArn is in us-east-1, but a REGIONAL custom domain needs a certificate in the stage's region, eu-west-1",
      );
      expect(() => testApp(domain('us-east-1', 'eu-west-1'))).toThrow(/is in us-east-1/);
      expect(
        stageConfig('staging', context(domain('eu-west-1', 'eu-west-1')), {}).customDomain,
      ).toBeDefined();
    });

    it('needs the stage region to be known', () => {
      expect(() => stageConfig('staging', context(domain('eu-west-1')), {})).toThrow(
        "staging:domainName needs the stage's region (staging:region or CDK_DEFAULT_REGION)",
      );
      // The environment's default region counts.
      expect(
        stageConfig('staging', context(domain('eu-west-1')), { CDK_DEFAULT_REGION: 'eu-west-1' })
          .customDomain,
      ).toBeDefined();
    });
  });

  it('maps a custom domain on /v1 when one is configured', () => {
    const domainApp = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = stageConfig(
      'staging',
      context({
        'staging:domainName': 'api.example.com',
        'staging:certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc-123',
        'staging:region': 'eu-west-1',
        'staging:account': '123456789012',
      }),
      {},
    );
    const data = new DataStack(domainApp, 'D', { config, env: config.env });
    const api = Template.fromStack(
      new ApiStack(domainApp, 'A', { config, tables: data.tables, env: config.env }),
    );
    api.hasResourceProperties('AWS::ApiGateway::DomainName', {
      DomainName: 'api.example.com',
      SecurityPolicy: 'TLS_1_2',
    });
    api.hasResourceProperties('AWS::ApiGateway::BasePathMapping', { BasePath: 'v1' });
    api.hasOutput(STACK_OUTPUTS.apiUrl, { Value: 'https://api.example.com/v1' });
  });
});

/** Which operation the emulator's router picks for a request, with a given route table. */
function emulatorRoutesTo(
  routes: readonly RouteDefinition[],
  method: string,
  path: string,
): string | undefined {
  const resolution = resolveRoute(method, path, routes);
  return resolution.kind === 'matched' ? resolution.match.route.operationId : undefined;
}

describe('one source for the stack and the emulator', () => {
  it('a route added to the route table becomes a method of the API', () => {
    const scratch = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = stageConfig('staging', () => undefined, {});
    const data = new DataStack(scratch, 'D', { config });
    const hold = {
      operationId: 'cancelOrder' as const,
      method: 'DELETE' as const,
      path: '/store/orders/{orderId}/hold',
      streaming: false,
    };
    const routes = [...ROUTES, hold];
    const template = Template.fromStack(
      new ApiStack(scratch, 'A', {
        config,
        tables: data.tables,
        stageRoutes: { v1: routes, v2: [...ROUTES_V2, hold] },
      }),
    );
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'hold' });
    expect(
      resources(template, 'AWS::ApiGateway::Method').filter(
        ([, m]) => m.Properties.HttpMethod === 'DELETE',
      ),
    ).toHaveLength(2);
    expect(emulatorRoutesTo(routes, 'DELETE', '/store/orders/7/hold')).toBe('cancelOrder');
  });

  it('a changed gateway response changes the deployed answer and the emulated one', async () => {
    const scratch = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = stageConfig('staging', () => undefined, {});
    const data = new DataStack(scratch, 'D', { config });
    const gatewayResponses = GATEWAY_RESPONSES.map((r) =>
      r.type === 'MISSING_AUTHENTICATION_TOKEN' ? { ...r, code: 'BAD_REQUEST' as const } : r,
    );
    const template = Template.fromStack(
      new ApiStack(scratch, 'A', { config, tables: data.tables, gatewayResponses }),
    );
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'MISSING_AUTHENTICATION_TOKEN',
      StatusCode: '400',
      ResponseTemplates: {
        'application/json': JSON.stringify(
          gatewayAnswer('MISSING_AUTHENTICATION_TOKEN', gatewayResponses).body,
        ),
      },
    });
    const listener = createGateway({
      functions: { listOrders: null, cancelOrder: null },
      authorizer: null,
      authorizerTtlSeconds: 0,
      gatewayResponses,
    });
    const server = createServer((req, res) => void listener(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(
        `http://127.0.0.1:${(server.address() as { port: number }).port}/v1/nowhere`,
      );
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual(
        gatewayAnswer('MISSING_AUTHENTICATION_TOKEN', gatewayResponses).body,
      );
    } finally {
      server.close();
    }
  });

  it('the deployed authorizer and the emulator refuse the same Authorization headers, the same way', async () => {
    const [, authorizer] = resources(staging.api, 'AWS::ApiGateway::Authorizer')[0]!;
    const deployed = new RegExp(String(authorizer.Properties.IdentityValidationExpression));
    const deployedAnswer = (type: string) => {
      const response = resources(staging.api, 'AWS::ApiGateway::GatewayResponse').find(
        ([, r]) => r.Properties.ResponseType === type,
      )![1].Properties as { StatusCode: string; ResponseTemplates: Record<string, string> };
      return {
        status: Number(response.StatusCode),
        body: JSON.parse(response.ResponseTemplates['application/json']!) as unknown,
      };
    };
    const key = generateApiKey();
    const headers = [
      [`Bearer ${key}`, 'valid'],
      [`bearer ${key}`, 'valid'],
      [`BEARER   ${key}`, 'valid'],
      ['Basic dXNlcjpwYXNzd29yZA==', 'junk'],
      ['Bearer not-a-key', 'junk'],
      [`Bearer ${key}x`, 'junk'],
      [`Bearer ${key.slice(0, -1)}`, 'junk'],
      [`Token ${key}`, 'junk'],
      [key, 'junk'],
    ] as const;
    // The key store refuses every key: API Gateway's ACCESS_DENIED.
    let invocations = 0;
    const deny = (event: { methodArn: string }) => {
      invocations += 1;
      return Promise.resolve({
        principalId: 'anonymous',
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: event.methodArn }],
        },
      });
    };
    const listener = createGateway({
      functions: { listOrders: null, cancelOrder: null },
      authorizer: deny,
      authorizerTtlSeconds: 0,
    });
    const server = createServer((req, res) => void listener(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1/store/orders`;
      for (const [header, kind] of headers) {
        expect(deployed.test(header), header).toBe(kind === 'valid');
        const before = invocations;
        const response = await fetch(url, { headers: { Authorization: header } });
        // Junk never reaches the authorizer (UNAUTHORIZED); a refused key is a Deny (ACCESS_DENIED).
        const expected = deployedAnswer(kind === 'valid' ? 'ACCESS_DENIED' : 'UNAUTHORIZED');
        expect({ status: response.status, body: await response.json() }, header).toEqual(expected);
        expect(response.headers.get('www-authenticate'), header).toBe(
          'Bearer realm="store-orders"',
        );
        expect(invocations - before, header).toBe(kind === 'valid' ? 1 : 0);
      }
    } finally {
      server.close();
    }
  });
});

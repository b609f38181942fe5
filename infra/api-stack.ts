/**
 * The stateless part of a stage: the functions and the REST API in front of them (a stage per
 * version), its
 * gateway responses, its monitoring (alarms, dashboard), its deployments (CodeDeploy through each
 * function's `live` alias) and its logs (named per stage, with saved queries). Functions, resources, methods, gateway
 * responses and the authorizer's identity validation are generated from the same definitions the
 * local emulator applies (lib/functions.ts, lib/api/routes.ts, lib/api/gateway-responses.ts,
 * lib/keys/api-key.ts).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AuthorizationType,
  AwsIntegration,
  DomainName,
  EndpointType,
  IdentitySource,
  Integration,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  MockIntegration,
  PassthroughBehavior,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  SecurityPolicy,
  Stage as ApiGatewayStage,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { LogGroup, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription, UrlSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import {
  GATEWAY_RESPONSES,
  gatewayAnswer,
  methodNotAllowedAnswer,
  type GatewayResponseDefinition,
} from '../lib/api/gateway-responses.ts';
import {
  API_STAGE,
  API_STAGES,
  methodsByPath,
  STAGE_ROUTES,
  type ApiStage,
  type HttpMethod,
  type OperationId,
  type RouteDefinition,
} from '../lib/api/routes.ts';
import { ordersIndexesEnv, stageOrderIndexes } from '../lib/dynamodb/order-indexes.ts';
import {
  EXECUTION_LOG_SOURCES,
  executionLogGroupName,
  FUNCTION_OUTPUTS,
  LOG_GROUP_OUTPUTS,
  logGroupName,
  STACK_OUTPUTS,
  API_URL_OUTPUTS,
  type LogSource,
} from '../lib/deployment.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { BEARER_KEY_PATTERN } from '../lib/keys/api-key.ts';
import { stageMetricsNamespace } from '../lib/metrics.ts';
import { accessLogFormat } from './access-log.ts';
import { addAlarms, addDeploymentAlarms } from './alarms.ts';
import type { StageConfig } from './config.ts';
import { ServiceFunction } from './constructs/service-function.ts';
import { addDashboard } from './dashboard.ts';
import type { StageTables } from './data-stack.ts';
import { SafeDeployments } from './deployments.ts';
import { LogQueries } from './log-queries.ts';
import { Monitoring } from './monitoring.ts';

export interface ApiStackProps extends StackProps {
  readonly config: StageConfig;
  readonly tables: StageTables;
  /**
   * Each version's route table (default: the service's); a parameter so tests can prove the API
   * follows it.
   */
  readonly stageRoutes?: Readonly<Record<ApiStage, readonly RouteDefinition[]>>;
  readonly gatewayResponses?: readonly GatewayResponseDefinition[];
}

/** Header values in API Gateway mappings are literals in single quotes. */
const literal = (value: string) => `'${value}'`;

/** Request body types the 405 mock maps (API Gateway selects templates by exact type). */
const MOCK_CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
  'application/xml',
  'text/xml',
  'application/octet-stream',
];

/** A path and method of the API, and the route each version (stage) serves it with. */
interface RouteSlot {
  readonly path: string;
  readonly method: HttpMethod;
  readonly byStage: Readonly<Record<ApiStage, RouteDefinition>>;
  /** Whether every version serves it with the same function. */
  readonly shared: boolean;
}

/**
 * The route of each path and method in every version, computed once. API Gateway's stages share
 * one tree of methods, so every version must serve the same paths and methods, streamed the same
 * way.
 */
function routeSlots(
  stageRoutes: Readonly<Record<ApiStage, readonly RouteDefinition[]>>,
): RouteSlot[] {
  const slots: RouteSlot[] = [];
  for (const [path, methods] of methodsByPath(stageRoutes[API_STAGE])) {
    for (const method of methods) {
      const byStage = {} as Record<ApiStage, RouteDefinition>;
      for (const apiStage of API_STAGES) {
        const route = stageRoutes[apiStage].find((r) => r.path === path && r.method === method);
        if (!route) throw new Error(`${method} ${path} is in ${API_STAGE} but not in ${apiStage}`);
        if (route.streaming !== byStage[API_STAGE]?.streaming && apiStage !== API_STAGE) {
          throw new Error(`${method} ${path} streams in one version and not in another`);
        }
        byStage[apiStage] = route;
      }
      const operations = new Set(API_STAGES.map((apiStage) => byStage[apiStage].operationId));
      slots.push({ path, method, byStage, shared: operations.size === 1 });
    }
  }
  return slots;
}

/** A path and method as a name: `GET_store_orders` (with `separator` between its words). */
function slotName(slot: Pick<RouteSlot, 'path' | 'method'>, separator: string): string {
  return `${slot.method}${slot.path.replace(/[^A-Za-z0-9]+/g, separator)}`;
}

/** The stage variable that names the function of a path and method whose function differs by version. */
function functionVariable(slot: Pick<RouteSlot, 'path' | 'method'>): string {
  return `${slotName(slot, '_')}Function`;
}

/** A version's stage variables: the function of each path and method whose function differs. */
function stageVariables(
  slots: readonly RouteSlot[],
  apiStage: ApiStage,
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const slot of slots.filter((s) => !s.shared)) {
    variables[functionVariable(slot)] =
      functions[slot.byStage[apiStage].operationId].live.functionArn;
  }
  return variables;
}

/**
 * The integration of a path and method, and API Gateway's permission to invoke its function in
 * each version, through the function's `live` alias (which deploys move: ./deployments.ts). The
 * alias's ARN (`…:function:<name>:live`) goes in the invocation path: Lambda's Invoke and
 * InvokeWithResponseStream (the lists stream) both take a name with a qualifier. One function in
 * every version: its ARN, as it is; a function that differs by version: the stage variable that
 * names it (API Gateway substitutes it per stage).
 */
function integrationOf(
  api: RestApi,
  slot: RouteSlot,
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
): Integration {
  const route = slot.byStage[API_STAGE];
  const options = {
    responseTransferMode: route.streaming
      ? ResponseTransferMode.STREAM
      : ResponseTransferMode.BUFFERED,
    ...(route.streaming
      ? {
          timeout: Duration.seconds(
            Math.max(
              ...API_STAGES.map((s) => FUNCTIONS[slot.byStage[s].operationId].timeoutSeconds),
            ),
          ),
        }
      : {}),
  };
  const principal = new ServicePrincipal('apigateway.amazonaws.com');
  const permit = (apiStage: ApiStage) =>
    functions[slot.byStage[apiStage].operationId].live.addPermission(
      `ApiPermission.${apiStage}.${slotName(slot, '.')}`,
      {
        principal,
        // A path parameter is any value: `{orderId}` → `*`, as API Gateway's method ARNs match.
        sourceArn: api.arnForExecuteApi(
          slot.method,
          slot.path.replace(/\{[^}]+\}/g, '*'),
          apiStage,
        ),
      },
    );
  if (slot.shared) {
    // The integration permits its method in v1's stage; the other versions' stages too.
    for (const apiStage of API_STAGES.filter((s) => s !== API_STAGE)) permit(apiStage);
    return new LambdaIntegration(functions[route.operationId].live, { proxy: true, ...options });
  }
  for (const apiStage of API_STAGES) permit(apiStage);
  const target = `\${stageVariables.${functionVariable(slot)}}`;
  return new AwsIntegration({
    proxy: true,
    service: 'lambda',
    path: route.streaming
      ? `2021-11-15/functions/${target}/response-streaming-invocations`
      : `2015-03-31/functions/${target}/invocations`,
    options,
  });
}

export class ApiStack extends Stack {
  readonly api: RestApi;
  /** The API's stage of each version (`v1`: its deployment stage). */
  readonly apiStages: Readonly<Record<ApiStage, ApiGatewayStage>>;
  readonly functions: Readonly<Record<OperationId | 'authorizer', ServiceFunction>>;
  readonly authorizer: TokenAuthorizer;
  /** Where every alarm of the stage notifies (alarm and OK). */
  readonly alarmTopic: Topic;
  readonly monitoring: Monitoring;
  readonly deployments: SafeDeployments;
  readonly logQueries: LogQueries;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const { config, tables } = props;
    const slots = routeSlots(props.stageRoutes ?? STAGE_ROUTES);

    // ── Functions ────────────────────────────────────────────────────────────────────────────
    const common = {
      logRetention: config.logRetention,
      logRemovalPolicy: config.removalPolicy,
      logLevel: config.logLevel,
      metricsNamespace: stageMetricsNamespace(config.stage),
    };
    const limiterEnvironment = {
      RATE_LIMIT_FAILURE_MODE: config.rateLimiter.failureMode,
      RATE_LIMIT_BAN_AFTER_REFUSALS: String(config.rateLimiter.banAfterRefusals),
      RATE_LIMIT_BAN_SECONDS: String(config.rateLimiter.banSeconds),
    };
    // listOrders holds an execution for as long as it streams: its reserved concurrency caps it,
    // so that long lists cannot take every execution from cancelOrder and the authorizer.
    const listOrders = new ServiceFunction(this, 'ListOrders', {
      ...common,
      logGroupName: logGroupName(config.stage, 'listOrders'),
      definition: FUNCTIONS.listOrders,
      environment: limiterEnvironment,
      reservedConcurrentExecutions: config.concurrency.listOrdersReserved,
      provisionedConcurrency: config.concurrency.provisioned.listOrders,
    })
      // BatchGetItem: the list's version items (its ETag), in the orders table.
      .useTable('orders', tables.orders, ['dynamodb:Query', 'dynamodb:BatchGetItem'])
      .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
    const cancelOrder = new ServiceFunction(this, 'CancelOrder', {
      ...common,
      logGroupName: logGroupName(config.stage, 'cancelOrder'),
      definition: FUNCTIONS.cancelOrder,
      environment: limiterEnvironment,
      provisionedConcurrency: config.concurrency.provisioned.cancelOrder,
    })
      // GetItem: whether the cancel would change anything, read before the version's mark.
      .useTable('orders', tables.orders, ['dynamodb:GetItem', 'dynamodb:UpdateItem'])
      .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
    // The v2 list: the table's shards, and the indexes the stage has (one per deploy: config.ts).
    const listOrderPages = new ServiceFunction(this, 'ListOrderPages', {
      ...common,
      logGroupName: logGroupName(config.stage, 'listOrderPages'),
      definition: FUNCTIONS.listOrderPages,
      environment: { ...limiterEnvironment, ...ordersIndexesEnv(config.ordersIndexes) },
      provisionedConcurrency: config.concurrency.provisioned.listOrderPages,
    })
      // Query: the shards and the indexes; BatchGetItem: the version items and a page's orders
      // by key (strongly consistent); GetItem: the indexes' readiness marker.
      .useTable(
        'orders',
        tables.orders,
        ['dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:GetItem'],
        { queriedIndexes: stageOrderIndexes(config.ordersIndexes) },
      )
      .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
    const authorizerFunction = new ServiceFunction(this, 'Authorizer', {
      ...common,
      logGroupName: logGroupName(config.stage, 'authorizer'),
      definition: FUNCTIONS.authorizer,
      provisionedConcurrency: config.concurrency.provisioned.authorizer,
    }).useTable('apiKeys', tables.apiKeys, ['dynamodb:GetItem']);
    const functions = { listOrders, listOrderPages, cancelOrder, authorizer: authorizerFunction };
    this.functions = functions;

    // ── API ──────────────────────────────────────────────────────────────────────────────────
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      logGroupName: logGroupName(config.stage, 'access'),
      retention: config.logRetention,
      removalPolicy: config.removalPolicy,
    });
    // One REST API, a stage per version of it (lib/api/routes.ts): the same throttle, tracing,
    // logs and access-log format in each; a path and method whose function differs by version
    // names it in a stage variable (below).
    const stageOptions = (apiStage: ApiStage) => ({
      tracingEnabled: true,
      metricsEnabled: true,
      loggingLevel: MethodLoggingLevel.ERROR,
      dataTraceEnabled: false,
      throttlingRateLimit: config.throttling.rateLimit,
      throttlingBurstLimit: config.throttling.burstLimit,
      accessLogDestination: new LogGroupLogDestination(accessLogs),
      // JSON access logs with the caller's key id and the stage; never the Authorization header.
      accessLogFormat: accessLogFormat(),
      variables: stageVariables(slots, apiStage, functions),
    });
    const api = new RestApi(this, 'Api', {
      restApiName: `store-orders-${config.stage}`,
      description: `Store Orders API (${config.stage})`,
      endpointTypes: [EndpointType.REGIONAL],
      // The CloudWatch role is an account-wide setting (one AWS::ApiGateway::Account per account
      // and region): only the stage configured to own it creates it, and deleting that stack
      // keeps it (config.ts apiGatewayAccountRole; docs/deploy.md).
      ...(config.apiGatewayAccountRole
        ? { cloudWatchRole: true, cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN }
        : { cloudWatchRole: false }),
      deployOptions: { stageName: API_STAGE, ...stageOptions(API_STAGE) },
    });
    this.api = api;
    // v1 is the API's deployment stage; each other version, a stage of the same deployment.
    const apiStages = Object.fromEntries(
      API_STAGES.map((apiStage) => [
        apiStage,
        apiStage === API_STAGE
          ? api.deploymentStage
          : new ApiGatewayStage(this, `Stage${apiStage.toUpperCase()}`, {
              deployment: api.latestDeployment!,
              stageName: apiStage,
              ...stageOptions(apiStage),
            }),
      ]),
    ) as Record<ApiStage, ApiGatewayStage>;
    this.apiStages = apiStages;
    // API Gateway's execution log of each version (loggingLevel ERROR: why a request failed
    // before or between the functions, by request id) goes to a group named by API Gateway's
    // rule: created here first, so that it is kept as long as the stage's other logs and listed
    // in the outputs.
    const executionLogs = {} as Record<ApiStage, LogGroup>;
    for (const apiStage of API_STAGES) {
      executionLogs[apiStage] = new LogGroup(
        this,
        apiStage === API_STAGE ? 'ExecutionLogs' : `ExecutionLogs${apiStage.toUpperCase()}`,
        {
          logGroupName: executionLogGroupName(api.restApiId, apiStage),
          retention: config.logRetention,
          removalPolicy: config.removalPolicy,
        },
      );
      apiStages[apiStage].node.addDependency(executionLogs[apiStage]);
    }

    // A header that cannot hold a key is refused with 401 before the authorizer runs: junk
    // costs no invocation and no key-store read.
    // Every function is invoked through its `live` alias, which deploys move (./deployments.ts).
    const authorizer = new TokenAuthorizer(this, 'ApiKeyAuthorizer', {
      handler: authorizerFunction.live,
      identitySource: IdentitySource.header('Authorization'),
      validationRegex: BEARER_KEY_PATTERN,
      resultsCacheTtl: config.authorizerCacheTtl,
    });
    this.authorizer = authorizer;

    for (const [path, methods] of methodsByPath(slots.map((slot) => slot.byStage[API_STAGE]))) {
      const resource = api.root.resourceForPath(path);
      for (const slot of slots.filter((s) => s.path === path)) {
        const { operationId } = slot.byStage[API_STAGE];
        resource.addMethod(slot.method, integrationOf(api, slot, functions), {
          authorizer,
          authorizationType: AuthorizationType.CUSTOM,
          // The same in every version (a test holds them to it), as the OpenAPI documents name it.
          operationName: operationId,
        });
      }
      // Any other method on a known path: 405 with Allow, before authentication.
      const answer = methodNotAllowedAnswer(methods);
      const status = String(answer.status);
      resource.addMethod(
        'ANY',
        new MockIntegration({
          // The mock reads its status from the mapped body: map every common body type, so that
          // a POST with a form or text body gets the 405 too. The only integration response is
          // the default one, so any status the mock sees maps to 405.
          passthroughBehavior: PassthroughBehavior.WHEN_NO_MATCH,
          requestTemplates: Object.fromEntries(
            MOCK_CONTENT_TYPES.map((type) => [type, '{"statusCode": 200}']),
          ),
          integrationResponses: [
            {
              statusCode: status,
              responseTemplates: { 'application/json': JSON.stringify(answer.body) },
              responseParameters: Object.fromEntries(
                Object.entries(answer.headers).map(([name, value]) => [
                  `method.response.header.${name}`,
                  literal(value),
                ]),
              ),
            },
          ],
        }),
        {
          authorizationType: AuthorizationType.NONE,
          methodResponses: [
            {
              statusCode: status,
              responseParameters: Object.fromEntries(
                Object.keys(answer.headers).map((name) => [`method.response.header.${name}`, true]),
              ),
            },
          ],
        },
      );
    }

    for (const definition of props.gatewayResponses ?? GATEWAY_RESPONSES) {
      const answer = gatewayAnswer(definition.type, props.gatewayResponses);
      api.addGatewayResponse(`Gateway${definition.type}`, {
        type: ResponseType.of(definition.type),
        statusCode: String(answer.status),
        responseHeaders: Object.fromEntries(
          Object.entries(answer.headers).map(([name, value]) => [name, literal(value)]),
        ),
        templates: { 'application/json': JSON.stringify(answer.body) },
      });
    }

    // Each version's base URL: the stage's own address, or the custom domain's base path.
    const baseUrls = Object.fromEntries(
      API_STAGES.map((apiStage) => [
        apiStage,
        `https://${api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${apiStage}`,
      ]),
    ) as Record<ApiStage, string>;
    if (config.customDomain) {
      const domain = new DomainName(this, 'Domain', {
        domainName: config.customDomain.domainName,
        certificate: Certificate.fromCertificateArn(
          this,
          'Certificate',
          config.customDomain.certificateArn,
        ),
        endpointType: EndpointType.REGIONAL,
        securityPolicy: SecurityPolicy.TLS_1_2,
      });
      for (const apiStage of API_STAGES) {
        domain.addBasePathMapping(api, { basePath: apiStage, stage: apiStages[apiStage] });
        baseUrls[apiStage] = `https://${config.customDomain.domainName}/${apiStage}`;
      }
      new CfnOutput(this, 'CustomDomainTarget', {
        value: domain.domainNameAliasDomainName,
        description: `Point ${config.customDomain.domainName} here (CNAME or alias)`,
      });
    }
    for (const apiStage of API_STAGES) {
      new CfnOutput(this, API_URL_OUTPUTS[apiStage], {
        value: baseUrls[apiStage],
        description: `Base URL of the API's ${apiStage} (ends in /${apiStage})`,
      });
    }

    this.alarmTopic = new Topic(this, 'Alarms', {
      displayName: `Store Orders ${config.stage} alarms`,
      enforceSSL: true,
    });
    // Whom the alarms reach: the stage's alarmSubscriptions (each confirms once; docs/operations.md).
    for (const { protocol, endpoint } of config.alarmSubscriptions) {
      this.alarmTopic.addSubscription(
        protocol === 'email' ? new EmailSubscription(endpoint) : new UrlSubscription(endpoint),
      );
    }
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.alarmTopic.topicArn,
      description: 'The alarms notify this topic (subscribers: <stage>:alarmSubscriptions)',
    });
    new CfnOutput(this, STACK_OUTPUTS.restApiId, {
      value: api.restApiId,
      description: 'The REST API id (aws apigateway … --rest-api-id)',
    });
    for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
      new CfnOutput(this, FUNCTION_OUTPUTS[name], {
        value: fn.functionName,
        description: `The ${name} function (aws lambda … --function-name; its alias is live)`,
      });
    }
    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      api,
      apiStages,
      functions,
    });
    const alarms = addAlarms(this.monitoring, this.alarmTopic);
    const deploymentAlarms = addDeploymentAlarms(this.monitoring, this.alarmTopic);
    addDashboard(this.monitoring, [...alarms, ...Object.values(deploymentAlarms).flat()]);
    this.deployments = new SafeDeployments(this, 'Deployments', {
      config,
      functions,
      alarms: deploymentAlarms,
    });

    // ── Logs: named per stage, listed in the outputs, with saved queries ────────────────────
    // Each version's execution log by its source (EXECUTION_LOG_SOURCES), added below.
    const stageGroups: Partial<Record<LogSource, ILogGroup>> = {
      access: accessLogs,
      listOrders: listOrders.logs,
      listOrderPages: listOrderPages.logs,
      cancelOrder: cancelOrder.logs,
      authorizer: authorizerFunction.logs,
      deployHooks: this.deployments.hooks.logs,
    };
    for (const apiStage of API_STAGES) {
      stageGroups[EXECUTION_LOG_SOURCES[apiStage]] = executionLogs[apiStage];
    }
    const logGroups = stageGroups as Record<LogSource, ILogGroup>;
    const what: Partial<Record<LogSource, string>> = {
      access: 'the API access log (every version)',
      deployHooks: 'the deploy hooks',
      ...Object.fromEntries(
        API_STAGES.map((apiStage) => [
          EXECUTION_LOG_SOURCES[apiStage],
          `API Gateway's execution log of ${apiStage} (errors)`,
        ]),
      ),
    };
    for (const [source, group] of Object.entries(logGroups) as [LogSource, ILogGroup][]) {
      new CfnOutput(this, LOG_GROUP_OUTPUTS[source], {
        value: group.logGroupName,
        description: `Log group: ${what[source] ?? source}`,
      });
    }
    this.logQueries = new LogQueries(this, 'LogQueries', { stage: config.stage, logGroups });
  }
}

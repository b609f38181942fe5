/**
 * The stateless part of a stage: the three functions and the REST API in front of them, its
 * gateway responses, its monitoring (alarms, dashboard), its deployments (CodeDeploy through each
 * function's `live` alias) and its logs (named per stage, with saved queries). Functions, resources, methods, gateway
 * responses and the authorizer's identity validation are generated from the same definitions the
 * local emulator applies (lib/functions.ts, lib/api/routes.ts, lib/api/gateway-responses.ts,
 * lib/keys/api-key.ts).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AuthorizationType,
  DomainName,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  MockIntegration,
  PassthroughBehavior,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  SecurityPolicy,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
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
  methodsByPath,
  ROUTES,
  type OperationId,
  type RouteDefinition,
} from '../lib/api/routes.ts';
import {
  executionLogGroupName,
  FUNCTION_OUTPUTS,
  LOG_GROUP_OUTPUTS,
  logGroupName,
  STACK_OUTPUTS,
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
  /** The route table (default: the service's); a parameter so tests can prove the API follows it. */
  readonly routes?: readonly RouteDefinition[];
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

export class ApiStack extends Stack {
  readonly api: RestApi;
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
    const routes = props.routes ?? ROUTES;

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
    const authorizerFunction = new ServiceFunction(this, 'Authorizer', {
      ...common,
      logGroupName: logGroupName(config.stage, 'authorizer'),
      definition: FUNCTIONS.authorizer,
      provisionedConcurrency: config.concurrency.provisioned.authorizer,
    }).useTable('apiKeys', tables.apiKeys, ['dynamodb:GetItem']);
    const functions = { listOrders, cancelOrder, authorizer: authorizerFunction };
    this.functions = functions;

    // ── API ──────────────────────────────────────────────────────────────────────────────────
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      logGroupName: logGroupName(config.stage, 'access'),
      retention: config.logRetention,
      removalPolicy: config.removalPolicy,
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
      deployOptions: {
        stageName: API_STAGE,
        tracingEnabled: true,
        metricsEnabled: true,
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        throttlingRateLimit: config.throttling.rateLimit,
        throttlingBurstLimit: config.throttling.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        // JSON access logs with the caller's key id; never the Authorization header.
        accessLogFormat: accessLogFormat(),
      },
    });
    this.api = api;
    // API Gateway's execution log (loggingLevel ERROR: why a request failed before or between
    // the functions, by request id) goes to a group named by API Gateway's rule: created here
    // first, so that it is kept as long as the stage's other logs and listed in the outputs.
    const executionLogs = new LogGroup(this, 'ExecutionLogs', {
      logGroupName: executionLogGroupName(api.restApiId),
      retention: config.logRetention,
      removalPolicy: config.removalPolicy,
    });
    api.deploymentStage.node.addDependency(executionLogs);

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

    for (const [path, methods] of methodsByPath(routes)) {
      const resource = api.root.resourceForPath(path);
      for (const route of routes.filter((r) => r.path === path)) {
        resource.addMethod(
          route.method,
          // The alias's ARN (`…:function:<name>:live`) in the invocation path: Lambda's Invoke and
          // InvokeWithResponseStream (listOrders streams) both take a name with a qualifier
          // (their FunctionName shape, NamespacedFunctionName, allows `:<alias>`).
          new LambdaIntegration(functions[route.operationId].live, {
            proxy: true,
            responseTransferMode: route.streaming
              ? ResponseTransferMode.STREAM
              : ResponseTransferMode.BUFFERED,
            ...(route.streaming
              ? { timeout: Duration.seconds(FUNCTIONS[route.operationId].timeoutSeconds) }
              : {}),
          }),
          {
            authorizer,
            authorizationType: AuthorizationType.CUSTOM,
            operationName: route.operationId,
          },
        );
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

    let baseUrl = `https://${api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${API_STAGE}`;
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
      domain.addBasePathMapping(api, { basePath: API_STAGE, stage: api.deploymentStage });
      baseUrl = `https://${config.customDomain.domainName}/${API_STAGE}`;
      new CfnOutput(this, 'CustomDomainTarget', {
        value: domain.domainNameAliasDomainName,
        description: `Point ${config.customDomain.domainName} here (CNAME or alias)`,
      });
    }
    new CfnOutput(this, STACK_OUTPUTS.apiUrl, {
      value: baseUrl,
      description: 'Base URL of the API (ends in /v1)',
    });

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
    this.monitoring = new Monitoring(this, 'Monitoring', { config, api, functions });
    const alarms = addAlarms(this.monitoring, this.alarmTopic);
    const deploymentAlarms = addDeploymentAlarms(this.monitoring, this.alarmTopic);
    addDashboard(this.monitoring, [...alarms, ...Object.values(deploymentAlarms).flat()]);
    this.deployments = new SafeDeployments(this, 'Deployments', {
      config,
      functions,
      alarms: deploymentAlarms,
    });

    // ── Logs: named per stage, listed in the outputs, with saved queries ────────────────────
    const logGroups: Record<LogSource, ILogGroup> = {
      access: accessLogs,
      listOrders: listOrders.logs,
      cancelOrder: cancelOrder.logs,
      authorizer: authorizerFunction.logs,
      deployHooks: this.deployments.hooks.logs,
      execution: executionLogs,
    };
    const what: Partial<Record<LogSource, string>> = {
      access: 'the API access log',
      execution: "API Gateway's execution log (errors)",
      deployHooks: 'the deploy hooks',
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

/**
 * The stateless part of a stage: the three functions and the REST API in front of them, its
 * gateway responses, its alarms. Resources, methods and gateway responses are generated from the
 * same definitions the local emulator applies (lib/api/routes.ts, lib/api/gateway-responses.ts).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AccessLogFormat,
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
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
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
import { STACK_OUTPUTS } from '../lib/deployment.ts';
import { METRIC_NAMES, SERVICE_NAME, stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageConfig } from './config.ts';
import { ServiceFunction } from './constructs/service-function.ts';
import type { StageTables } from './data-stack.ts';

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

/** Timeout of listOrders, which streams: the whole table, however large, must get through. */
const LIST_TIMEOUT = Duration.minutes(5);

export class ApiStack extends Stack {
  readonly api: RestApi;
  readonly functions: Readonly<Record<OperationId | 'authorizer', ServiceFunction>>;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const { config, tables } = props;
    const routes = props.routes ?? ROUTES;

    // ── Functions ────────────────────────────────────────────────────────────────────────────
    const common = {
      logRetention: config.logRetention,
      logRemovalPolicy: config.removalPolicy,
      logLevel: config.logLevel,
    };
    const limiterEnvironment = {
      RATE_LIMIT_FAILURE_MODE: config.rateLimiter.failureMode,
      RATE_LIMIT_BAN_AFTER_REFUSALS: String(config.rateLimiter.banAfterRefusals),
      RATE_LIMIT_BAN_SECONDS: String(config.rateLimiter.banSeconds),
      POWERTOOLS_METRICS_NAMESPACE: stageMetricsNamespace(config.stage),
    };
    // Memory: listOrders merges and serialises up to the whole table (CPU scales with memory);
    // the other two do one DynamoDB call each, where 512 MB keeps cold starts short.
    const listOrders = new ServiceFunction(this, 'ListOrders', {
      ...common,
      entry: 'list-orders.ts',
      description: 'GET /store/orders: every order, sorted by id, streamed',
      memorySize: 1024,
      timeout: LIST_TIMEOUT,
      environment: limiterEnvironment,
    })
      .useTable('orders', tables.orders, ['dynamodb:Query'])
      .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
    const cancelOrder = new ServiceFunction(this, 'CancelOrder', {
      ...common,
      entry: 'cancel-order.ts',
      description: 'DELETE /store/orders/{orderId}: pending to cancelled',
      memorySize: 512,
      timeout: Duration.seconds(10),
      environment: limiterEnvironment,
    })
      .useTable('orders', tables.orders, ['dynamodb:UpdateItem'])
      .useTable('rateLimits', tables.rateLimits, ['dynamodb:UpdateItem']);
    const authorizerFunction = new ServiceFunction(this, 'Authorizer', {
      ...common,
      entry: 'authorizer.ts',
      description: 'API key authorizer: key to plan and limits',
      memorySize: 512,
      timeout: Duration.seconds(10),
    }).useTable('apiKeys', tables.apiKeys, ['dynamodb:GetItem']);
    const functions = { listOrders, cancelOrder, authorizer: authorizerFunction };
    this.functions = functions;

    // ── API ──────────────────────────────────────────────────────────────────────────────────
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: config.logRetention,
      removalPolicy: config.removalPolicy,
    });
    const api = new RestApi(this, 'Api', {
      restApiName: `store-orders-${config.stage}`,
      description: `Store Orders API (${config.stage})`,
      endpointTypes: [EndpointType.REGIONAL],
      cloudWatchRole: true,
      // The role is an account-wide setting both stages share: deleting one stage must not
      // take it away from the other.
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: API_STAGE,
        tracingEnabled: true,
        metricsEnabled: true,
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        throttlingRateLimit: config.throttling.rateLimit,
        throttlingBurstLimit: config.throttling.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        // JSON access logs; the Authorization header is never among the fields.
        accessLogFormat: AccessLogFormat.jsonWithStandardFields({
          caller: false,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: true,
        }),
      },
    });
    this.api = api;

    const authorizer = new TokenAuthorizer(this, 'ApiKeyAuthorizer', {
      handler: authorizerFunction,
      identitySource: IdentitySource.header('Authorization'),
      resultsCacheTtl: config.authorizerCacheTtl,
    });

    for (const [path, methods] of methodsByPath(routes)) {
      const resource = api.root.resourceForPath(path);
      for (const route of routes.filter((r) => r.path === path)) {
        resource.addMethod(
          route.method,
          new LambdaIntegration(functions[route.operationId], {
            proxy: true,
            responseTransferMode: route.streaming
              ? ResponseTransferMode.STREAM
              : ResponseTransferMode.BUFFERED,
            ...(route.streaming ? { timeout: LIST_TIMEOUT } : {}),
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

    this.addAlarms(config, [listOrders, cancelOrder, authorizerFunction], authorizerFunction);
  }

  private addAlarms(
    config: StageConfig,
    all: readonly ServiceFunction[],
    authorizerFunction: ServiceFunction,
  ): void {
    const topic = new Topic(this, 'Alarms', {
      displayName: `Store Orders ${config.stage} alarms`,
      enforceSSL: true,
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: topic.topicArn,
      description: 'Subscribe to be told of alarms',
    });
    const period = Duration.minutes(5);
    const alarm = (id: string, description: string, metric: IMetric, threshold: number) => {
      new Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }).addAlarmAction(new SnsAction(topic));
    };
    const { alarms } = config;
    alarm(
      'ServerErrorRate',
      `5XX answers reach ${alarms.serverErrorRate * 100}% of requests`,
      new MathExpression({
        expression: 'IF(requests > 0, errors / requests, 0)',
        usingMetrics: {
          errors: this.api.metricServerError({ period, statistic: 'Sum' }),
          requests: this.api.metricCount({ period, statistic: 'Sum' }),
        },
        period,
      }),
      alarms.serverErrorRate,
    );
    alarm(
      'LatencyP99',
      `p99 latency reaches ${alarms.p99LatencyMs} ms`,
      this.api.metricLatency({ period, statistic: 'p99' }),
      alarms.p99LatencyMs,
    );
    alarm(
      'AuthorizerErrors',
      'The authorizer fails (clients get 503)',
      authorizerFunction.metricErrors({ period, statistic: 'Sum' }),
      alarms.authorizerErrors,
    );
    alarm(
      'FunctionThrottles',
      'Lambda throttles a function (concurrency exhausted)',
      new MathExpression({
        expression: all.map((_, i) => `t${i}`).join(' + '),
        usingMetrics: Object.fromEntries(
          all.map((fn, i) => [`t${i}`, fn.metricThrottles({ period, statistic: 'Sum' })]),
        ),
        period,
      }),
      alarms.throttles,
    );
    alarm(
      'RateLimiterStoreFailures',
      `The rate limiter cannot reach its counters (failing ${config.rateLimiter.failureMode})`,
      new Metric({
        namespace: stageMetricsNamespace(config.stage),
        metricName: METRIC_NAMES.limiterStoreFailures,
        dimensionsMap: { service: SERVICE_NAME },
        period,
        statistic: 'Sum',
      }),
      alarms.limiterStoreFailures,
    );
  }
}

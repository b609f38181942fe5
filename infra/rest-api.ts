/**
 * A stage's REST API, in the order a request meets it: one API with a stage per version (the same
 * throttle, tracing, access-log format and execution log in each), the custom domain's base
 * paths, the authorizer, the methods of the route tables (./api-routes.ts) and the gateway
 * responses (lib/api/gateway-responses.ts); and each version's base URL as an output.
 */
import { CfnOutput, RemovalPolicy, type Stack } from 'aws-cdk-lib';
import {
  DomainName,
  EndpointType,
  IdentitySource,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
  SecurityPolicy,
  Stage as ApiGatewayStage,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import {
  GATEWAY_RESPONSES,
  gatewayAnswer,
  type GatewayResponseDefinition,
} from '../lib/api/gateway-responses.ts';
import { API_STAGE, API_STAGES, type ApiStage } from '../lib/api/routes.ts';
import { API_URL_OUTPUTS, executionLogGroupName, logGroupName } from '../lib/deployment.ts';
import type { FunctionName } from '../lib/functions.ts';
import { BEARER_KEY_PATTERN } from '../lib/keys/api-key.ts';
import { accessLogFormat } from './access-log.ts';
import { addMethods, literal, stageVariables, type RouteSlot } from './api-routes.ts';
import type { StageConfig } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

export interface StageApiProps {
  readonly config: StageConfig;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  /** The paths and methods of every version (./api-routes.ts routeSlots). */
  readonly slots: readonly RouteSlot[];
  readonly gatewayResponses?: readonly GatewayResponseDefinition[];
}

export interface StageApi {
  readonly api: RestApi;
  /** The API's stage of each version (`v1`: its deployment stage). */
  readonly apiStages: Readonly<Record<ApiStage, ApiGatewayStage>>;
  readonly authorizer: TokenAuthorizer;
  /** The access log of every version. */
  readonly accessLogs: LogGroup;
  /** API Gateway's execution log of each version. */
  readonly executionLogs: Readonly<Record<ApiStage, LogGroup>>;
}

/** The REST API of a stage, children of its stack (their ids are the template's). */
export function stageApi(stack: Stack, props: StageApiProps): StageApi {
  const { config, functions, slots, gatewayResponses } = props;
  const accessLogs = new LogGroup(stack, 'AccessLogs', {
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
  const api = new RestApi(stack, 'Api', {
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
  // v1 is the API's deployment stage; each other version, a stage of the same deployment.
  const apiStages = Object.fromEntries(
    API_STAGES.map((apiStage) => [
      apiStage,
      apiStage === API_STAGE
        ? api.deploymentStage
        : new ApiGatewayStage(stack, `Stage${apiStage.toUpperCase()}`, {
            deployment: api.latestDeployment!,
            stageName: apiStage,
            ...stageOptions(apiStage),
          }),
    ]),
  ) as Record<ApiStage, ApiGatewayStage>;
  // API Gateway's execution log of each version (loggingLevel ERROR: why a request failed
  // before or between the functions, by request id) goes to a group named by API Gateway's
  // rule: created here first, so that it is kept as long as the stage's other logs and listed
  // in the outputs.
  const executionLogs = {} as Record<ApiStage, LogGroup>;
  for (const apiStage of API_STAGES) {
    executionLogs[apiStage] = new LogGroup(
      stack,
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
  const authorizer = new TokenAuthorizer(stack, 'ApiKeyAuthorizer', {
    handler: functions.authorizer.live,
    identitySource: IdentitySource.header('Authorization'),
    validationRegex: BEARER_KEY_PATTERN,
    resultsCacheTtl: config.authorizerCacheTtl,
  });

  addMethods(api, slots, functions, authorizer);

  for (const definition of gatewayResponses ?? GATEWAY_RESPONSES) {
    const answer = gatewayAnswer(definition.type, gatewayResponses);
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
      `https://${api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}/${apiStage}`,
    ]),
  ) as Record<ApiStage, string>;
  if (config.customDomain) {
    const domain = new DomainName(stack, 'Domain', {
      domainName: config.customDomain.domainName,
      certificate: Certificate.fromCertificateArn(
        stack,
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
    new CfnOutput(stack, 'CustomDomainTarget', {
      value: domain.domainNameAliasDomainName,
      description: `Point ${config.customDomain.domainName} here (CNAME or alias)`,
    });
  }
  for (const apiStage of API_STAGES) {
    new CfnOutput(stack, API_URL_OUTPUTS[apiStage], {
      value: baseUrls[apiStage],
      description: `Base URL of the API's ${apiStage} (ends in /${apiStage})`,
    });
  }
  return { api, apiStages, authorizer, accessLogs, executionLogs };
}

/**
 * The stateless part of a stage, read in the order of the architecture
 * (docs/architecture.md): the functions (./stage-functions.ts), the REST API in front of them
 * with a stage per version (./rest-api.ts, its methods from the route tables: ./api-routes.ts),
 * their monitoring (the alarm topic, alarms, dashboard: ./monitoring.ts), their deployments
 * (CodeDeploy through each function's `live` alias, with its hooks: ./deployments.ts), and the
 * logs (named per stage, listed in the outputs, with saved queries: ./log-queries.ts). Functions,
 * resources, methods, gateway responses and the authorizer's identity validation are generated
 * from the same definitions the local emulator applies (lib/functions.ts, lib/api/routes.ts,
 * lib/api/gateway-responses.ts, lib/keys/api-key.ts).
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type {
  RestApi,
  Stage as ApiGatewayStage,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription, UrlSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import type { GatewayResponseDefinition } from '../lib/api/gateway-responses.ts';
import {
  API_STAGES,
  STAGE_ROUTES,
  type ApiStage,
  type OperationId,
  type RouteDefinition,
} from '../lib/api/routes.ts';
import {
  EXECUTION_LOG_SOURCES,
  FUNCTION_OUTPUTS,
  LOG_GROUP_OUTPUTS,
  STACK_OUTPUTS,
  type LogSource,
} from '../lib/deployment.ts';
import type { FunctionName } from '../lib/functions.ts';
import { addAlarms, addDeploymentAlarms } from './alarms.ts';
import { routeSlots } from './api-routes.ts';
import type { StageConfig } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import { addDashboard } from './dashboard.ts';
import type { StageTables } from './data-stack.ts';
import { SafeDeployments } from './deployments.ts';
import { LogQueries } from './log-queries.ts';
import { Monitoring } from './monitoring.ts';
import { stageApi } from './rest-api.ts';
import { stageFunctions } from './stage-functions.ts';

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

    // ── Functions ────────────────────────────────────────────────────────────────────────────
    const functions = stageFunctions(this, config, tables);
    this.functions = functions;

    // ── API ──────────────────────────────────────────────────────────────────────────────────
    const api = stageApi(this, {
      config,
      functions,
      slots: routeSlots(props.stageRoutes ?? STAGE_ROUTES),
      gatewayResponses: props.gatewayResponses,
    });
    this.api = api.api;
    this.apiStages = api.apiStages;
    this.authorizer = api.authorizer;

    // ── Monitoring: whom the alarms tell, the alarms, the dashboard ──────────────────────────
    this.alarmTopic = alarmTopic(this, config);
    new CfnOutput(this, STACK_OUTPUTS.restApiId, {
      value: api.api.restApiId,
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
      api: api.api,
      apiStages: api.apiStages,
      functions,
    });
    const alarms = addAlarms(this.monitoring, this.alarmTopic);
    const deploymentAlarms = addDeploymentAlarms(this.monitoring, this.alarmTopic);
    addDashboard(this.monitoring, [...alarms, ...Object.values(deploymentAlarms).flat()]);

    // ── Deployments: CodeDeploy moves each function's live alias, the hooks judge ────────────
    this.deployments = new SafeDeployments(this, 'Deployments', {
      config,
      functions,
      tables,
      alarms: deploymentAlarms,
    });

    // ── Logs: named per stage, listed in the outputs, with saved queries ────────────────────
    this.logQueries = stageLogs(this, config, {
      functions,
      accessLogs: api.accessLogs,
      executionLogs: api.executionLogs,
      deployHooks: this.deployments.hooks.logs,
    });
  }
}

/** The stage's alarm topic and its subscribers (each confirms once; docs/operations.md). */
function alarmTopic(stack: Stack, config: StageConfig): Topic {
  const topic = new Topic(stack, 'Alarms', {
    displayName: `Store Orders ${config.stage} alarms`,
    enforceSSL: true,
  });
  // Whom the alarms reach: the stage's alarmSubscriptions (each confirms once; docs/operations.md).
  for (const { protocol, endpoint } of config.alarmSubscriptions) {
    topic.addSubscription(
      protocol === 'email' ? new EmailSubscription(endpoint) : new UrlSubscription(endpoint),
    );
  }
  new CfnOutput(stack, 'AlarmTopicArn', {
    value: topic.topicArn,
    description: 'The alarms notify this topic (subscribers: <stage>:alarmSubscriptions)',
  });
  return topic;
}

/** Every log group of the stage as an output, and the saved queries over them. */
function stageLogs(
  stack: Stack,
  config: StageConfig,
  groups: {
    readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
    readonly accessLogs: ILogGroup;
    readonly executionLogs: Readonly<Record<ApiStage, ILogGroup>>;
    readonly deployHooks: ILogGroup;
  },
): LogQueries {
  const { functions, accessLogs, executionLogs, deployHooks } = groups;
  const stageGroups: Partial<Record<LogSource, ILogGroup>> = {
    access: accessLogs,
    ...(Object.fromEntries(
      Object.entries(functions).map(([name, fn]) => [name, fn.logs]),
    ) as Record<FunctionName, ILogGroup>),
    deployHooks,
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
    new CfnOutput(stack, LOG_GROUP_OUTPUTS[source], {
      value: group.logGroupName,
      description: `Log group: ${what[source] ?? source}`,
    });
  }
  return new LogQueries(stack, 'LogQueries', { stage: config.stage, logGroups });
}

/**
 * Names shared by the CDK app and the operator CLI: the deployment stages, their stack names and
 * the stack outputs that `cdk deploy --outputs-file` writes and the CLI reads.
 */
import type { ApiStage } from './api/routes.ts';
import { TABLES } from './dynamodb/tables.ts';
import type { FunctionName } from './functions.ts';
import { METRICS_NAMESPACE_ENV } from './metrics.ts';

export const STAGES = ['staging', 'production'] as const;
export type StageName = (typeof STAGES)[number];

export function isStageName(value: unknown): value is StageName {
  return typeof value === 'string' && (STAGES as readonly string[]).includes(value);
}

/**
 * Each stage's API Gateway throttle (steady requests a second, burst), for all keys together:
 * the stack sets it (infra/config.ts), and the CLI refuses a key limit above it.
 */
export const STAGE_THROTTLES: Readonly<
  Record<StageName, { readonly rateLimit: number; readonly burstLimit: number }>
> = {
  staging: { rateLimit: 200, burstLimit: 400 },
  production: { rateLimit: 2_000, burstLimit: 4_000 },
};

/** The construct id of a stage's cdk.Stage: `Staging`, `Production` (deploy with `'Staging/*'`). */
export function stageId(stage: StageName): string {
  return stage.charAt(0).toUpperCase() + stage.slice(1);
}

/** Stack names inside a stage: the tables, and the functions + API. */
export function stackNames(stage: StageName): { data: string; api: string } {
  return { data: `${stageId(stage)}-Data`, api: `${stageId(stage)}-Api` };
}

/**
 * Whether a table is one of production's, by its name: CloudFormation names a stack's tables
 * after the stack (`Production-Data-OrdersE1F3A9C2-1XK8W2P7ZQ4R`), so production tables are
 * recognised however they were named to a tool.
 */
export function isProductionTableName(name: string): boolean {
  return name.startsWith(`${stackNames('production').data}-`);
}

/**
 * Whether a target is production: the production stage, or any table of production named
 * explicitly (`--table-orders Production-Data-…`).
 */
export function isProductionTarget(stage: string | undefined, tableNames: readonly string[]) {
  return stage === 'production' || tableNames.some(isProductionTableName);
}

/** Output keys of the stacks (CloudFormation output ids). */
export const STACK_OUTPUTS = {
  region: 'Region',
  ordersTable: 'OrdersTableName',
  apiKeysTable: 'ApiKeysTableName',
  rateLimitsTable: 'RateLimitsTableName',
  apiUrl: 'ApiUrl',
  apiUrlV2: 'ApiUrlV2',
  accessLogGroup: 'AccessLogGroupName',
  listOrdersLogGroup: 'ListOrdersLogGroupName',
  cancelOrderLogGroup: 'CancelOrderLogGroupName',
  authorizerLogGroup: 'AuthorizerLogGroupName',
  deployHooksLogGroup: 'DeployHooksLogGroupName',
  executionLogGroup: 'ExecutionLogGroupName',
  deploymentApplication: 'DeploymentApplicationName',
  executionV2LogGroup: 'ExecutionV2LogGroupName',
  listOrderPagesLogGroup: 'ListOrderPagesLogGroupName',
  restApiId: 'RestApiId',
  listOrdersFunction: 'ListOrdersFunctionName',
  listOrderPagesFunction: 'ListOrderPagesFunctionName',
  cancelOrderFunction: 'CancelOrderFunctionName',
  authorizerFunction: 'AuthorizerFunctionName',
} as const;

/** The stack output that gives each version's base URL (`…/v1`, `…/v2`). */
export const API_URL_OUTPUTS: Readonly<Record<ApiStage, string>> = {
  v1: STACK_OUTPUTS.apiUrl,
  v2: STACK_OUTPUTS.apiUrlV2,
};

/** The stack output that names each function (`aws lambda … --function-name`). */
export const FUNCTION_OUTPUTS: Readonly<Record<FunctionName, string>> = {
  listOrders: STACK_OUTPUTS.listOrdersFunction,
  listOrderPages: STACK_OUTPUTS.listOrderPagesFunction,
  cancelOrder: STACK_OUTPUTS.cancelOrderFunction,
  authorizer: STACK_OUTPUTS.authorizerFunction,
};

/**
 * What writes a log group of a stage: the API's access log (both versions'), one of the
 * functions, the deploy hooks, or API Gateway's execution log of one version (`execution`: v1,
 * `executionV2`: v2).
 */
export type LogSource = 'access' | FunctionName | 'deployHooks' | 'execution' | 'executionV2';

/** API Gateway's execution log of each version (an API stage). */
export const EXECUTION_LOG_SOURCES: Readonly<Record<ApiStage, 'execution' | 'executionV2'>> = {
  v1: 'execution',
  v2: 'executionV2',
};

/** The stack output that names each log group (`Staging-Api`, `Production-Api`). */
export const LOG_GROUP_OUTPUTS: Readonly<Record<LogSource, string>> = {
  access: STACK_OUTPUTS.accessLogGroup,
  listOrders: STACK_OUTPUTS.listOrdersLogGroup,
  listOrderPages: STACK_OUTPUTS.listOrderPagesLogGroup,
  cancelOrder: STACK_OUTPUTS.cancelOrderLogGroup,
  authorizer: STACK_OUTPUTS.authorizerLogGroup,
  deployHooks: STACK_OUTPUTS.deployHooksLogGroup,
  execution: STACK_OUTPUTS.executionLogGroup,
  executionV2: STACK_OUTPUTS.executionV2LogGroup,
};

/** A stage's log group: `/store-orders/<stage>/<source>` (e.g. `/store-orders/production/access`). */
export function logGroupName(
  stage: StageName,
  source: Exclude<LogSource, 'execution' | 'executionV2'>,
): string {
  return `/store-orders/${stage}/${source}`;
}

/**
 * The group API Gateway writes an API stage's execution logs to, by its own rule (the stack
 * creates it first, so that it has a retention): `API-Gateway-Execution-Logs_<restApiId>/v1`.
 */
export function executionLogGroupName(restApiId: string, apiStage: ApiStage): string {
  return `API-Gateway-Execution-Logs_${restApiId}/${apiStage}`;
}

/** The prefix of a stage's saved Logs Insights queries (`store-orders/<stage>/…`). */
export function queryPrefix(stage: StageName): string {
  return `store-orders/${stage}/`;
}

/**
 * The CodeDeploy application of a stage (`store-orders-<stage>`); its deployment groups are
 * named after the functions (`listOrders`, `cancelOrder`, `authorizer`), each shifting traffic
 * to the function's `live` alias.
 */
export function deploymentApplicationName(stage: StageName): string {
  return `store-orders-${stage}`;
}

/**
 * The environment variables of the deploy hooks, by the setting each holds: infra/deploy-hooks.ts
 * sets them, functions/deploy-hooks/settings.ts reads them (`settingsFromEnv`).
 */
export const HOOK_ENV = {
  /** JSON: each function's name, deployment alarms, and whether it is provisioned. */
  targets: 'DEPLOY_TARGETS',
  bakeSeconds: 'BAKE_SECONDS',
  /** Whether the watch after the last shift probes the new version at each of its reads. */
  watchProbe: 'WATCH_PROBE',
  versionsKept: 'VERSIONS_KEPT',
  ignoreAlarms: 'IGNORE_ALARMS',
  /** The orders table (the deploy check's order), the keys table (its probe key): the functions' variables. */
  ordersTable: TABLES.orders.envVar,
  apiKeysTable: TABLES.apiKeys.envVar,
  /** The stage's namespace of the service's metrics, which the judgement reads (as the functions'). */
  metricsNamespace: METRICS_NAMESPACE_ENV,
} as const;

/** EventBridge's `detail-type` of CloudFormation's notice of a stack's status. */
export const STACK_STATUS_CHANGE = 'CloudFormation Stack Status Change';

/** The alias API Gateway invokes and CodeDeploy moves from version to version. */
export const LIVE_ALIAS = 'live';

/**
 * The alias on the version a rollback lands on (docs/deploy.md, "Roll back at once"): the one
 * `live` served before the last deployment that passed, set by the post-traffic hook.
 */
export const ROLLBACK_ALIAS = 'rollback';

/**
 * The alias an operator puts on a version found wrong after its deploy passed (docs/deploy.md,
 * "Roll back at once"): the pre-traffic hook refuses every deployment to it, so that a later
 * deploy of unchanged code cannot move `live` back to it. Deleted by hand once a fix is live.
 */
export const DO_NOT_SHIP_ALIAS = 'do-not-ship';

/** CloudFormation's status of a stack whose update rolled back (the republish waits for it). */
export const ROLLED_BACK_STATUS = 'UPDATE_ROLLBACK_COMPLETE';

/**
 * Where the deploy commands (docs/deploy.md, "4. Deploy") write a stage's outputs (`--outputs-file`): one file per
 * stage, because each `cdk deploy` rewrites its outputs file with only the stacks it deployed.
 */
export function outputsFile(stage: StageName): string {
  return `cdk-outputs.${stage}.json`;
}

/** The outputs file of a deploy of several stages at once. */
export const DEFAULT_OUTPUTS_FILE = 'cdk-outputs.json';

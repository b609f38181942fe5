/**
 * Names shared by the CDK app and the operator CLI: the deployment stages, their stack names and
 * the stack outputs that `cdk deploy --outputs-file` writes and the CLI reads.
 */
export const STAGES = ['staging', 'production'] as const;
export type StageName = (typeof STAGES)[number];

export function isStageName(value: unknown): value is StageName {
  return typeof value === 'string' && (STAGES as readonly string[]).includes(value);
}

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
} as const;

/**
 * Where the deploy commands (docs/deploy.md, "4. Deploy") write a stage's outputs (`--outputs-file`): one file per
 * stage, because each `cdk deploy` rewrites its outputs file with only the stacks it deployed.
 */
export function outputsFile(stage: StageName): string {
  return `cdk-outputs.${stage}.json`;
}

/** The outputs file of a deploy of several stages at once. */
export const DEFAULT_OUTPUTS_FILE = 'cdk-outputs.json';

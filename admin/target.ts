/**
 * Which DynamoDB tables a command works on: a deployed stage (table names and region from its
 * stack outputs: the outputs file of `cdk deploy --outputs-file`, else CloudFormation), the
 * running `npm start` (from the state file it writes), or names given on the command line.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createOperatorClient, type DynamoDbConnection } from '../lib/dynamodb/client.ts';
import {
  DEFAULT_OUTPUTS_FILE,
  isStageName,
  STACK_OUTPUTS,
  stackNames,
  STAGES,
  type StageName,
} from '../lib/deployment.ts';
import { describeFlags, switchFlag, valueFlag } from '../lib/config/flags.ts';
import { OutputsUnavailable, stageOutputs } from '../lib/stack-outputs.ts';
import { quotableInput } from '../lib/keys/api-key.ts';
import { adminAttemptMs, Failure, inContext, UsageError } from './common.ts';

/** The flags that name a target, and the two every command takes. */
export const TARGET_FLAGS = {
  stage: valueFlag(
    STAGES.join('|'),
    'a deployed stage: table names and region from its stack outputs (an outputs file, else CloudFormation with your AWS credentials)',
  ),
  outputs: valueFlag(
    'FILE',
    `the outputs file cdk deploy --outputs-file wrote (default cdk-outputs.<stage>.json, else ${DEFAULT_OUTPUTS_FILE}, if present and holding the stage; else CloudFormation)`,
  ),
  local: switchFlag('the DynamoDB of the running `npm start`'),
  'table-orders': valueFlag(
    'NAME',
    'the orders table by name, with --endpoint URL and/or --region REGION',
  ),
  'table-keys': valueFlag(
    'NAME',
    'the API keys table by name, with --endpoint URL and/or --region REGION',
  ),
  'table-rate-limits': valueFlag(
    'NAME',
    'the rate limits table by name (keys show, keys unban), as --table-keys',
  ),
  endpoint: valueFlag('URL', "a DynamoDB endpoint (e.g. DynamoDB Local); also overrides --stage's"),
  region: valueFlag(
    'REGION',
    "AWS region (with --stage: where CloudFormation is asked, and overrides the outputs' region)",
  ),
  yes: switchFlag('do not ask before changing production data', 'y'),
  help: switchFlag('show this help', 'h'),
};

export const TARGET_USAGE = `Target (one of):\n${describeFlags(TARGET_FLAGS)}`;

export interface TargetValues {
  readonly stage?: string;
  readonly outputs?: string;
  readonly local?: boolean;
  readonly endpoint?: string;
  readonly region?: string;
  readonly 'table-orders'?: string;
  readonly 'table-keys'?: string;
  readonly 'table-rate-limits'?: string;
  readonly yes?: boolean;
}

export type TargetTable = 'orders' | 'apiKeys' | 'rateLimits';

export interface Target {
  /** For messages: `production (eu-west-1)`, `the local API`, `http://127.0.0.1:8000`. */
  readonly description: string;
  readonly stage?: StageName;
  readonly connection: DynamoDbConnection;
  readonly tables: Partial<Record<TargetTable, string>>;
  /** The ban the functions apply, when the target says (the local API does). */
  readonly ban?: { readonly afterRefusals: number; readonly seconds: number };
}

const TABLE_FLAGS: Record<TargetTable, string> = {
  orders: '--table-orders',
  apiKeys: '--table-keys',
  rateLimits: '--table-rate-limits',
};
const TABLE_OUTPUTS: Record<TargetTable, string> = {
  orders: STACK_OUTPUTS.ordersTable,
  apiKeys: STACK_OUTPUTS.apiKeysTable,
  rateLimits: STACK_OUTPUTS.rateLimitsTable,
};

function checkEndpoint(endpoint: string | undefined): void {
  if (endpoint === undefined) return;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw new UsageError(
      `--endpoint must be an http(s) URL, got "${quotableInput(endpoint, 200)}"`,
    );
  }
}

async function stageTarget(stage: StageName, values: TargetValues): Promise<Target> {
  const stack = stackNames(stage).data;
  let outputs: Readonly<Record<string, string>>;
  let source: string;
  try {
    const found = await stageOutputs(stage, stack, {
      ...(values.outputs !== undefined ? { outputs: values.outputs } : {}),
      ...(values.region !== undefined ? { region: values.region } : {}),
    });
    source = found.source;
    outputs = await found.read(stack);
  } catch (error) {
    if (error instanceof OutputsUnavailable) throw new Failure(error.message);
    throw error;
  }
  const region = values.region ?? outputs[STACK_OUTPUTS.region];
  if (region === undefined) {
    throw new Failure(`the outputs of stack ${stack} (${source}) have no ${STACK_OUTPUTS.region}`);
  }
  const tables: Partial<Record<TargetTable, string>> = {};
  for (const table of Object.keys(TABLE_OUTPUTS) as TargetTable[]) {
    const name = outputs[TABLE_OUTPUTS[table]];
    if (name !== undefined) tables[table] = name;
  }
  return {
    description: `${stage} (${stack}, ${region}${values.endpoint ? `, ${values.endpoint}` : ''})`,
    stage,
    connection: { region, ...(values.endpoint ? { endpoint: values.endpoint } : {}) },
    tables,
  };
}

async function localTarget(): Promise<Target> {
  // Loaded only here: the rest of the CLI has no use for the local stack.
  const { localStateFile, readLocalState } = await import('../local/local-stack.ts');
  const state = await readLocalState();
  if (!state) {
    throw new Failure(
      `no running local API found (no live state in ${localStateFile()}): start one with npm start`,
    );
  }
  return {
    description: `the local API (${state.apiUrl})`,
    connection: { endpoint: state.endpoint, region: state.region },
    ...(state.ban ? { ban: state.ban } : {}),
    tables: {
      orders: state.tables.orders,
      apiKeys: state.tables.apiKeys,
      rateLimits: state.tables.rateLimits,
    },
  };
}

/** The target the flags name; throws UsageError when they name none or several. */
export async function resolveTarget(values: TargetValues): Promise<Target> {
  const tables: Partial<Record<TargetTable, string>> = {};
  if (values['table-orders'] !== undefined) tables.orders = values['table-orders'];
  if (values['table-keys'] !== undefined) tables.apiKeys = values['table-keys'];
  if (values['table-rate-limits'] !== undefined) tables.rateLimits = values['table-rate-limits'];
  const named = (Object.keys(tables) as TargetTable[]).map((table) => TABLE_FLAGS[table]);
  checkEndpoint(values.endpoint);
  if (values.outputs !== undefined && values.stage === undefined) {
    throw new UsageError('--outputs goes with --stage');
  }
  if (values.stage !== undefined) {
    if (!isStageName(values.stage)) {
      throw new UsageError(
        `--stage must be one of ${STAGES.join(', ')}, got "${quotableInput(values.stage)}"`,
      );
    }
    if (values.local) throw new UsageError('--stage and --local exclude each other');
    if (named.length > 0) {
      throw new UsageError(
        `${named[0]} cannot be combined with --stage (the stack outputs name the tables)`,
      );
    }
    return stageTarget(values.stage, values);
  }
  if (values.local) {
    if (named.length > 0 || values.endpoint !== undefined || values.region !== undefined) {
      throw new UsageError(
        '--local takes its endpoint and tables from the running npm start: drop --endpoint, --region and --table-*',
      );
    }
    return localTarget();
  }
  if (named.length === 0) {
    throw new UsageError(
      'no target: give --stage staging|production, --local, or --table-orders/--table-keys/--table-rate-limits NAME with --endpoint URL or --region REGION',
    );
  }
  return {
    description: values.endpoint ?? `AWS ${values.region ?? '(default region)'}`,
    connection: {
      ...(values.endpoint ? { endpoint: values.endpoint } : {}),
      ...(values.region ? { region: values.region } : {}),
    },
    tables,
  };
}

/** The name of the table a command needs, or a UsageError naming the missing flag/output. */
export function requireTable(target: Target, table: TargetTable): string {
  const name = target.tables[table];
  if (name !== undefined) return name;
  if (target.stage) {
    throw new Failure(
      `the outputs of ${stackNames(target.stage).data} have no ${TABLE_OUTPUTS[table]}`,
    );
  }
  throw new UsageError(`this command needs ${TABLE_FLAGS[table]} NAME`);
}

/**
 * A client for the target: more patient than a function's (an operator can wait), but every
 * attempt still ends at its budget, so a stalled DynamoDB ends the command with a clear line.
 */
export function targetClient(target: Target): DynamoDBDocumentClient {
  return createOperatorClient(target.connection, adminAttemptMs());
}

/**
 * Runs `action` with a client and the name of the table the command needs; a failure of
 * DynamoDB is reported with the table and target it happened on.
 */
export async function withTable<T>(
  values: TargetValues,
  table: TargetTable,
  action: (client: DynamoDBDocumentClient, tableName: string, target: Target) => Promise<T>,
): Promise<T> {
  return withTables(values, [table], (client, names, target) =>
    action(client, names[table], target),
  );
}

/** As withTable, with several tables of one target. */
export async function withTables<T, const K extends TargetTable>(
  values: TargetValues,
  tables: readonly K[],
  action: (
    client: DynamoDBDocumentClient,
    tableNames: Record<K, string>,
    target: Target,
  ) => Promise<T>,
): Promise<T> {
  const target = await resolveTarget(values);
  const names = Object.fromEntries(
    tables.map((table) => [table, requireTable(target, table)]),
  ) as Record<K, string>;
  const client = targetClient(target);
  try {
    return await action(client, names, target);
  } catch (error) {
    throw inContext(error, `table ${Object.values(names).join(', ')} on ${target.description}`);
  } finally {
    client.destroy();
  }
}

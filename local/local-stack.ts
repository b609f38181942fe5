/**
 * The local stack behind `npm start`, `npm run invoke` and the end-to-end tests: DynamoDB
 * (DynamoDB Local started here, or a given endpoint), the tables from the shared definitions,
 * the seed data, the function environment and the real handlers.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createOperatorClient, LOCAL_REGION, tableEnv } from '../lib/dynamodb/client.ts';
import { ensureTables } from '../lib/dynamodb/create-table.ts';
import { DynamoDbKeyStore } from '../lib/dynamodb/keys-table.ts';
import { ordersIndexesEnv } from '../lib/dynamodb/order-indexes.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import { TABLES, type TableName, type TableNames } from '../lib/dynamodb/tables.ts';
import type { KeyEntry } from '../lib/keys/key-input.ts';
import { registerKeys } from '../lib/keys/plaintext-keys.ts';
import type { OperationId } from '../lib/api/routes.ts';
import type { Order } from '../lib/orders/order.ts';
import { DEMO_KEYS, DEMO_ORDERS } from './demo-data.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import { installLambdaRuntimeGlobals } from './lambda-runtime.ts';

export const DEFAULT_TABLE_PREFIX = 'store-orders-local';
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Where a running `npm start` records its endpoint and tables for the other local tools
 * (STORE_ORDERS_LOCAL_STATE moves it, e.g. for tests running several local APIs at once).
 */
export function localStateFile(): string {
  return process.env.STORE_ORDERS_LOCAL_STATE ?? join(PROJECT_ROOT, '.local', 'stack.json');
}

export function localTableNames(prefix: string = DEFAULT_TABLE_PREFIX): TableNames {
  const names = {} as TableNames;
  for (const table of Object.keys(TABLES) as TableName[]) {
    names[table] =
      `${prefix}-${TABLES[table].id.replace(/[A-Z]/g, (c, i: number) => `${i > 0 ? '-' : ''}${c.toLowerCase()}`)}`;
  }
  return names;
}

export interface LocalStackOptions {
  /** Use this DynamoDB instead of starting DynamoDB Local. */
  readonly dynamodbEndpoint?: string;
  readonly tablePrefix?: string;
  /** Orders to load; when absent, demo orders go into a newly created orders table. */
  readonly seedOrders?: readonly Order[];
  /** Keys to register; the demo keys when absent. */
  readonly keys?: readonly KeyEntry[];
  /** A state file that DynamoDB Local's wrapper removes if this process dies (see writeLocalState). */
  readonly stateFile?: string;
}

export interface LocalStack {
  readonly endpoint: string;
  readonly tables: TableNames;
  readonly client: DynamoDBDocumentClient;
  readonly keys: readonly KeyEntry[];
  readonly ordersLoaded: number;
  readonly dynamoDbPid: number | undefined;
  /** Settles if the DynamoDB Local this stack started ends (never for a given endpoint). */
  readonly dynamoDbExited: Promise<string>;
  stop(): Promise<void>;
}

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const dynamo = options.dynamodbEndpoint
    ? {
        endpoint: options.dynamodbEndpoint,
        pid: undefined,
        exited: new Promise<string>(() => undefined),
        stop: () => Promise.resolve(),
      }
    : await startDynamoDbLocal({ stateFile: options.stateFile, quickStart: true });
  // Set-up work (tables, seed orders, keys) is the operator's, with the operator's budget: a
  // request's 1 s attempts fail a large seed on a busy machine.
  const client = createOperatorClient({ endpoint: dynamo.endpoint });
  try {
    const tables = localTableNames(options.tablePrefix);
    const created = await ensureTables(client, tables);
    const orders = options.seedOrders ?? (created.includes('orders') ? DEMO_ORDERS : []);
    // Written as an import writes them: a list of tables another API already serves (through
    // --dynamodb-endpoint) changes its tag.
    await new DynamoDbOrderStore(client, tables.orders).putOrders(orders);
    const keys = options.keys ?? DEMO_KEYS;
    await registerKeys(new DynamoDbKeyStore(client, tables.apiKeys), keys, new Date());
    return {
      endpoint: dynamo.endpoint,
      tables,
      client,
      keys,
      ordersLoaded: orders.length,
      dynamoDbPid: dynamo.pid,
      dynamoDbExited: dynamo.exited,
      stop: async () => {
        client.destroy();
        await dynamo.stop();
      },
    };
  } catch (error) {
    client.destroy();
    await dynamo.stop();
    throw error;
  }
}

/** The environment the functions read, pointing at the local stack. */
export function functionEnvironment(
  stack: Pick<LocalStack, 'endpoint' | 'tables'>,
): Record<string, string> {
  return {
    ...tableEnv(stack.tables),
    DYNAMODB_ENDPOINT: stack.endpoint,
    AWS_REGION: LOCAL_REGION,
    // The local tables have every index of the v2 list (lib/dynamodb/create-table.ts).
    ...ordersIndexesEnv(),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'WARN',
    // CloudWatch embedded metrics would only clutter the terminal here.
    METRICS_DISABLED: process.env.METRICS_DISABLED ?? 'true',
  };
}

export type LocalFunctions = Record<OperationId | 'authorizer', unknown>;

/** Loads the real handlers, as Lambda would: after the environment and runtime globals are set. */
export async function loadFunctions(
  stack: Pick<LocalStack, 'endpoint' | 'tables'>,
): Promise<LocalFunctions> {
  Object.assign(process.env, functionEnvironment(stack));
  installLambdaRuntimeGlobals();
  const [listOrders, listOrderPages, cancelOrder, authorizer] = await Promise.all([
    import('../functions/list-orders.ts'),
    import('../functions/list-order-pages.ts'),
    import('../functions/cancel-order.ts'),
    import('../functions/authorizer.ts'),
  ]);
  return {
    listOrders: listOrders.handler,
    listOrderPages: listOrderPages.handler,
    cancelOrder: cancelOrder.handler,
    authorizer: authorizer.handler,
  };
}

export interface LocalState {
  readonly apiUrl: string;
  readonly endpoint: string;
  readonly region: string;
  readonly tables: TableNames;
  readonly pid: number;
  /** The DynamoDB Local process started by `npm start`, if it started one. */
  readonly dynamoDbPid?: number;
  /** The ban the functions apply (--ban-after, --ban-seconds), for `keys show`. */
  readonly ban?: { readonly afterRefusals: number; readonly seconds: number };
  /** The deployment stage it runs as synthesized (`--stage`), if any. */
  readonly stage?: string;
}

export async function writeLocalState(state: LocalState): Promise<void> {
  await mkdir(dirname(localStateFile()), { recursive: true });
  await writeFile(localStateFile(), `${JSON.stringify(state, null, 2)}\n`);
}

export async function removeLocalState(): Promise<void> {
  await rm(localStateFile(), { force: true });
}

/** The state of a running `npm start`, if there is one (its process still alive). */
export async function readLocalState(): Promise<LocalState | undefined> {
  let state: LocalState;
  try {
    state = JSON.parse(await readFile(localStateFile(), 'utf8')) as LocalState;
  } catch {
    return undefined;
  }
  try {
    process.kill(state.pid, 0);
    return state;
  } catch {
    return undefined;
  }
}

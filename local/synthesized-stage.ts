/**
 * A stage as synthesized, made locally (`npm start -- --stage NAME`, the rehearsals): its tables
 * created in DynamoDB as CloudFormation creates them — the template's keys, indexes, projections
 * and time to live, empty — and what the container pool and the API Gateway emulation need to
 * run its functions' bundles with the template's settings (./stage-template.ts reads them).
 *
 * The functions get the template's environment as it is, and what Lambda gives every function
 * besides: a region and credentials; their SDK reaches DynamoDB Local through the SDK's own
 * endpoint variable (AWS_ENDPOINT_URL_DYNAMODB), so the code runs the path it runs on AWS, which
 * sets no endpoint. What else differs from AWS: docs/local.md ("The stage as synthesized").
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ERROR_CATALOGUE, type ErrorCode } from '../lib/api/errors.ts';
import type {
  GatewayResponseDefinition,
  GatewayResponseType,
} from '../lib/api/gateway-responses.ts';
import type { RouteDefinition } from '../lib/api/routes.ts';
import type { StageName } from '../lib/deployment.ts';
import { createOperatorClient, LOCAL_CREDENTIALS, LOCAL_REGION } from '../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import type { TableName, TableNames } from '../lib/dynamodb/tables.ts';
import type { KeyEntry } from '../lib/keys/key-input.ts';
import { registerKeys } from '../lib/keys/plaintext-keys.ts';
import type { Order } from '../lib/orders/order.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import type { FunctionRuntime } from './container-pool.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import type { GatewayOptions } from './gateway.ts';
import type { LocalStack } from './local-stack.ts';
import { PROJECT_ROOT } from './local-stack.ts';
import {
  readTemplateStage,
  TemplateError,
  templateTableNames,
  type TemplateStage,
} from './stage-template.ts';
import { markCommonJs, synthesize } from './synth.ts';

/** Where `npm start -- --stage` synthesizes (beside the local state file; not checked in). */
export const LOCAL_ASSEMBLY_DIR = join(PROJECT_ROOT, '.local', 'cdk.out');

export interface SynthesizedStackOptions {
  readonly stage: StageName;
  /** A cloud assembly already synthesized (else `cdk synth` makes one in LOCAL_ASSEMBLY_DIR). */
  readonly assemblyDir?: string;
  readonly dynamodbEndpoint?: string;
  readonly tablePrefix?: string;
  /** Orders and keys to load (none by default: a new stage is empty). */
  readonly seedOrders?: readonly Order[];
  readonly keys?: readonly KeyEntry[];
  readonly stateFile?: string;
  /** Told what it is doing (the synth takes seconds). */
  readonly progress?: (line: string) => void;
}

/** A stage as synthesized, running locally: its tables, and its template read. */
export interface SynthesizedStack extends LocalStack {
  readonly template: TemplateStage;
  readonly assemblyDir: string;
}

/**
 * Synthesizes (unless given an assembly), starts DynamoDB Local (unless given an endpoint),
 * creates the stage's tables as its template defines them and loads what it is asked to.
 */
export async function startSynthesizedStack(
  options: SynthesizedStackOptions,
): Promise<SynthesizedStack> {
  const missing = (stage: TemplateStage) =>
    FUNCTION_NAMES.filter((name) => stage.functions[name] === undefined);
  let assemblyDir = options.assemblyDir;
  if (assemblyDir) {
    await markCommonJs(assemblyDir);
  } else {
    options.progress?.(`Synthesizing the stages (cdk synth, cdk.json's settings)…`);
    assemblyDir = await synthesize({ outDir: LOCAL_ASSEMBLY_DIR });
  }
  const prefix = options.tablePrefix ?? synthesizedTablePrefix(options.stage);
  const template = readTemplateStage(assemblyDir, options.stage, {
    tablePrefix: prefix,
    region: LOCAL_REGION,
  });
  if (missing(template).length > 0) {
    throw new TemplateError(`the stage has no function ${missing(template).join(', ')}`);
  }
  const dynamo = options.dynamodbEndpoint
    ? {
        endpoint: options.dynamodbEndpoint,
        pid: undefined,
        exited: new Promise<string>(() => undefined),
        stop: () => Promise.resolve(),
      }
    : await startDynamoDbLocal({ stateFile: options.stateFile, quickStart: true });
  const client = createOperatorClient({ endpoint: dynamo.endpoint });
  try {
    const { names } = await createTemplateTables(client, template, prefix);
    const orders = options.seedOrders ?? [];
    if (orders.length > 0) await new DynamoDbOrderStore(client, names.orders).putOrders(orders);
    const keys = options.keys ?? [];
    if (keys.length > 0) {
      await registerKeys(new DynamoDbKeyStore(client, names.apiKeys), keys, new Date());
    }
    return {
      template,
      assemblyDir,
      endpoint: dynamo.endpoint,
      tables: names,
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

/** The local tables' prefix of a stage as synthesized. */
export const synthesizedTablePrefix = (stage: string) => `store-orders-local-${stage}`;

/** What Lambda gives a function beside its configured environment, here: region, credentials, endpoint. */
export function lambdaEnvironment(endpoint: string): Record<string, string> {
  return {
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
  };
}

async function tableExists(client: DynamoDBDocumentClient, name: string): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

/**
 * Creates the stage's tables that do not exist yet, as the template defines them, empty; returns
 * their names and which were created. A table that exists is left as it is.
 */
export async function createTemplateTables(
  client: DynamoDBDocumentClient,
  stage: TemplateStage,
  prefix: string = synthesizedTablePrefix(stage.stage),
): Promise<{ names: TableNames; created: TableName[] }> {
  const names = templateTableNames(prefix, stage.tables);
  const created: TableName[] = [];
  for (const table of Object.keys(stage.tables) as TableName[]) {
    const spec = stage.tables[table];
    if (await tableExists(client, names[table])) continue;
    try {
      await client.send(
        new CreateTableCommand({
          TableName: names[table],
          KeySchema: [...spec.keySchema],
          AttributeDefinitions: [...spec.attributeDefinitions],
          BillingMode: spec.billingMode === 'PAY_PER_REQUEST' ? 'PAY_PER_REQUEST' : 'PROVISIONED',
          ...(spec.billingMode === 'PAY_PER_REQUEST'
            ? {}
            : { ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 } }),
          ...(spec.globalSecondaryIndexes.length > 0
            ? { GlobalSecondaryIndexes: [...spec.globalSecondaryIndexes] }
            : {}),
        }),
      );
    } catch (error) {
      if (error instanceof ResourceInUseException) continue;
      throw error;
    }
    created.push(table);
    if (spec.timeToLiveAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: names[table],
          TimeToLiveSpecification: { AttributeName: spec.timeToLiveAttribute, Enabled: true },
        }),
      );
    }
  }
  return { names, created };
}

/** Each function's bundle and settings, as the container pool runs them. */
export function templateRuntimes(
  stage: TemplateStage,
  endpoint: string,
): Partial<Record<FunctionName, FunctionRuntime>> {
  const runtimes: Partial<Record<FunctionName, FunctionRuntime>> = {};
  for (const name of FUNCTION_NAMES) {
    const fn = stage.functions[name];
    if (!fn) continue;
    runtimes[name] = {
      entry: fn.bundle,
      format: fn.format,
      handlerName: fn.handler,
      memoryMb: fn.memoryMb,
      env: { ...fn.environment, ...lambdaEnvironment(endpoint) },
      ownEnvironment: true,
      ...(fn.reservedConcurrency === undefined ? {} : { maxContainers: fn.reservedConcurrency }),
    };
  }
  return runtimes;
}

/**
 * The template's gateway responses as the emulation gives them: each one's type, its Error code
 * (its body's) and headers. A body whose status is not its code's fails: the emulator answers an
 * Error object from the catalogue.
 */
export function templateGatewayResponses(stage: TemplateStage): GatewayResponseDefinition[] {
  return stage.gatewayResponses.map((response) => {
    const code = (JSON.parse(response.body) as { code?: string }).code as ErrorCode;
    if (!Object.hasOwn(ERROR_CATALOGUE, code) || ERROR_CATALOGUE[code].status !== response.status) {
      throw new TemplateError(
        `gateway response ${response.type}: ${response.status} ${String(code)} is not an error of the catalogue`,
      );
    }
    const headers = Object.fromEntries(
      Object.entries(response.headers).filter(([name]) => name.toLowerCase() !== 'content-type'),
    );
    return {
      type: response.type as GatewayResponseType,
      code,
      headers,
      when: 'as the template defines it',
    };
  });
}

/** The API Gateway emulation's settings from the template: routes, throttles, authorizer, logs. */
export function templateGatewayOptions(
  stage: TemplateStage,
): Pick<
  GatewayOptions,
  | 'stages'
  | 'throttles'
  | 'authorizerTtlSeconds'
  | 'identityValidation'
  | 'timeouts'
  | 'accessLogFormats'
  | 'gatewayResponses'
> {
  const stages: Record<string, readonly RouteDefinition[]> = {};
  const throttles: Record<string, { rateLimit: number; burstLimit: number }> = {};
  const accessLogFormats: Record<string, string> = {};
  for (const [name, apiStage] of Object.entries(stage.apiStages)) {
    stages[name] = apiStage.routes;
    if (apiStage.throttle) throttles[name] = apiStage.throttle;
    if (apiStage.accessLogFormat) accessLogFormats[name] = apiStage.accessLogFormat;
  }
  const timeouts: Partial<Record<FunctionName, number>> = {};
  for (const name of FUNCTION_NAMES) {
    const fn = stage.functions[name];
    if (fn) timeouts[name] = fn.timeoutSeconds;
  }
  return {
    stages,
    throttles,
    accessLogFormats,
    authorizerTtlSeconds: stage.authorizer.ttlSeconds,
    ...(stage.authorizer.identityValidation
      ? { identityValidation: stage.authorizer.identityValidation }
      : {}),
    timeouts,
    gatewayResponses: templateGatewayResponses(stage),
  };
}

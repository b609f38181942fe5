/**
 * A deployment stage as `cdk synth` writes it — the Data and Api stacks' templates and the
 * functions' bundles of a cloud assembly — read into what the local API runs
 * (`npm start -- --stage production`, ./start.ts), as `sam local start-api` reads its template:
 *
 * - the tables: each one's keys, global indexes (keys and projections), time to live and billing,
 *   as CreateTable takes them (CloudFormation creates them empty);
 * - the functions: each one's bundle (the very code the asset uploads), handler, memory, timeout,
 *   reserved concurrency and environment, its intrinsics resolved against the local tables;
 * - the REST API: each API stage's routes (a method's integration, through the stage variables,
 *   names the function's `live` alias), its throttle and its access log format; the TOKEN
 *   authorizer's cache TTL and identity validation expression; the gateway responses.
 *
 * What the template holds and the emulation does not do is listed in docs/local.md ("The stage as
 * synthesized"); an intrinsic or a resource shape this reader does not know fails the start with
 * its name, rather than running something other than the template.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import type {
  AttributeDefinition,
  GlobalSecondaryIndex,
  KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { AssetManifestArtifact, CloudAssembly } from 'aws-cdk-lib/cx-api';
import type { ApiStage, HttpMethod, RouteDefinition } from '../lib/api/routes.ts';
import { stackNames, stageId, type StageName } from '../lib/deployment.ts';
import { TABLES, type TableName, type TableNames } from '../lib/dynamodb/tables.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';

type Json = unknown;
interface Resource {
  readonly Type: string;
  readonly Properties?: Record<string, Json>;
  readonly Metadata?: Record<string, Json>;
  readonly DependsOn?: string | string[];
}
interface Template {
  readonly Resources: Record<string, Resource>;
  readonly Outputs?: Record<string, { Value: Json; Export?: { Name: string } }>;
  readonly Parameters?: Record<string, { Default?: Json }>;
  readonly Conditions?: Record<string, Json>;
}

/** A table as the template creates it (its name is the local stage's). */
export interface TemplateTable {
  readonly logicalId: string;
  readonly keySchema: readonly KeySchemaElement[];
  readonly attributeDefinitions: readonly AttributeDefinition[];
  readonly globalSecondaryIndexes: readonly GlobalSecondaryIndex[];
  readonly timeToLiveAttribute?: string;
  readonly billingMode: string;
}

/** A function as the template deploys it. */
export interface TemplateFunction {
  readonly logicalId: string;
  /** The bundle Lambda loads (the asset's file: index.js, CommonJS, or index.mjs), and the export it calls. */
  readonly bundle: string;
  readonly format: 'module' | 'commonjs';
  readonly handler: string;
  readonly runtime: string;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  readonly reservedConcurrency?: number;
  /** Its environment, intrinsics resolved (table names are the local stage's). */
  readonly environment: Readonly<Record<string, string>>;
}

/** A route of an API stage, with its integration's timeout. */
export interface TemplateRoute extends RouteDefinition {
  readonly integrationTimeoutMs: number;
}

export interface TemplateApiStage {
  readonly routes: readonly TemplateRoute[];
  /** The stage's throttle of each method (MethodSettings `/*`, `*`). */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  readonly accessLogFormat?: string;
}

/** A gateway response as the template renders it. */
export interface TemplateGatewayResponse {
  readonly type: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface TemplateStage {
  readonly stage: StageName;
  readonly tables: Readonly<Record<TableName, TemplateTable>>;
  /** The functions the template has (release 1.0.0's had no listOrderPages). */
  readonly functions: Readonly<Partial<Record<FunctionName, TemplateFunction>>>;
  readonly apiStages: Readonly<Partial<Record<ApiStage, TemplateApiStage>>>;
  readonly authorizer: {
    readonly function: FunctionName;
    readonly ttlSeconds: number;
    readonly identityValidation?: RegExp;
  };
  readonly gatewayResponses: readonly TemplateGatewayResponse[];
  /** Every resource type of the stage's stacks, with how many: what docs/local.md accounts for. */
  readonly resourceTypes: Readonly<Record<string, number>>;
}

/** A template value this reader cannot give a local meaning to. */
export class TemplateError extends Error {}

/** The construct id a resource was made from (`Production/Api/ListOrders/Resource` → `ListOrders`). */
function constructId(resource: Resource, stackPath: string): string | undefined {
  const path = resource.Metadata?.['aws:cdk:path'];
  if (typeof path !== 'string' || !path.startsWith(`${stackPath}/`)) return undefined;
  return path.slice(stackPath.length + 1).split('/')[0];
}

const lowerFirst = (id: string) => `${id.charAt(0).toLowerCase()}${id.slice(1)}`;

/** A local physical name for a table of the stage (CloudFormation adds a random suffix). */
export function templateTableNames(prefix: string, tables: TemplateStage['tables']): TableNames {
  const names = {} as TableNames;
  for (const name of Object.keys(tables) as TableName[]) {
    names[name] = `${prefix}-${tables[name].logicalId}`;
  }
  return names;
}

/** What intrinsics resolve to locally. */
interface Resolution {
  readonly region: string;
  readonly account: string;
  /** Physical ids of resources by logical id (tables, functions, aliases). */
  readonly refs: Readonly<Record<string, string>>;
  readonly arns: Readonly<Record<string, string>>;
  readonly exports: Readonly<Record<string, string>>;
  readonly parameters: Readonly<Record<string, string>>;
  readonly conditions: Readonly<Record<string, boolean>>;
}

/** A template value with its intrinsic functions evaluated, as text. */
function resolve(value: Json, r: Resolution, where: string): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TemplateError(`${where}: ${JSON.stringify(value)} is no value`);
  }
  const [fn, argument] = Object.entries(value as Record<string, Json>)[0] ?? [];
  switch (fn) {
    case 'Ref': {
      const id = String(argument);
      const pseudo: Record<string, string> = {
        'AWS::Region': r.region,
        'AWS::AccountId': r.account,
        'AWS::Partition': 'aws',
        'AWS::URLSuffix': 'amazonaws.com',
      };
      const found = pseudo[id] ?? r.refs[id] ?? r.parameters[id];
      if (found === undefined) throw new TemplateError(`${where}: Ref ${id} has no local value`);
      return found;
    }
    case 'Fn::GetAtt': {
      const [id, attribute] = argument as [string, string];
      const found = attribute === 'Arn' ? r.arns[id] : undefined;
      if (found === undefined) {
        throw new TemplateError(`${where}: Fn::GetAtt ${id}.${attribute} has no local value`);
      }
      return found;
    }
    case 'Fn::ImportValue': {
      const name = resolve(argument, r, where);
      const found = r.exports[name];
      if (found === undefined) throw new TemplateError(`${where}: no export ${name}`);
      return found;
    }
    case 'Fn::Join': {
      const [separator, parts] = argument as [string, Json[]];
      return parts.map((part) => resolve(part, r, where)).join(separator);
    }
    case 'Fn::Select': {
      const [index, list] = argument as [number, Json];
      const items = selectable(list, r, where);
      const item = items[Number(index)];
      if (item === undefined) throw new TemplateError(`${where}: Fn::Select past the list`);
      return item;
    }
    case 'Fn::If': {
      const [condition, yes, no] = argument as [string, Json, Json];
      const holds = r.conditions[condition];
      if (holds === undefined) throw new TemplateError(`${where}: no condition ${condition}`);
      return resolve(holds ? yes : no, r, where);
    }
    case 'Fn::Sub': {
      const text = typeof argument === 'string' ? argument : (argument as [string])[0];
      return text.replace(/\$\{([\w:]+)\}/g, (_, id: string) => resolve({ Ref: id }, r, where));
    }
    default:
      throw new TemplateError(`${where}: ${fn ?? 'an empty object'} is not evaluated locally`);
  }
}

function selectable(list: Json, r: Resolution, where: string): string[] {
  if (Array.isArray(list)) return list.map((item) => resolve(item, r, where));
  const [fn, argument] = Object.entries(list as Record<string, Json>)[0] ?? [];
  if (fn !== 'Fn::Split') throw new TemplateError(`${where}: Fn::Select of ${fn}`);
  const [separator, text] = argument as [string, Json];
  return resolve(text, r, where).split(separator);
}

/** Conditions of the templates this reader meets: Fn::Not and Fn::Equals of resolvable values. */
function evaluateCondition(value: Json, r: Omit<Resolution, 'conditions'>, where: string): boolean {
  const [fn, argument] = Object.entries(value as Record<string, Json>)[0] ?? [];
  if (fn === 'Fn::Not') return !evaluateCondition((argument as Json[])[0], r, where);
  if (fn === 'Fn::Equals') {
    const [a, b] = argument as [Json, Json];
    const local = { ...r, conditions: {} };
    return resolve(a, local, where) === resolve(b, local, where);
  }
  throw new TemplateError(`${where}: condition ${fn} is not evaluated locally`);
}

const httpMethods = new Set<HttpMethod>(['GET', 'DELETE']);

/**
 * Reads a stage of a cloud assembly (`cdk synth -o DIR`), with the local names of its tables
 * (`tablePrefix`) and a region for its ARNs.
 */
export function readTemplateStage(
  assemblyDir: string,
  stage: StageName,
  options: {
    readonly tablePrefix: string;
    readonly region: string;
    /**
     * Each function's bundle, when not the assembly's own (an assembly synthesized without
     * bundling, for its template only, beside one that bundled the same code).
     */
    readonly bundles?: Readonly<Partial<Record<FunctionName, string>>>;
  },
): TemplateStage {
  // Absolute, so that each bundle's path is one whatever directory loads it.
  const assembly = new CloudAssembly(resolvePath(assemblyDir));
  const nested = assembly.nestedAssemblies.find((a) => a.displayName === stageId(stage));
  if (!nested) throw new TemplateError(`${assemblyDir} holds no stage ${stageId(stage)}`);
  const stageAssembly = nested.nestedAssembly;
  const names = stackNames(stage);
  const stackOf = (stackName: string) => {
    const stack = stageAssembly.stacks.find((s) => s.stackName === stackName);
    if (!stack) throw new TemplateError(`${stageId(stage)} has no stack ${stackName}`);
    return { stack, template: stack.template as Template, path: stack.hierarchicalId };
  };
  const data = stackOf(names.data);
  const api = stackOf(names.api);
  const account = '000000000000';
  const region = options.region;
  const resourceTypes: Record<string, number> = {};
  for (const { template } of [data, api]) {
    for (const resource of Object.values(template.Resources)) {
      resourceTypes[resource.Type] = (resourceTypes[resource.Type] ?? 0) + 1;
    }
  }

  // The tables: each one's logical id is its construct's, TABLES[name].id.
  const tables = {} as Record<TableName, TemplateTable>;
  for (const [logicalId, resource] of Object.entries(data.template.Resources)) {
    if (
      resource.Type !== 'AWS::DynamoDB::GlobalTable' &&
      resource.Type !== 'AWS::DynamoDB::Table'
    ) {
      continue;
    }
    const id = constructId(resource, data.path);
    const name = (Object.keys(TABLES) as TableName[]).find((n) => TABLES[n].id === id);
    if (!name) throw new TemplateError(`${logicalId}: a table this code does not know (${id})`);
    const p = resource.Properties ?? {};
    const ttl = p.TimeToLiveSpecification as
      { AttributeName?: string; Enabled?: boolean } | undefined;
    tables[name] = {
      logicalId,
      keySchema: p.KeySchema as KeySchemaElement[],
      attributeDefinitions: p.AttributeDefinitions as AttributeDefinition[],
      globalSecondaryIndexes: ((p.GlobalSecondaryIndexes ?? []) as GlobalSecondaryIndex[]).map(
        (index) => ({
          IndexName: index.IndexName,
          KeySchema: index.KeySchema,
          Projection: index.Projection,
        }),
      ),
      ...(ttl?.Enabled && ttl.AttributeName ? { timeToLiveAttribute: ttl.AttributeName } : {}),
      billingMode: typeof p.BillingMode === 'string' ? p.BillingMode : 'PROVISIONED',
    };
  }
  const missing = (Object.keys(TABLES) as TableName[]).filter((name) => !tables[name]);
  if (missing.length > 0)
    throw new TemplateError(`${names.data} has no table ${missing.join(', ')}`);
  const tableNames = templateTableNames(options.tablePrefix, tables);

  // What the Data stack's outputs and exports are locally.
  const dataRefs: Record<string, string> = {};
  const dataArns: Record<string, string> = {};
  for (const name of Object.keys(tables) as TableName[]) {
    dataRefs[tables[name].logicalId] = tableNames[name];
    dataArns[tables[name].logicalId] =
      `arn:aws:dynamodb:${region}:${account}:table/${tableNames[name]}`;
  }
  const dataResolution: Resolution = {
    region,
    account,
    refs: dataRefs,
    arns: dataArns,
    exports: {},
    parameters: {},
    conditions: {},
  };
  const exports: Record<string, string> = {};
  for (const [key, output] of Object.entries(data.template.Outputs ?? {})) {
    if (output.Export) exports[output.Export.Name] = resolve(output.Value, dataResolution, key);
  }

  // The functions of the API (the deploy hooks are CodeDeploy's: not run locally), and what an
  // integration invokes: a function's `live` alias, or (release 1.0.0) the function itself.
  const functionIds: Partial<Record<FunctionName, string>> = {};
  const aliasOf: Record<string, FunctionName> = {};
  const apiRefs: Record<string, string> = {};
  const apiArns: Record<string, string> = {};
  for (const [logicalId, resource] of Object.entries(api.template.Resources)) {
    if (resource.Type === 'AWS::Lambda::Function') {
      const name = lowerFirst(constructId(resource, api.path) ?? '') as FunctionName;
      if (!FUNCTION_NAMES.includes(name)) continue;
      functionIds[name] = logicalId;
      apiRefs[logicalId] = `${names.api}-${logicalId}`;
      apiArns[logicalId] = `arn:aws:lambda:${region}:${account}:function:${apiRefs[logicalId]}`;
    }
  }
  for (const [logicalId, resource] of Object.entries(api.template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Alias') continue;
    const target = (resource.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref;
    const name = FUNCTION_NAMES.find((n) => functionIds[n] === target);
    if (!name || !target) continue;
    aliasOf[logicalId] = name;
    apiRefs[logicalId] = `${apiArns[target]}:${String(resource.Properties?.Name)}`;
  }
  for (const name of FUNCTION_NAMES) {
    const id = functionIds[name];
    if (id) aliasOf[id] = name;
  }
  const parameters: Record<string, string> = {};
  for (const [id, parameter] of Object.entries(api.template.Parameters ?? {})) {
    if (typeof parameter.Default === 'string') parameters[id] = parameter.Default;
  }
  const base = { region, account, refs: apiRefs, arns: apiArns, exports, parameters };
  const conditions: Record<string, boolean> = {};
  for (const [id, condition] of Object.entries(api.template.Conditions ?? {})) {
    conditions[id] = evaluateCondition(condition, base, id);
  }
  const apiResolution: Resolution = { ...base, conditions };

  const assets = assetPaths(stageAssembly.artifacts, stageAssembly.directory);
  const functions: Partial<Record<FunctionName, TemplateFunction>> = {};
  for (const name of FUNCTION_NAMES) {
    const logicalId = functionIds[name];
    if (!logicalId) continue;
    const p = api.template.Resources[logicalId]!.Properties ?? {};
    const handler = String(p.Handler);
    const [file, exported] = handler.split('.');
    let bundle = options.bundles?.[name];
    if (!bundle) {
      const s3Key = (p.Code as { S3Key?: Json }).S3Key;
      const key = typeof s3Key === 'string' ? s3Key : '';
      const directory = assets[key.replace(/\.zip$/, '')];
      if (!directory) throw new TemplateError(`${logicalId}: no asset ${key} in the assembly`);
      bundle = [`${file}.js`, `${file}.mjs`]
        .map((f) => join(directory, f))
        .find((path) => existsSync(path));
      if (!bundle)
        throw new TemplateError(`${logicalId}: no ${file}.js or ${file}.mjs in ${directory}`);
    }
    const environment: Record<string, string> = {};
    const variables = (p.Environment as { Variables?: Record<string, Json> } | undefined)
      ?.Variables;
    for (const [variable, value] of Object.entries(variables ?? {})) {
      environment[variable] = resolve(value, apiResolution, `${logicalId} ${variable}`);
    }
    functions[name] = {
      logicalId,
      bundle,
      format: bundle.endsWith('.mjs') ? 'module' : 'commonjs',
      handler: exported ?? 'handler',
      runtime: String(p.Runtime),
      memoryMb: Number(p.MemorySize ?? 128),
      timeoutSeconds: Number(p.Timeout ?? 3),
      ...(p.ReservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrency: Number(p.ReservedConcurrentExecutions) }),
      environment,
    };
  }

  const apiStages = readApiStages(api.template, apiResolution, aliasOf);
  const authorizer = readAuthorizer(api.template, apiResolution, aliasOf);
  const gatewayResponses = Object.values(api.template.Resources)
    .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
    .map((r) => {
      const p = r.Properties ?? {};
      const headers: Record<string, string> = {};
      for (const [parameter, value] of Object.entries(
        (p.ResponseParameters ?? {}) as Record<string, string>,
      )) {
        headers[parameter.replace(/^gatewayresponse\.header\./, '')] = value.replace(
          /^'(.*)'$/s,
          '$1',
        );
      }
      return {
        type: String(p.ResponseType),
        status: Number(p.StatusCode),
        headers,
        body: String((p.ResponseTemplates as Record<string, string>)['application/json'] ?? ''),
      };
    });
  return { stage, tables, functions, apiStages, authorizer, gatewayResponses, resourceTypes };
}

/** The directory of each file asset of a stage, by its hash. */
function assetPaths(
  artifacts: CloudAssembly['artifacts'],
  directory: string,
): Record<string, string> {
  const paths: Record<string, string> = {};
  for (const artifact of artifacts) {
    if (!(artifact instanceof AssetManifestArtifact)) continue;
    const manifest = JSON.parse(readFileSync(artifact.file, 'utf8')) as {
      files?: Record<string, { source: { path: string } }>;
    };
    for (const [hash, file] of Object.entries(manifest.files ?? {})) {
      paths[hash] = join(directory, file.source.path);
    }
  }
  return paths;
}

/** The alias or function an integration's URI invokes (its ARN between `/functions/` and `/`). */
function invoked(
  uri: string,
  invocable: Readonly<Record<string, FunctionName>>,
  r: Resolution,
): string | undefined {
  const arn = /\/functions\/(.+?)\/(?:invocations|response-streaming-invocations)$/.exec(uri)?.[1];
  return Object.keys(invocable).find((id) => r.refs[id] === arn || r.arns[id] === arn);
}

/** Each API stage's routes, throttle and access log format. */
function readApiStages(
  template: Template,
  r: Resolution,
  aliasOf: Readonly<Record<string, FunctionName>>,
): Partial<Record<ApiStage, TemplateApiStage>> {
  const resources = template.Resources;
  const pathOf = (id: string): string => {
    const resource = resources[id];
    if (!resource || resource.Type !== 'AWS::ApiGateway::Resource') return '';
    const parent = resource.Properties?.ParentId as { Ref?: string } | undefined;
    return `${parent?.Ref ? pathOf(parent.Ref) : ''}/${String(resource.Properties?.PathPart)}`;
  };
  const methods = Object.entries(resources).filter(
    ([, m]) =>
      m.Type === 'AWS::ApiGateway::Method' &&
      httpMethods.has(m.Properties?.HttpMethod as HttpMethod),
  );
  const stages: Partial<Record<ApiStage, TemplateApiStage>> = {};
  for (const [stageId, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::ApiGateway::Stage') continue;
    const p = resource.Properties ?? {};
    const stageName = String(p.StageName) as ApiStage;
    const variables: Record<string, string> = {};
    for (const [name, value] of Object.entries((p.Variables ?? {}) as Record<string, Json>)) {
      variables[name] = resolve(value, r, `${stageId} ${name}`);
    }
    const routes: TemplateRoute[] = [];
    for (const [methodId, method] of methods) {
      const m = method.Properties ?? {};
      const integration = m.Integration as {
        Uri: Json;
        ResponseTransferMode?: string;
        TimeoutInMillis?: number;
      };
      const uri = resolve(integration.Uri, r, methodId).replace(
        /\$\{stageVariables\.(\w+)\}/g,
        (_, name: string) => variables[name] ?? '',
      );
      const alias = invoked(uri, aliasOf, r);
      if (!alias)
        throw new TemplateError(`${methodId}: its integration names no function (${uri})`);
      const resourceId = (m.ResourceId as { Ref?: string }).Ref ?? '';
      routes.push({
        operationId: aliasOf[alias] as RouteDefinition['operationId'],
        method: m.HttpMethod as HttpMethod,
        path: pathOf(resourceId),
        streaming: integration.ResponseTransferMode === 'STREAM',
        integrationTimeoutMs: integration.TimeoutInMillis ?? 29_000,
      });
    }
    const settings = ((p.MethodSettings ?? []) as Record<string, Json>[]).find(
      (s) => s.ResourcePath === '/*' && s.HttpMethod === '*',
    );
    const format = (p.AccessLogSetting as { Format?: string } | undefined)?.Format;
    stages[stageName] = {
      routes,
      ...(settings?.ThrottlingRateLimit !== undefined
        ? {
            throttle: {
              rateLimit: Number(settings.ThrottlingRateLimit),
              burstLimit: Number(settings.ThrottlingBurstLimit),
            },
          }
        : {}),
      ...(format ? { accessLogFormat: format } : {}),
    };
  }
  return stages;
}

/** The TOKEN authorizer: its function, cache TTL and identity validation expression. */
function readAuthorizer(
  template: Template,
  r: Resolution,
  aliasOf: Readonly<Record<string, FunctionName>>,
): TemplateStage['authorizer'] {
  const found = Object.entries(template.Resources).filter(
    ([, a]) => a.Type === 'AWS::ApiGateway::Authorizer',
  );
  if (found.length !== 1) throw new TemplateError(`expected one authorizer, found ${found.length}`);
  const [id, resource] = found[0]!;
  const p = resource.Properties ?? {};
  if (p.Type !== 'TOKEN') throw new TemplateError(`${id}: a ${String(p.Type)} authorizer`);
  const uri = resolve(p.AuthorizerUri, r, id);
  const alias = invoked(uri, aliasOf, r);
  if (!alias) throw new TemplateError(`${id}: its URI names no function (${uri})`);
  const expression = p.IdentityValidationExpression;
  return {
    function: aliasOf[alias]!,
    ttlSeconds: Number(p.AuthorizerResultTtlInSeconds ?? 300),
    ...(typeof expression === 'string' ? { identityValidation: new RegExp(expression) } : {}),
  };
}

/**
 * The house Lambda function: NodejsFunction with the defaults every function here shares
 * (Node.js 24 on arm64, one CommonJS file minified but for its names, the AWS SDK bundled,
 * X-Ray, a named log group with retention, the log level and metrics namespace, a `live` alias on
 * the current version, its versions kept for a rollback, provisioned concurrency with target
 * tracking on `live` when the stage sets it) and one call that binds a table: it
 * sets the variable that carries the table's name and grants exactly the actions given, on that
 * table only. The deploy hooks (infra/deploy-hooks.ts) share its runtime and bundling
 * (`houseFunctionProps`).
 */
import { CfnCondition, CfnParameter, Duration, Fn, RemovalPolicy } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Alias, Architecture, CfnAlias, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import {
  NodejsFunction,
  OutputFormat,
  type BundlingOptions,
  type NodejsFunctionProps,
} from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type ILogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { BuildOptions } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TABLES, type TableName } from '../../lib/dynamodb/tables.ts';
import { LIVE_ALIAS } from '../../lib/deployment.ts';
import type { FunctionDefinition } from '../../lib/functions.ts';
import { METRICS_NAMESPACE_ENV } from '../../lib/metrics.ts';
import { PROVISIONED_SCALING } from '../config.ts';

const FUNCTIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'functions');

/**
 * Bundling shared by every function (and by `npm run bench:cold-init`, which measures it):
 * - the AWS SDK bundled (`externalModules: []`): a pinned, tree-shaken SDK, not the runtime's;
 * - one CommonJS file: an ES module's `import` of a Node built-in makes Node build a facade of
 *   the whole built-in as it loads; `require` does not (the sources stay ES modules: esbuild
 *   bundles them, and middy is ESM-only);
 * - no source maps: `--enable-source-maps` makes Node parse the map of every module as it loads;
 * - minified for whitespace and syntax only, so that a stack trace still names its functions.
 * What each choice saves of a cold start: bench/README.md, "Cold start".
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.CJS,
  target: 'node24',
  minify: false,
  esbuildArgs: { '--minify-whitespace': true, '--minify-syntax': true },
  sourceMap: false,
  mainFields: ['module', 'main'],
  externalModules: [],
};

/** The file name of a bundle, as Lambda loads it (`index.handler`). */
export const BUNDLE_FILE = BUNDLING.format === OutputFormat.ESM ? 'index.mjs' : 'index.js';

/** The esbuild flags BUNDLING may pass through `esbuildArgs`, as esbuild's own options. */
const ESBUILD_FLAGS: Readonly<Record<string, keyof BuildOptions>> = {
  '--minify-whitespace': 'minifyWhitespace',
  '--minify-syntax': 'minifySyntax',
};

/**
 * BUNDLING as esbuild's own options, for the tools that bundle a function as the stack does
 * (`npm run bench:cold-init`, the bundle tests). A flag of `esbuildArgs` it does not know is an
 * error: those tools would otherwise bundle differently from the stack without a word.
 */
export function esbuildOptions(entry: string, outfile: string): BuildOptions {
  const flags = Object.entries(BUNDLING.esbuildArgs ?? {}).map(
    ([flag, value]): [string, unknown] => {
      const option = ESBUILD_FLAGS[flag];
      if (!option)
        throw new Error(`esbuildOptions: add ${flag} (BUNDLING.esbuildArgs) to ESBUILD_FLAGS`);
      return [option, value];
    },
  );
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: BUNDLING.format === OutputFormat.ESM ? 'esm' : 'cjs',
    target: BUNDLING.target,
    minify: BUNDLING.minify,
    ...(Object.fromEntries(flags) as BuildOptions),
    sourcemap: BUNDLING.sourceMap,
    mainFields: BUNDLING.mainFields,
    external: [...(BUNDLING.externalModules ?? [])],
    logLevel: 'silent',
  };
}

/** What every function of the stacks shares: its code, runtime, size, tracing and bundling. */
export function houseFunctionProps(definition: FunctionDefinition): NodejsFunctionProps {
  return {
    entry: join(FUNCTIONS_DIR, definition.entry),
    description: definition.description,
    runtime: Runtime.NODEJS_24_X,
    architecture: Architecture.ARM_64,
    memorySize: definition.memoryMb,
    timeout: Duration.seconds(definition.timeoutSeconds),
    tracing: Tracing.ACTIVE,
    bundling: BUNDLING,
  };
}

export interface ServiceFunctionProps {
  /** Entry file (under functions/), description, memory and timeout. */
  readonly definition: FunctionDefinition;
  /** The name of the function's log group (the stage's: `/store-orders/<stage>/<function>`). */
  readonly logGroupName: string;
  readonly logRetention: RetentionDays;
  readonly logRemovalPolicy: RemovalPolicy;
  readonly logLevel: string;
  /** CloudWatch namespace of the function's own metrics (the stage's: stages never mix). */
  readonly metricsNamespace: string;
  readonly environment?: Record<string, string>;
  /** Reserved concurrency: the function's ceiling and guarantee (default: none). */
  readonly reservedConcurrentExecutions?: number;
  /** Provisioned concurrency on `live`: the floor of its target tracking (default 0: none). */
  readonly provisionedConcurrency?: number;
}

/** A table a function uses, and the actions it may do on it. */
export interface TableUse {
  readonly name: TableName;
  readonly table: ITableV2;
  readonly actions: readonly `dynamodb:${string}`[];
}

export class ServiceFunction extends NodejsFunction {
  /** The function's own log group (its only one). */
  readonly logs: ILogGroup;
  /**
   * The alias callers invoke (`live`): it points at the version of the function's current code
   * and configuration, and a CodeDeploy deployment moves it from one version to the next.
   */
  readonly live: Alias;
  /**
   * The version `live` is on: this deploy's (`currentVersion`), unless the stack parameter
   * `<Function>LiveVersion` names another (a rollback through CloudFormation, docs/deploy.md),
   * when `livePinned` holds. What the deployment alarms watch.
   */
  readonly liveVersion: string;
  readonly livePinned: CfnCondition;
  /** The stack parameter that pins `live` to a version (empty: this deploy's). */
  readonly livePin: CfnParameter;
  readonly tableUses: TableUse[] = [];

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    const { definition } = props;
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      logGroupName: props.logGroupName,
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });
    // Its own role, allowed to write to its own log group only (not the managed
    // AWSLambdaBasicExecutionRole, which may write to any log group).
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${definition.description} (execution role)`,
    });
    logGroup.grantWrite(role);
    super(scope, id, {
      ...houseFunctionProps(definition),
      role,
      handler: 'handler',
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      logGroup,
      // A deploy that replaces the version keeps the old one (CloudFormation forgets it): what a
      // rollback points `live` back at. The post-traffic hook deletes all but the newest few.
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
      environment: {
        LOG_LEVEL: props.logLevel,
        [METRICS_NAMESPACE_ENV]: props.metricsNamespace,
        ...props.environment,
      },
    });
    this.logs = logGroup;
    // `currentVersion` is a new version whenever the code or the configuration changes (its
    // logical id is a hash of both, computed at synth, so later `useTable` calls count).
    this.livePin = new CfnParameter(scope, `${id}LiveVersion`, {
      type: 'String',
      default: '',
      allowedPattern: '^[0-9]*$',
      description: `The version of ${definition.entry} to hold live on (a rollback: docs/deploy.md); empty: the version this deploy publishes`,
    });
    this.livePinned = new CfnCondition(scope, `${id}LivePinned`, {
      expression: Fn.conditionNot(Fn.conditionEquals(this.livePin.valueAsString, '')),
    });
    this.liveVersion = Fn.conditionIf(
      this.livePinned.logicalId,
      this.livePin.valueAsString,
      this.currentVersion.version,
    ).toString();
    this.live = new Alias(this, 'Live', { aliasName: LIVE_ALIAS, version: this.currentVersion });
    // Moved by CloudFormation (through CodeDeploy) to the pinned version, when one is given: so
    // CloudFormation's record and the alias never disagree, rollback included.
    (this.live.node.defaultChild as CfnAlias).functionVersion = this.liveVersion;
    const floor = props.provisionedConcurrency ?? 0;
    if (floor > 0) {
      // The floor is the scalable target's minimum, not a property of the alias: the target
      // depends on the alias, so CloudFormation changes it only once the alias's deployment has
      // ended (Lambda refuses some provisioned-concurrency changes while the alias has weights),
      // and the deploy hooks suspend its tracking during the shift (infra/deploy-hooks.ts).
      const scaling = this.live.addAutoScaling({
        minCapacity: floor,
        maxCapacity: floor * PROVISIONED_SCALING.maxFactor,
      });
      scaling.scaleOnUtilization({ utilizationTarget: PROVISIONED_SCALING.utilizationTarget });
      (scaling as unknown as Construct).node.addDependency(this.live.node.defaultChild!);
    }
  }

  /**
   * Hands the function a table: its name in the table's variable, and only these actions on the
   * table itself — and on the indexes named, only `dynamodb:Query` (no other index is read).
   */
  useTable(
    name: TableName,
    table: ITableV2,
    actions: readonly `dynamodb:${string}`[],
    options: { readonly queriedIndexes?: readonly string[] } = {},
  ): this {
    this.tableUses.push({ name, table, actions });
    this.addEnvironment(TABLES[name].envVar, table.tableName);
    this.addToRolePolicy(
      new PolicyStatement({ actions: [...actions], resources: [table.tableArn] }),
    );
    const indexes = options.queriedIndexes ?? [];
    if (indexes.length > 0) {
      this.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: indexes.map((index) => `${table.tableArn}/index/${index}`),
        }),
      );
    }
    return this;
  }
}

/**
 * The house Lambda function: NodejsFunction with the defaults every function here shares
 * (Node.js 24 on arm64, ESM, minified with source maps, the AWS SDK bundled, X-Ray, a log group
 * with retention, Powertools settings) and one call that binds a table: it sets the variable
 * that carries the table's name and grants exactly the actions given, on that table only.
 */
import { Duration } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type ILogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { RemovalPolicy } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TABLES, type TableName } from '../../lib/dynamodb/tables.ts';
import type { FunctionDefinition } from '../../lib/functions.ts';
import { SERVICE_NAME } from '../../lib/metrics.ts';

const FUNCTIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'functions');

/**
 * Bundling shared by every function (and by `npm run bench:cold-init`, which measures it).
 * The SDK is bundled (`externalModules: []`): a pinned, tree-shaken SDK instead of whatever
 * version the runtime carries, and a faster cold start (see README, "Deploy").
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node24',
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  externalModules: [],
  // Some dependencies are CommonJS and call require(): give ESM bundles one.
  banner:
    "import { createRequire as __createRequire } from 'node:module';const require = __createRequire(import.meta.url);",
};

export interface ServiceFunctionProps {
  /** Entry file (under functions/), description, memory and timeout. */
  readonly definition: FunctionDefinition;
  readonly logRetention: RetentionDays;
  readonly logRemovalPolicy: RemovalPolicy;
  readonly logLevel: string;
  /** CloudWatch namespace of the function's own metrics (the stage's: stages never mix). */
  readonly metricsNamespace: string;
  readonly environment?: Record<string, string>;
  /** Reserved concurrency: the function's ceiling and guarantee (default: none). */
  readonly reservedConcurrentExecutions?: number;
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
  readonly tableUses: TableUse[] = [];

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    const { definition } = props;
    const logGroup = new LogGroup(scope, `${id}Logs`, {
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
      role,
      entry: join(FUNCTIONS_DIR, definition.entry),
      handler: 'handler',
      description: definition.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: definition.memoryMb,
      timeout: Duration.seconds(definition.timeoutSeconds),
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      tracing: Tracing.ACTIVE,
      logGroup,
      bundling: BUNDLING,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_LOG_LEVEL: props.logLevel,
        POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
        ...props.environment,
      },
    });
    this.logs = logGroup;
  }

  /**
   * Hands the function a table: its name in the table's variable, and only these actions on the
   * table itself (not its indexes, which no function reads).
   */
  useTable(name: TableName, table: ITableV2, actions: readonly `dynamodb:${string}`[]): this {
    this.tableUses.push({ name, table, actions });
    this.addEnvironment(TABLES[name].envVar, table.tableName);
    this.addToRolePolicy(
      new PolicyStatement({ actions: [...actions], resources: [table.tableArn] }),
    );
    return this;
  }
}

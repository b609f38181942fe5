/**
 * CodeDeploy's lifecycle hooks of the functions' deployments (functions/deploy-hooks.ts): one
 * function before any traffic moves (it refuses a version marked do-not-ship, then probes the new
 * version on the deploy check's data), one after the last shift (it watches the deployment
 * alarms and judges the new version against the old one for the stage's bake — longer, within
 * Lambda's 15 minutes, while the figures to pass it are not in — records the version to roll
 * back to, then deletes old versions beyond the stage's `versionsKept`), sharing a role and a
 * named log group. EventBridge rules hand the post-traffic function a failed or stopped
 * deployment (it resumes the scaling of provisioned concurrency that the pre-traffic function
 * suspended) and a rolled-back update of the stack (it publishes each function's rolled-back
 * code again, so that the deploy can be retried).
 *
 * Every permission the hooks use is granted when the stack is created and names no version:
 * the functions' versions by a pattern, so that no deploy's grant can race its probe (IAM
 * takes time to apply a change). They hold only what they use: the orders table only in the
 * deploy check's partitions (`dynamodb:LeadingKeys`), the alarms they watch, this stack's record.
 */
import { Duration, Stack, type RemovalPolicy } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ILambdaApplication } from 'aws-cdk-lib/aws-codedeploy';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { DEPLOY_CHECK_PARTITIONS, DEPLOY_CHECK_SHARD } from '../lib/dynamodb/tables.ts';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { DeployTarget } from '../functions/deploy-hooks/settings.ts';
import {
  DO_NOT_SHIP_ALIAS,
  HOOK_ENV,
  LIVE_ALIAS,
  logGroupName,
  ROLLBACK_ALIAS,
  ROLLED_BACK_STATUS,
  STACK_STATUS_CHANGE,
} from '../lib/deployment.ts';
import { stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageTables } from './data-stack.ts';
import { DEPLOY_HOOKS, type FunctionName } from '../lib/functions.ts';
import type { StageConfig } from './config.ts';
import { houseFunctionProps, type ServiceFunction } from './constructs/service-function.ts';

/**
 * The orders table's partition keys (`shard`) the hooks may write: the deploy check's order and
 * its list version items (lib/dynamodb/tables.ts DEPLOY_CHECK_PARTITIONS), as IAM compares them
 * (`dynamodb:LeadingKeys` holds a key's value as text).
 */
export const DEPLOY_CHECK_LEADING_KEYS: readonly string[] = [
  DEPLOY_CHECK_SHARD,
  DEPLOY_CHECK_PARTITIONS.versionKey(0).shard,
].map(String);

export interface DeployHooksProps {
  readonly config: StageConfig;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  /** The orders (the deploy check's order) and the keys (its probe key). */
  readonly tables: Pick<StageTables, 'orders' | 'apiKeys'>;
  /** Each function's deployment alarms: what the post-traffic function watches. */
  readonly alarms: Readonly<Record<FunctionName, readonly Alarm[]>>;
  readonly logRetention: RetentionDays;
  readonly logRemovalPolicy: RemovalPolicy;
}

export class DeployHooks extends Construct {
  readonly preTraffic: NodejsFunction;
  readonly postTraffic: NodejsFunction;
  readonly role: Role;
  readonly logs: LogGroup;

  constructor(scope: Construct, id: string, props: DeployHooksProps) {
    super(scope, id);
    const { config, functions, alarms, tables } = props;
    const { deployment } = config;
    this.logs = new LogGroup(this, 'Logs', {
      logGroupName: logGroupName(config.stage, 'deployHooks'),
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'CodeDeploy lifecycle hooks of the functions (execution role)',
    });
    this.logs.grantWrite(this.role);

    const targets = Object.fromEntries(
      (Object.entries(functions) as [FunctionName, ServiceFunction][]).map(([name, fn]) => [
        name,
        {
          functionName: fn.functionName,
          alarms: alarms[name].map((alarm) => alarm.alarmName),
          provisioned: config.concurrency.provisioned[name] > 0,
        } satisfies DeployTarget,
      ]),
    );
    const environment = {
      [HOOK_ENV.targets]: Stack.of(this).toJsonString(targets),
      [HOOK_ENV.bakeSeconds]: String(deployment.bakeMinutes * 60),
      [HOOK_ENV.watchProbe]: String(deployment.watchProbe),
      [HOOK_ENV.versionsKept]: String(deployment.versionsKept),
      [HOOK_ENV.ignoreAlarms]: String(deployment.ignoreAlarms),
      [HOOK_ENV.ordersTable]: tables.orders.tableName,
      [HOOK_ENV.apiKeysTable]: tables.apiKeys.tableName,
      [HOOK_ENV.metricsNamespace]: stageMetricsNamespace(config.stage),
      LOG_LEVEL: config.logLevel,
    };
    const hook = (name: 'preTraffic' | 'postTraffic') =>
      new NodejsFunction(this, name === 'preTraffic' ? 'PreTraffic' : 'PostTraffic', {
        ...houseFunctionProps(DEPLOY_HOOKS[name]),
        handler: DEPLOY_HOOKS[name].handler,
        timeout: Duration.seconds(DEPLOY_HOOKS[name].timeoutSeconds),
        role: this.role,
        logGroup: this.logs,
        environment,
      });
    this.preTraffic = hook('preTraffic');
    // The watch (the bake, and longer while figures are missing), then the pruning, in one invocation.
    this.postTraffic = hook('postTraffic');

    const arns = Object.values(functions).map((fn) => fn.functionArn);
    // The versions the pre-traffic hook probes, and the old ones the post-traffic hook deletes:
    // qualified ARNs (granted once, for every version to come: no grant races a probe); the
    // unqualified function is out of reach. The code and configuration of a version a rolled-back
    // stack names, and of `$LATEST` (the republish).
    this.role.addToPolicy(
      new PolicyStatement({
        actions: [
          'lambda:InvokeFunction',
          'lambda:DeleteFunction',
          'lambda:GetFunctionConfiguration',
        ],
        resources: arns.map((arn) => `${arn}:*`),
      }),
    );
    // The versions and aliases it reads, the version it publishes after a rolled-back update,
    // the alias it points at the version to roll back to.
    this.role.addToPolicy(
      new PolicyStatement({
        actions: [
          'lambda:ListVersionsByFunction',
          'lambda:ListAliases',
          'lambda:PublishVersion',
          'lambda:CreateAlias',
          'lambda:UpdateAlias',
          'lambda:GetFunctionConfiguration',
        ],
        resources: arns.flatMap((arn) => [arn, `${arn}:${ROLLBACK_ALIAS}`]),
      }),
    );
    // The do-not-ship mark: read, never written (an operator's).
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['lambda:GetAlias'],
        resources: arns.map((arn) => `${arn}:${DO_NOT_SHIP_ALIAS}`),
      }),
    );
    // The deploy check's order and its list version items (their partitions: lib/deploy-check.ts),
    // set back to pending with the store's write of orders: those partitions only.
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['dynamodb:BatchWriteItem', 'dynamodb:UpdateItem'],
        resources: [tables.orders.tableArn],
        conditions: {
          'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...DEPLOY_CHECK_LEADING_KEYS] },
        },
      }),
    );
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [tables.apiKeys.tableArn],
      }),
    );
    // The judgement of a deployment reads the versions' metrics (no resource-level permission).
    this.role.addToPolicy(
      new PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }),
    );
    const watched = Object.values(alarms).flat();
    if (watched.length > 0) {
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['cloudwatch:DescribeAlarms'],
          resources: watched.map((alarm) => alarm.alarmArn),
        }),
      );
    }
    const provisioned = (Object.entries(functions) as [FunctionName, ServiceFunction][]).filter(
      ([name]) => config.concurrency.provisioned[name] > 0,
    );
    if (provisioned.length > 0) {
      // Suspending and resuming a scalable target is RegisterScalableTarget, which takes no
      // resource-level permission; Application Auto Scaling checks the caller's rights on the
      // provisioned concurrency of the alias itself.
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['application-autoscaling:RegisterScalableTarget'],
          resources: ['*'],
        }),
      );
      this.role.addToPolicy(
        new PolicyStatement({
          actions: [
            'lambda:GetProvisionedConcurrencyConfig',
            'lambda:PutProvisionedConcurrencyConfig',
            'lambda:DeleteProvisionedConcurrencyConfig',
          ],
          resources: provisioned.map(([, fn]) => `${fn.functionArn}:${LIVE_ALIAS}`),
        }),
      );
    }
  }

  /**
   * Reads which group a deployment is of, and hands a failed or stopped deployment of the
   * application to the post-traffic function (to resume the scaling).
   */
  watch(application: ILambdaApplication, groupArns: readonly string[]): void {
    // After a rolled-back update: whether the stack is still rolled back, and its versions.
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['cloudformation:DescribeStacks', 'cloudformation:ListStackResources'],
        resources: [Stack.of(this).stackId],
      }),
    );
    this.role.addToPolicy(
      new PolicyStatement({
        actions: [
          'codedeploy:GetDeployment',
          'codedeploy:ListDeploymentTargets',
          'codedeploy:GetDeploymentTarget',
        ],
        resources: [...groupArns],
      }),
    );
    new Rule(this, 'DeploymentEnded', {
      description:
        'A failed or stopped deployment: resume the scaling the pre-traffic hook suspended',
      eventPattern: {
        source: ['aws.codedeploy'],
        detailType: ['CodeDeploy Deployment State-change Notification'],
        detail: { application: [application.applicationName], state: ['FAILURE', 'STOP'] },
      },
      targets: [new LambdaFunction(this.postTraffic, { retryAttempts: 2 })],
    });
    new Rule(this, 'StackRolledBack', {
      description:
        "The stack's update rolled back: publish each function's code again, so that the deploy can be retried",
      eventPattern: {
        source: ['aws.cloudformation'],
        detailType: [STACK_STATUS_CHANGE],
        detail: {
          'stack-id': [Stack.of(this).stackId],
          'status-details': { status: [ROLLED_BACK_STATUS] },
        },
      },
      targets: [new LambdaFunction(this.postTraffic, { retryAttempts: 2 })],
    });
  }
}

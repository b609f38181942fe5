/**
 * CodeDeploy's lifecycle hooks of the functions' deployments (functions/deploy-hooks.ts): one
 * function before any traffic moves (it probes the new version on the deploy check's data), one
 * after the last shift (it watches the deployment alarms and judges the new version against the
 * old one for the stage's bake, records the version to roll back to, then deletes old versions
 * beyond the stage's `versionsKept`), sharing a role and a named log group. EventBridge rules
 * hand the post-traffic function a failed or stopped deployment (it resumes the scaling of
 * provisioned concurrency that the pre-traffic function suspended) and a rolled-back update of
 * the stack (it publishes each function's code again, so that the deploy can be retried).
 *
 * Every permission the hooks use is granted when the stack is created and names no version:
 * the functions' versions by a pattern, so that no deploy's grant can race its probe (IAM
 * takes time to apply a change).
 */
import { Duration, Stack, type RemovalPolicy } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ILambdaApplication } from 'aws-cdk-lib/aws-codedeploy';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { DeployTarget } from '../functions/deploy-hooks/settings.ts';
import {
  HOOK_ENV,
  LIVE_ALIAS,
  logGroupName,
  ROLLBACK_ALIAS,
  STACK_STATUS_CHANGE,
} from '../lib/deployment.ts';
import { stageMetricsNamespace } from '../lib/metrics.ts';
import type { StageTables } from './data-stack.ts';
import { DEPLOY_HOOKS, type FunctionName } from '../lib/functions.ts';
import type { StageConfig } from './config.ts';
import { houseFunctionProps, type ServiceFunction } from './constructs/service-function.ts';

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
      [HOOK_ENV.versionsKept]: String(deployment.versionsKept),
      [HOOK_ENV.ignoreAlarms]: String(deployment.ignoreAlarms),
      [HOOK_ENV.ordersTable]: tables.orders.tableName,
      [HOOK_ENV.apiKeysTable]: tables.apiKeys.tableName,
      [HOOK_ENV.metricsNamespace]: stageMetricsNamespace(config.stage),
      LOG_LEVEL: config.logLevel,
    };
    const hook = (name: 'preTraffic' | 'postTraffic', timeout: Duration) =>
      new NodejsFunction(this, name === 'preTraffic' ? 'PreTraffic' : 'PostTraffic', {
        ...houseFunctionProps(DEPLOY_HOOKS[name]),
        handler: DEPLOY_HOOKS[name].handler,
        timeout,
        role: this.role,
        logGroup: this.logs,
        environment,
      });
    this.preTraffic = hook('preTraffic', Duration.seconds(DEPLOY_HOOKS.preTraffic.timeoutSeconds));
    // The watch, then the pruning, in one invocation.
    this.postTraffic = hook(
      'postTraffic',
      Duration.seconds(deployment.bakeMinutes * 60 + DEPLOY_HOOKS.postTraffic.timeoutSeconds),
    );

    for (const fn of Object.values(functions)) {
      // The versions the pre-traffic hook probes, and the old ones the post-traffic hook deletes:
      // qualified ARNs (granted once, for every version to come: no grant races a probe); the
      // unqualified function is out of reach.
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['lambda:InvokeFunction', 'lambda:DeleteFunction'],
          resources: [`${fn.functionArn}:*`],
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
          ],
          resources: [fn.functionArn, `${fn.functionArn}:${ROLLBACK_ALIAS}`],
        }),
      );
    }
    // The deploy check's order (its partition: lib/deploy-check.ts), set back to pending with the
    // store's write of orders; its probe key, stored and revoked.
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['dynamodb:BatchWriteItem', 'dynamodb:UpdateItem'],
        resources: [tables.orders.tableArn],
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
          'status-details': { status: ['UPDATE_ROLLBACK_COMPLETE'] },
        },
      },
      targets: [new LambdaFunction(this.postTraffic, { retryAttempts: 2 })],
    });
  }
}

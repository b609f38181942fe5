/**
 * CodeDeploy's lifecycle hooks of the functions' deployments (functions/deploy-hooks.ts): one
 * function before any traffic moves (it calls the new version), one after the last shift (it
 * watches the deployment alarms for the stage's bake, then deletes old versions beyond the
 * stage's `versionsKept`), sharing a role and a named log group. An EventBridge rule hands a
 * failed or stopped deployment to the post-traffic function, which resumes the scaling of
 * provisioned concurrency that the pre-traffic function suspended.
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
import { HOOK_ENV, LIVE_ALIAS, logGroupName } from '../lib/deployment.ts';
import { DEPLOY_HOOKS, type FunctionName } from '../lib/functions.ts';
import type { StageConfig } from './config.ts';
import { houseFunctionProps, type ServiceFunction } from './constructs/service-function.ts';

export interface DeployHooksProps {
  readonly config: StageConfig;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
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
    const { config, functions, alarms } = props;
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
          version: fn.currentVersion.version,
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
      // The new version, called by the pre-traffic hook (the exact version: no wildcard).
      fn.currentVersion.grantInvoke(this.role);
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['lambda:ListVersionsByFunction', 'lambda:ListAliases'],
          resources: [fn.functionArn],
        }),
      );
      // Deleting a version takes its qualified ARN; the unqualified function is out of reach.
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['lambda:DeleteFunction'],
          resources: [`${fn.functionArn}:*`],
        }),
      );
    }
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
      new PolicyStatement({ actions: ['codedeploy:GetDeployment'], resources: [...groupArns] }),
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
  }
}

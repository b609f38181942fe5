/**
 * Safe deployments: API Gateway invokes each function through its `live` alias
 * (infra/constructs/service-function.ts), and a CodeDeploy deployment group per function moves
 * that alias to the version a deploy publishes — gradually in production, at once in staging
 * (config.deployment.trafficShift). Before any traffic moves, the pre-traffic hook calls the new
 * version; after the last shift, the post-traffic hook watches it for the stage's bake
 * (./deploy-hooks.ts). The alias goes back to the previous version by itself when the call
 * fails, when one of the function's deployment alarms fires (infra/alarms.ts) during the shift
 * or the watch, when the deployment fails, or when an operator stops it. A hotfix deploy may
 * ignore the alarms (config.deployment.ignoreAlarms). docs/deploy.md shows how to watch, stop
 * and roll back.
 */
import { CfnOutput, Fn } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import {
  CfnDeploymentGroup,
  LambdaApplication,
  LambdaDeploymentConfig,
  LambdaDeploymentGroup,
} from 'aws-cdk-lib/aws-codedeploy';
import { Construct } from 'constructs';
import { deploymentApplicationName, STACK_OUTPUTS } from '../lib/deployment.ts';
import type { FunctionName } from '../lib/functions.ts';
import type { StageConfig } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';
import { DeployHooks, type DeployHooksProps } from './deploy-hooks.ts';

export interface SafeDeploymentsProps {
  readonly config: StageConfig;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  /** The tables the deploy check's data stand in (infra/deploy-hooks.ts). */
  readonly tables: DeployHooksProps['tables'];
  /** The alarms that roll back a deploy of each function. */
  readonly alarms: Readonly<Record<FunctionName, readonly Alarm[]>>;
}

export class SafeDeployments extends Construct {
  readonly application: LambdaApplication;
  readonly groups: Readonly<Record<FunctionName, LambdaDeploymentGroup>>;
  readonly hooks: DeployHooks;

  constructor(scope: Construct, id: string, props: SafeDeploymentsProps) {
    super(scope, id);
    const { config, functions, alarms } = props;
    this.application = new LambdaApplication(this, 'Application', {
      applicationName: deploymentApplicationName(config.stage),
    });
    this.hooks = new DeployHooks(this, 'Hooks', {
      config,
      functions,
      tables: props.tables,
      alarms,
      logRetention: config.logRetention,
      logRemovalPolicy: config.removalPolicy,
    });
    const groups = {} as Record<FunctionName, LambdaDeploymentGroup>;
    for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
      groups[name] = new LambdaDeploymentGroup(this, name, {
        application: this.application,
        deploymentGroupName: name,
        alias: fn.live,
        deploymentConfig: LambdaDeploymentConfig[config.deployment.trafficShift],
        alarms: [...alarms[name]],
        // A hotfix meant to clear one of them deploys although it is in ALARM (docs/deploy.md).
        ignoreAlarmConfiguration: config.deployment.ignoreAlarms,
        preHook: this.hooks.preTraffic,
        postHook: this.hooks.postTraffic,
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
      // A rollback through CloudFormation (a pinned version, docs/deploy.md) moves all at once.
      const shift = LambdaDeploymentConfig[config.deployment.trafficShift].deploymentConfigName;
      const rollback = LambdaDeploymentConfig.ALL_AT_ONCE.deploymentConfigName;
      (groups[name].node.defaultChild as CfnDeploymentGroup).deploymentConfigName =
        shift === rollback
          ? shift
          : Fn.conditionIf(fn.livePinned.logicalId, rollback, shift).toString();
      // The hooks are updated before the alias starts a deployment: they must know its alarms.
      fn.live.node.addDependency(this.hooks.preTraffic, this.hooks.postTraffic);
    }
    this.groups = groups;
    this.hooks.watch(
      this.application,
      Object.values(groups).map((group) => group.deploymentGroupArn),
    );
    new CfnOutput(scope, STACK_OUTPUTS.deploymentApplication, {
      value: this.application.applicationName,
      description: `CodeDeploy application: one deployment group per function (${Object.keys(functions).join(', ')})`,
    });
  }
}

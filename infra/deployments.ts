/**
 * Safe deployments: API Gateway invokes each function through its `live` alias
 * (infra/constructs/service-function.ts), and a CodeDeploy deployment group per function moves
 * that alias to the version a deploy publishes — gradually in production, at once in staging
 * (config.deployment.trafficShift) — and moves it back by itself when one of the function's
 * deployment alarms fires during the shift (infra/alarms.ts), when the deployment fails, or when
 * an operator stops it. docs/deploy.md shows how to watch and stop one.
 */
import { CfnOutput } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import {
  LambdaApplication,
  LambdaDeploymentConfig,
  LambdaDeploymentGroup,
} from 'aws-cdk-lib/aws-codedeploy';
import { Construct } from 'constructs';
import { deploymentApplicationName, STACK_OUTPUTS } from '../lib/deployment.ts';
import type { FunctionName } from '../lib/functions.ts';
import type { StageConfig } from './config.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

export interface SafeDeploymentsProps {
  readonly config: StageConfig;
  readonly functions: Readonly<Record<FunctionName, ServiceFunction>>;
  /** The alarms that roll back a deploy of each function. */
  readonly alarms: Readonly<Record<FunctionName, readonly Alarm[]>>;
}

export class SafeDeployments extends Construct {
  readonly application: LambdaApplication;
  readonly groups: Readonly<Record<FunctionName, LambdaDeploymentGroup>>;

  constructor(scope: Construct, id: string, props: SafeDeploymentsProps) {
    super(scope, id);
    const { config, functions, alarms } = props;
    this.application = new LambdaApplication(this, 'Application', {
      applicationName: deploymentApplicationName(config.stage),
    });
    const groups = {} as Record<FunctionName, LambdaDeploymentGroup>;
    for (const [name, fn] of Object.entries(functions) as [FunctionName, ServiceFunction][]) {
      groups[name] = new LambdaDeploymentGroup(this, name, {
        application: this.application,
        deploymentGroupName: name,
        alias: fn.live,
        deploymentConfig: LambdaDeploymentConfig[config.deployment.trafficShift],
        alarms: [...alarms[name]],
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
    }
    this.groups = groups;
    new CfnOutput(scope, STACK_OUTPUTS.deploymentApplication, {
      value: this.application.applicationName,
      description: `CodeDeploy application: one deployment group per function (${Object.keys(functions).join(', ')})`,
    });
  }
}

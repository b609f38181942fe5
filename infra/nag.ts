/**
 * The cdk-nag AwsSolutions findings this design accepts, each on the narrowest construct and
 * with its reason. Everything else must pass (a remaining finding fails synth).
 */
import { Stack, Validations, type CfnElement } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { StoreOrdersStage } from './stage.ts';

export interface NagAcknowledgement {
  readonly id: string;
  readonly reason: string;
}

export const NAG_ACKNOWLEDGEMENTS = {
  xrayWildcard: {
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; tracing needs Resource *.',
  },
  apiGatewayLogsRole: {
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    reason:
      'The account-level role API Gateway uses to write execution logs; the AWS-managed policy is the one AWS documents for it.',
  },
  requestValidation: {
    id: 'AwsSolutions-APIG2',
    reason:
      'No operation takes a body; the path parameter (orderId) and the query parameters of v2 are validated by the functions, which answer 400 with a precise code and message (an API Gateway validator would answer its own 400 without either).',
  },
  waf: {
    id: 'AwsSolutions-APIG3',
    reason:
      'Abuse control is per API key in the service (sliding-window limits, temporary bans) with stage throttling as a safety net; a WAF web ACL can be attached by the operator where IP-level rules are wanted.',
  },
  cognito: {
    id: 'AwsSolutions-COG4',
    reason:
      'The contract authenticates callers with bearer API keys through a Lambda (TOKEN) authorizer, not Cognito user pools.',
  },
  methodNotAllowed: {
    id: 'AwsSolutions-APIG4',
    reason:
      'The ANY methods only answer 405 METHOD_NOT_ALLOWED from a mock integration, before authentication (CONTRACT 2); they reach no function and no data.',
  },
  codeDeployRole: {
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
    reason:
      'The service role CodeDeploy uses to move a function alias and read the deployment alarms; AWS maintains this narrow policy for exactly that (aliases, alarms, its own hooks).',
  },
  hookVersions: {
    id: 'AwsSolutions-IAM5',
    reason:
      "CodeDeploy's role may invoke its lifecycle hook functions: CDK's grantInvoke names each hook function and its qualified ARNs (versions, aliases) of that function only.",
  },
  prunedVersions: {
    id: 'AwsSolutions-IAM5',
    reason:
      "The pre-traffic hook probes a function's new version and the post-traffic hook deletes its old ones, versions no template knows in advance: InvokeFunction and DeleteFunction on `<function ARN>:*` reach the function's versions (and aliases), never the function itself (its unqualified ARN). Granted once, for every version to come, so that no deploy's grant races its probe.",
  },
  scalingSuspension: {
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      "The deploy hooks suspend and resume the target tracking of provisioned concurrency (RegisterScalableTarget) and read the versions' metrics (GetMetricData), neither of which supports a resource-level permission; X-Ray needs Resource * too.",
  },
} as const satisfies Record<string, NagAcknowledgement>;

/** The finding of a wildcard on a function's qualified ARNs (`<function ARN>:*`). */
function qualifiedArnsOf(fn: IFunction): string {
  const logicalId = Stack.of(fn).getLogicalId(fn.node.defaultChild as CfnElement);
  return `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>:*]`;
}

export function acknowledgeNagFindings(stage: StoreOrdersStage): void {
  const { api, apiStages, functions, deployments } = stage.api;
  for (const fn of Object.values(functions)) {
    Validations.of(fn.role!).acknowledge(NAG_ACKNOWLEDGEMENTS.xrayWildcard);
  }
  const { hooks } = deployments;
  for (const group of Object.values(deployments.groups)) {
    Validations.of(group.role).acknowledge(NAG_ACKNOWLEDGEMENTS.codeDeployRole);
    for (const hook of [hooks.preTraffic, hooks.postTraffic]) {
      Validations.of(group.role).acknowledge({
        ...NAG_ACKNOWLEDGEMENTS.hookVersions,
        id: qualifiedArnsOf(hook),
      });
    }
  }
  Validations.of(hooks.role).acknowledge(NAG_ACKNOWLEDGEMENTS.scalingSuspension);
  for (const fn of Object.values(functions)) {
    Validations.of(hooks.role).acknowledge({
      ...NAG_ACKNOWLEDGEMENTS.prunedVersions,
      id: qualifiedArnsOf(fn),
    });
  }
  const cloudWatchRole = api.node.tryFindChild('CloudWatchRole');
  if (cloudWatchRole)
    Validations.of(cloudWatchRole).acknowledge(NAG_ACKNOWLEDGEMENTS.apiGatewayLogsRole);
  Validations.of(api).acknowledge(NAG_ACKNOWLEDGEMENTS.requestValidation);
  for (const apiStage of Object.values(apiStages)) {
    Validations.of(apiStage).acknowledge(NAG_ACKNOWLEDGEMENTS.waf);
  }
  for (const method of api.methods) {
    Validations.of(method).acknowledge(NAG_ACKNOWLEDGEMENTS.cognito);
    if (method.httpMethod === 'ANY')
      Validations.of(method).acknowledge(NAG_ACKNOWLEDGEMENTS.methodNotAllowed);
  }
}

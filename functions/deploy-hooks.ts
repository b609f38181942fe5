/**
 * The deploy hooks' Lambda entry points (lib/functions.ts DEPLOY_HOOKS; infra/deploy-hooks.ts
 * deploys them): which event goes to which hook (./deploy-hooks/hooks.ts, the flow).
 *
 * - `preTraffic`: CodeDeploy's BeforeAllowTraffic lifecycle event → `preTraffic`.
 * - `postTraffic`: CodeDeploy's AfterAllowTraffic lifecycle event → `postTraffic`; and
 *   EventBridge's notices (the rules of infra/deploy-hooks.ts target this function): a failed or
 *   stopped deployment → `deploymentEnded`, the stack's update rolled back → `stackRolledBack`.
 *   They are told apart by EventBridge's `detail-type`, which a lifecycle event has not.
 *
 * The clients are made once per container, at the first event; the settings are read by the
 * first hook, inside its verdict path (a throw here would give CodeDeploy no verdict).
 */
import { ApplicationAutoScalingClient } from '@aws-sdk/client-application-auto-scaling';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { STACK_STATUS_CHANGE } from '../lib/deployment.ts';
import { connectionFromEnv, createDocumentClient } from '../lib/dynamodb/client.ts';
import {
  createDeployHooks,
  type DeploymentStateEvent,
  type StackStatusEvent,
} from './deploy-hooks/hooks.ts';
import { settingsFromEnv } from './deploy-hooks/settings.ts';
import type { LifecycleHookEvent } from './deploy-hooks/verdict.ts';

type DeployHooks = ReturnType<typeof createDeployHooks>;

/** The two handlers over a set of hooks: the deployed ones (below), or a test's. */
export function hookHandlers(hooks: () => DeployHooks) {
  return {
    preTraffic: (event: LifecycleHookEvent, context: Partial<Context>) =>
      hooks().preTraffic(event, context),
    postTraffic: (
      event: LifecycleHookEvent | DeploymentStateEvent | StackStatusEvent,
      context: Partial<Context>,
    ) => {
      if (!('detail-type' in event)) return hooks().postTraffic(event, context);
      return event['detail-type'] === STACK_STATUS_CHANGE
        ? hooks().stackRolledBack(event as StackStatusEvent, context)
        : hooks().deploymentEnded(event as DeploymentStateEvent, context);
    },
  };
}

let deployed: DeployHooks | undefined;
export const { preTraffic, postTraffic } = hookHandlers(
  () =>
    (deployed ??= createDeployHooks({
      codeDeploy: new CodeDeployClient({}),
      lambda: new LambdaClient({}),
      autoScaling: new ApplicationAutoScalingClient({}),
      cloudWatch: new CloudWatchClient({}),
      cloudFormation: new CloudFormationClient({}),
      dynamodb: createDocumentClient(connectionFromEnv()),
      settings: () => settingsFromEnv(),
    })),
);

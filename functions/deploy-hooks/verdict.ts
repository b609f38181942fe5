/**
 * The verdict CodeDeploy waits for. A lifecycle hook gets `{DeploymentId,
 * LifecycleEventHookExecutionId}`, learns which deployment group (function) the deployment is of,
 * runs its steps, and reports `Succeeded` or `Failed` (PutLifecycleEventHookExecutionStatus):
 * `Failed` fails the deployment, which moves the alias back to the previous version and makes
 * CloudFormation roll the stack update back. Whatever the steps do — pass, fail, throw — the
 * report is sent: without one CodeDeploy waits an hour.
 */
import {
  GetDeploymentCommand,
  PutLifecycleEventHookExecutionStatusCommand,
  type CodeDeployClient,
} from '@aws-sdk/client-codedeploy';
import type { Context } from 'aws-lambda';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import { logger, type Logger } from '../shared/logger.ts';

/** What CodeDeploy gives a lifecycle hook. */
export interface LifecycleHookEvent {
  readonly DeploymentId: string;
  readonly LifecycleEventHookExecutionId: string;
}

export type HookVerdict = 'Succeeded' | 'Failed';

/** The deployment group (named after its function) a deployment is of. */
export async function groupOf(
  codeDeploy: CodeDeployClient,
  deploymentId: string,
): Promise<FunctionName> {
  const { deploymentInfo } = await codeDeploy.send(new GetDeploymentCommand({ deploymentId }));
  const group = deploymentInfo?.deploymentGroupName;
  if (!(FUNCTION_NAMES as readonly string[]).includes(group ?? '')) {
    throw new Error(`deployment ${deploymentId} is of group ${group}, which no function has`);
  }
  return group as FunctionName;
}

async function report(
  codeDeploy: CodeDeployClient,
  event: LifecycleHookEvent,
  status: HookVerdict,
): Promise<void> {
  await codeDeploy.send(
    new PutLifecycleEventHookExecutionStatusCommand({
      deploymentId: event.DeploymentId,
      lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
      status,
    }),
  );
}

/**
 * Runs a hook's steps and reports their verdict: `Failed` when they throw (the reason logged
 * under the hook's name).
 */
export async function withVerdict(
  codeDeploy: CodeDeployClient,
  name: string,
  event: LifecycleHookEvent,
  context: Partial<Context>,
  steps: (log: Logger) => Promise<HookVerdict>,
): Promise<HookVerdict> {
  const log = logger.startInvocation(context, event.DeploymentId);
  let verdict: HookVerdict = 'Failed';
  try {
    verdict = await steps(log);
  } catch (error) {
    log.error(`${name} failed: failing the deployment`, { error: error as Error });
  }
  await report(codeDeploy, event, verdict);
  return verdict;
}

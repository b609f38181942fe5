/**
 * The verdict CodeDeploy waits for. A lifecycle hook gets `{DeploymentId,
 * LifecycleEventHookExecutionId}`, learns from CodeDeploy what the deployment is (its group,
 * named after the function; the version `live` served and the one it moves to; when it started;
 * whether this lifecycle event still waits for a verdict), runs its steps, and reports
 * `Succeeded` or `Failed` (PutLifecycleEventHookExecutionStatus): `Failed` fails the deployment,
 * which moves the alias back to the previous version and makes CloudFormation roll the stack
 * update back.
 *
 * Every path ends in one report: steps that pass, fail or throw, an environment that cannot be
 * read. Sending it is tried again within the hook's time (a lost answer to a report that landed
 * is CodeDeploy's "already completed"); if it still cannot be sent, the hook says so and returns
 * without throwing — Lambda would otherwise run the whole hook again (an asynchronous invocation
 * that fails is retried), suspending scaling again or baking again. A second run of the same
 * event (a retry, or an event delivered twice) finds the lifecycle event judged, or the
 * deployment over, and does nothing.
 */
import {
  GetDeploymentCommand,
  GetDeploymentTargetCommand,
  LifecycleEventAlreadyCompletedException,
  ListDeploymentTargetsCommand,
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

/** The lifecycle events of a Lambda deployment that run the hooks. */
export type LifecycleEventName = 'BeforeAllowTraffic' | 'AfterAllowTraffic';

/** A deployment as CodeDeploy records it. */
export interface DeploymentState {
  /** The deployment group (named after its function). */
  readonly group: FunctionName;
  /** InProgress, Succeeded, Failed, Stopped, … */
  readonly status: string | undefined;
  /** When it was created (epoch ms). */
  readonly startedAt: number | undefined;
  /** The version `live` served when it started, and the one it moves `live` to. */
  readonly currentVersion: string | undefined;
  readonly targetVersion: string | undefined;
  /** The status of the hook's own lifecycle event (InProgress while it waits for the verdict). */
  readonly hookStatus: string | undefined;
}

/** A deployment that no longer waits for this hook: its event judged, or the deployment over. */
function judgedAlready(state: DeploymentState): boolean {
  const over = ['Succeeded', 'Failed', 'Stopped'].includes(state.status ?? '');
  const decided = ['Succeeded', 'Failed', 'Skipped'].includes(state.hookStatus ?? '');
  return over || decided;
}

/** The deployment, as CodeDeploy records it (its group must be one of the functions'). */
export async function deploymentState(
  codeDeploy: CodeDeployClient,
  deploymentId: string,
  lifecycleEvent: LifecycleEventName,
): Promise<DeploymentState> {
  const { deploymentInfo } = await codeDeploy.send(new GetDeploymentCommand({ deploymentId }));
  const group = deploymentInfo?.deploymentGroupName;
  if (!(FUNCTION_NAMES as readonly string[]).includes(group ?? '')) {
    throw new Error(`deployment ${deploymentId} is of group ${group}, which no function has`);
  }
  const { targetIds = [] } = await codeDeploy.send(
    new ListDeploymentTargetsCommand({ deploymentId }),
  );
  const { deploymentTarget } = await codeDeploy.send(
    new GetDeploymentTargetCommand({ deploymentId, targetId: targetIds[0] }),
  );
  const target = deploymentTarget?.lambdaTarget;
  return {
    group: group as FunctionName,
    status: deploymentInfo?.status,
    startedAt: deploymentInfo?.createTime?.getTime(),
    currentVersion: target?.lambdaFunctionInfo?.currentVersion,
    targetVersion: target?.lambdaFunctionInfo?.targetVersion,
    hookStatus: target?.lifecycleEvents?.find((e) => e.lifecycleEventName === lifecycleEvent)
      ?.status,
  };
}

/** How many times a verdict is sent before the hook gives up, and the wait before each retry. */
export const VERDICT_ATTEMPTS = 3;
const VERDICT_RETRY_MS = 2_000;

async function report(
  codeDeploy: CodeDeployClient,
  event: LifecycleHookEvent,
  status: HookVerdict,
  log: Logger,
  sleep: (ms: number) => Promise<void>,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await codeDeploy.send(
        new PutLifecycleEventHookExecutionStatusCommand({
          deploymentId: event.DeploymentId,
          lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
          status,
        }),
      );
      return true;
    } catch (error) {
      // An earlier attempt landed, its answer did not: the verdict is in.
      if (error instanceof LifecycleEventAlreadyCompletedException) return true;
      if (attempt >= VERDICT_ATTEMPTS) {
        log.error(
          'Verdict not sent: CodeDeploy fails the deployment when the hour it waits for one ends',
          { status, attempts: attempt, error: error as Error },
        );
        return false;
      }
      await sleep(VERDICT_RETRY_MS * attempt);
    }
  }
}

/**
 * Runs a hook's steps on the deployment and reports their verdict once: `Failed` when they
 * throw (the reason logged under the hook's name). Returns the verdict, or undefined when the
 * deployment had no need of one (a second run).
 */
export async function withVerdict(
  codeDeploy: CodeDeployClient,
  hook: { readonly name: string; readonly lifecycleEvent: LifecycleEventName },
  event: LifecycleHookEvent,
  context: Partial<Context>,
  sleep: (ms: number) => Promise<void>,
  steps: (state: DeploymentState, log: Logger) => Promise<HookVerdict>,
): Promise<HookVerdict | undefined> {
  const log = logger.startInvocation(context, event.DeploymentId);
  let verdict: HookVerdict = 'Failed';
  try {
    const state = await deploymentState(codeDeploy, event.DeploymentId, hook.lifecycleEvent);
    if (judgedAlready(state)) {
      log.info(`${hook.name}: the deployment needs no verdict any more, nothing done`, {
        group: state.group,
        status: state.status,
        hookStatus: state.hookStatus,
      });
      return undefined;
    }
    verdict = await steps(state, log);
  } catch (error) {
    log.error(`${hook.name} failed: failing the deployment`, { error: error as Error });
  }
  await report(codeDeploy, event, verdict, log, sleep);
  return verdict;
}

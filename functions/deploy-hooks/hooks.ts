/**
 * The deploy hooks' flow, top to bottom: the steps of each hook, each step in a room of its own
 * (./probes.ts, ./scaling.ts, ./bake.ts, ./prune.ts), inside the verdict CodeDeploy waits for
 * (./verdict.ts), with the settings of ./settings.ts.
 *
 * preTraffic (BeforeAllowTraffic), before any traffic moves to the new version:
 *  1. suspends the target tracking of the alias's provisioned concurrency (./scaling.ts);
 *  2. calls the new version once, as API Gateway would (./probes.ts). Another answer than its
 *     probe expects — a 500, a failed invocation — fails the deployment, and the scaling is
 *     resumed.
 * postTraffic (AfterAllowTraffic), after the last shift (the alias has no weights any more):
 *  1. resumes the scaling;
 *  2. watches the group's deployment alarms for the stage's bake (./bake.ts): fails the
 *     deployment as soon as one is in ALARM (unless the deploy ignores alarms: a hotfix);
 *  3. deletes the function's old versions (./prune.ts), then succeeds.
 * deploymentEnded: EventBridge's notice of a failed or stopped deployment, which may never reach
 * postTraffic: resumes the scaling preTraffic suspended. It gives no verdict (none is awaited).
 *
 * A hook that fails unexpectedly still gives its verdict (Failed), a missing or malformed setting
 * in its environment included: CodeDeploy would otherwise wait an hour for it.
 */
import type { ApplicationAutoScalingClient } from '@aws-sdk/client-application-auto-scaling';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import { logger, type Logger } from '../shared/logger.ts';
import { bake } from './bake.ts';
import { probe } from './probes.ts';
import { prune } from './prune.ts';
import { setScaling } from './scaling.ts';
import type { HookSettings } from './settings.ts';
import { groupOf, withVerdict, type HookVerdict, type LifecycleHookEvent } from './verdict.ts';

export interface DeployHookDependencies {
  readonly codeDeploy: CodeDeployClient;
  readonly lambda: LambdaClient;
  readonly autoScaling: ApplicationAutoScalingClient;
  readonly cloudWatch: CloudWatchClient;
  /**
   * The settings, or how to read them: read inside a hook's verdict path, so that a missing or
   * malformed one fails the deployment at once instead of leaving CodeDeploy without a verdict.
   */
  readonly settings: HookSettings | (() => HookSettings);
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** EventBridge's notice of a deployment's state (`CodeDeploy Deployment State-change Notification`). */
export interface DeploymentStateEvent {
  readonly 'detail-type': string;
  readonly detail: { readonly deploymentGroup?: string; readonly state?: string };
}

export function createDeployHooks(deps: DeployHookDependencies) {
  let read: HookSettings | undefined;
  /** The settings, read once, at the first hook that needs them (a failed read is tried again). */
  const settings = (): HookSettings =>
    (read ??= typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  /** A lifecycle hook: its steps for the deployment's group, inside the verdict. */
  const lifecycleHook = (
    name: string,
    event: LifecycleHookEvent,
    context: Partial<Context>,
    steps: (group: FunctionName, settings: HookSettings, log: Logger) => Promise<HookVerdict>,
  ) =>
    withVerdict(deps.codeDeploy, name, event, context, async (log) => {
      // First of all: a hook whose environment is wrong fails the deployment, with the reason.
      const current = settings();
      return steps(await groupOf(deps.codeDeploy, event.DeploymentId), current, log);
    });

  return {
    preTraffic: (event: LifecycleHookEvent, context: Partial<Context> = {}) =>
      lifecycleHook('Pre-traffic check', event, context, async (group, { targets }, log) => {
        const target = targets[group];
        await setScaling(deps.autoScaling, group, target, true, log);
        const requestId = `deploy-check-${event.DeploymentId}`;
        const answer = await probe(deps.lambda, group, target, requestId, now());
        const fields = { group, version: target.version, answer: answer.got };
        if (answer.ok) {
          log.info('Pre-traffic check passed', fields);
          return 'Succeeded';
        }
        log.error('Pre-traffic check failed: the new version gets no traffic', fields);
        await setScaling(deps.autoScaling, group, target, false, log);
        return 'Failed';
      }),

    postTraffic: (event: LifecycleHookEvent, context: Partial<Context> = {}) =>
      lifecycleHook('Post-traffic watch', event, context, async (group, current, log) => {
        const target = current.targets[group];
        await setScaling(deps.autoScaling, group, target, false, log);
        const firing = await bake(
          deps.cloudWatch,
          group,
          {
            alarms: target.alarms,
            seconds: current.bakeSeconds,
            ignoreAlarms: current.ignoreAlarms,
            now,
            sleep,
          },
          log,
        );
        if (firing.length > 0) {
          log.error('Alarm in ALARM after the last shift: rolling the deploy back', {
            group,
            alarms: firing,
          });
          return 'Failed';
        }
        await prune(deps.lambda, group, target.functionName, current.versionsKept, log);
        return 'Succeeded';
      }),

    deploymentEnded: async (
      event: DeploymentStateEvent,
      context: Partial<Context> = {},
    ): Promise<void> => {
      // A failed or stopped deployment: the pre-traffic hook's suspension ends here.
      const group = event.detail.deploymentGroup;
      const log = logger.startInvocation(context);
      if (!(FUNCTION_NAMES as readonly string[]).includes(group ?? '')) return;
      log.info('Deployment ended without the post-traffic hook', {
        group,
        state: event.detail.state,
      });
      try {
        const name = group as FunctionName;
        await setScaling(deps.autoScaling, name, settings().targets[name], false, log);
      } catch (error) {
        // No verdict to give: EventBridge tries again (its retries), the line says why.
        log.error('Scaling not resumed', { group, error: error as Error });
        throw error;
      }
    },
  };
}

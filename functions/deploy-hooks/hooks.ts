/**
 * The deploy hooks' flow, top to bottom: the steps of each hook, each step in a room of its own
 * (./do-not-ship.ts, ./probes.ts, ./scaling.ts, ./bake.ts, ./judge.ts, ./rollback-alias.ts,
 * ./prune.ts, ./republish.ts), inside the verdict CodeDeploy waits for (./verdict.ts: what the
 * deployment is, a verdict on every path, once; nothing done by a second run), with the settings
 * of ./settings.ts.
 *
 * preTraffic (BeforeAllowTraffic), before any traffic moves to the new version (the deployment's
 * target version, as CodeDeploy records it):
 *  1. refuses a version marked do-not-ship (./do-not-ship.ts: a version an operator rolled back
 *     from, which a deploy of unchanged code would otherwise serve again);
 *  2. suspends the target tracking of the alias's provisioned concurrency (./scaling.ts);
 *  3. probes the new version's real work on the deploy check's data (./probes.ts), every call
 *     within a budget that ends before the hook's own timeout. An answer other than its probe
 *     expects — a 500, a failed invocation, no answer in time, a body that stalls — fails the
 *     deployment, and the scaling is resumed.
 * postTraffic (AfterAllowTraffic), after the last shift (the alias has no weights any more):
 *  1. resumes the scaling;
 *  2. watches the new version for the stage's bake (./bake.ts): the group's deployment alarms,
 *     and its judgement against the old version over the deployment (./judge.ts), with the
 *     stage's probes of it at each read when it has them; fails the deployment at the first alarm
 *     in ALARM or reason to fail (unless the deploy ignores alarms: a hotfix); passes a version
 *     moved forward only on figures of its own, watching longer for them within its time;
 *  3. records the version `live` served before as the one to roll back to (./rollback-alias.ts),
 *     deletes the function's old versions (./prune.ts), then succeeds.
 * deploymentEnded: EventBridge's notice of a failed or stopped deployment, which may never reach
 * postTraffic: resumes the scaling preTraffic suspended. It gives no verdict (none is awaited).
 * stackRolledBack: EventBridge's notice that the stack's update rolled back: each function
 * publishes its rolled-back code as a version, so that the same deploy can be tried again
 * (./republish.ts).
 */
import type { ApplicationAutoScalingClient } from '@aws-sdk/client-application-auto-scaling';
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { METRICS_DELAY_MS } from '../../lib/deploy-judgement.ts';
import { DO_NOT_SHIP_ALIAS } from '../../lib/deployment.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DEPLOY_CHECK_PARTITIONS } from '../../lib/dynamodb/tables.ts';
import { DEPLOY_HOOKS, FUNCTION_NAMES, FUNCTIONS, type FunctionName } from '../../lib/functions.ts';
import { logger } from '../shared/logger.ts';
import { bake } from './bake.ts';
import { doNotShip } from './do-not-ship.ts';
import { judgeDeployment, NO_PROBES, type ProbeTally } from './judge.ts';
import { probe, type ProbeDependencies } from './probes.ts';
import { prune } from './prune.ts';
import { isRolledBack, republish, stackStatus, stackVersions } from './republish.ts';
import { recordRollbackVersion } from './rollback-alias.ts';
import { setScaling } from './scaling.ts';
import type { HookSettings } from './settings.ts';
import { withVerdict, type DeploymentState, type LifecycleHookEvent } from './verdict.ts';

export interface DeployHookDependencies {
  readonly codeDeploy: CodeDeployClient;
  readonly lambda: LambdaClient;
  readonly autoScaling: ApplicationAutoScalingClient;
  readonly cloudWatch: CloudWatchClient;
  /** The stack's record of its functions' versions (the republish after a rollback). */
  readonly cloudFormation: CloudFormationClient;
  /** The client of the deploy check's data (its order, its probe key). */
  readonly dynamodb: DynamoDBDocumentClient;
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

/** EventBridge's notice of a stack's status (`CloudFormation Stack Status Change`). */
export interface StackStatusEvent {
  readonly 'detail-type': string;
  readonly detail: {
    readonly 'stack-id'?: string;
    readonly 'status-details'?: { readonly status?: string };
  };
}

/** What the pre-traffic hook keeps back of its timeout: the time to send its verdict. */
export const VERDICT_RESERVE_MS = 15_000;
/**
 * What the post-traffic hook keeps back of its timeout after the watch: the time to record the
 * rollback version, prune and send its verdict.
 */
export const WATCH_RESERVE_MS = 120_000;

const MINUTE = 60_000;

export function createDeployHooks(deps: DeployHookDependencies) {
  let read: HookSettings | undefined;
  /** The settings, read once, at the first hook that needs them (a failed read is tried again). */
  const settings = (): HookSettings =>
    (read ??= typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  /**
   * What a lifecycle hook works on: the settings (read first of all: a hook whose environment is
   * wrong fails the deployment, with the reason), the deployment's function and its new version.
   */
  const targetOf = (deployment: DeploymentState) => {
    const current = settings();
    const { group, targetVersion } = deployment;
    if (targetVersion === undefined) throw new Error('CodeDeploy names no target version');
    return { current, group, targetVersion, target: current.targets[group] };
  };

  /** When a hook's work must be done: before its timeout, less `reserve`. */
  const deadlineOf = (
    context: Partial<Context>,
    hook: keyof typeof DEPLOY_HOOKS,
    reserve: number,
  ) =>
    now() +
    (context.getRemainingTimeInMillis?.() ?? DEPLOY_HOOKS[hook].timeoutSeconds * 1000) -
    reserve;

  /** What the probes need, on the settings' tables. */
  const probeDeps = (current: HookSettings): ProbeDependencies => ({
    lambda: deps.lambda,
    deployCheckOrders: () =>
      new DynamoDbOrderStore(deps.dynamodb, current.ordersTable, {
        partitions: DEPLOY_CHECK_PARTITIONS,
      }),
    keys: () => new DynamoDbKeyStore(deps.dynamodb, current.apiKeysTable),
    now,
  });

  return {
    preTraffic: (event: LifecycleHookEvent, context: Partial<Context> = {}) =>
      withVerdict(
        deps.codeDeploy,
        { name: 'Pre-traffic check', lifecycleEvent: 'BeforeAllowTraffic' },
        event,
        context,
        sleep,
        async (deployment, log) => {
          const { current, group, targetVersion, target } = targetOf(deployment);
          const mark = await doNotShip(deps.lambda, target.functionName);
          if (mark?.version === targetVersion) {
            log.error('Pre-traffic check failed: the new version is marked do-not-ship', {
              group,
              version: targetVersion,
              alias: DO_NOT_SHIP_ALIAS,
              mark: mark.description,
            });
            return 'Failed';
          }
          await setScaling(deps.autoScaling, group, target, true, log);
          const answer = await probe(probeDeps(current), group, {
            functionName: target.functionName,
            version: targetVersion,
            requestId: `deploy-check-${event.DeploymentId}`,
            deadline: deadlineOf(context, 'preTraffic', VERDICT_RESERVE_MS),
          });
          const fields = { group, version: targetVersion, answer: answer.got };
          if (answer.ok) {
            log.info('Pre-traffic check passed', fields);
            return 'Succeeded';
          }
          log.error('Pre-traffic check failed: the new version gets no traffic', fields);
          await setScaling(deps.autoScaling, group, target, false, log);
          return 'Failed';
        },
      ),

    postTraffic: (event: LifecycleHookEvent, context: Partial<Context> = {}) =>
      withVerdict(
        deps.codeDeploy,
        { name: 'Post-traffic watch', lifecycleEvent: 'AfterAllowTraffic' },
        event,
        context,
        sleep,
        async (deployment, log) => {
          const { current, group, targetVersion, target } = targetOf(deployment);
          const { currentVersion, startedAt } = deployment;
          const shiftedAt = now();
          const deadline = deadlineOf(context, 'postTraffic', WATCH_RESERVE_MS);
          await setScaling(deps.autoScaling, group, target, false, log);
          // A deployment back to an older version (a rollback) lands on one that served before:
          // its figures are judged, but it is not held back for want of them.
          const forward =
            currentVersion === undefined || Number(targetVersion) > Number(currentVersion);
          const probes = { ...NO_PROBES };
          const watchProbe = async (): Promise<ProbeTally> => {
            if (!current.watchProbe) return probes;
            const answer = await probe(
              probeDeps(current),
              group,
              {
                functionName: target.functionName,
                version: targetVersion,
                requestId: `deploy-watch-${event.DeploymentId}-${probes.requests}`,
                deadline,
              },
              { repeat: true },
            );
            probes.requests += answer.calls;
            if (!answer.ok) {
              probes[answer.unavailable ? 'unavailable' : 'failures'] += 1;
              log.warn('Watch probe of the new version failed', { group, answer: answer.got });
            }
            return probes;
          };
          const judged =
            currentVersion === undefined || startedAt === undefined
              ? undefined
              : {
                  group,
                  functionName: target.functionName,
                  namespace: current.metricsNamespace,
                  newVersion: targetVersion,
                  oldVersion: currentVersion,
                  startedAt,
                  shiftedAt,
                };
          const outcome = await bake(
            deps.cloudWatch,
            group,
            {
              alarms: target.alarms,
              ...(judged && {
                judge: async () => {
                  const tally = await watchProbe();
                  const judgement = await judgeDeployment(deps.cloudWatch, judged, now(), tally);
                  log.info('Judgement of the new version', {
                    group,
                    newer: judgement.newer,
                    older: judgement.older,
                    own: judgement.own,
                    chance: judgement.chance,
                    unavailableChance: judgement.unavailableChance,
                    latencyRatio: judgement.latencyRatio,
                    ...(judgement.missing !== undefined ? { missing: judgement.missing } : {}),
                  });
                  return {
                    reasons: judgement.reasons,
                    ...(forward && judgement.missing !== undefined
                      ? { missing: judgement.missing }
                      : {}),
                  };
                },
              }),
              seconds: current.bakeSeconds,
              settledAt: settledAt(group, shiftedAt),
              deadline,
              ignoreAlarms: current.ignoreAlarms,
              now,
              sleep,
            },
            log,
          );
          if (outcome.failed.length > 0) {
            log.error('The new version failed its watch: rolling the deploy back', {
              group,
              alarms: outcome.failed,
            });
            return 'Failed';
          }
          log.info('Watch passed', {
            group,
            version: targetVersion,
            probes,
            notSeen: notSeen(group, outcome.unsettled === true),
          });
          await recordRollbackVersion(
            deps.lambda,
            group,
            target.functionName,
            { replaced: currentVersion, deployed: targetVersion },
            log,
          );
          await prune(deps.lambda, group, target.functionName, current.versionsKept, log);
          return 'Succeeded';
        },
      ),

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

    stackRolledBack: async (
      event: StackStatusEvent,
      context: Partial<Context> = {},
    ): Promise<void> => {
      const log = logger.startInvocation(context);
      const stackId = event.detail['stack-id'] ?? '';
      log.info('Stack update rolled back: publishing each function as it is now', {
        stack: stackId,
        status: event.detail['status-details']?.status,
      });
      // Only once the stack is rolled back, and while it is: one updating again is a retry.
      const status = await stackStatus(deps.cloudFormation, stackId);
      if (!isRolledBack(status)) {
        log.info('Nothing published: the stack is no longer rolled back', { stackId, status });
        return;
      }
      const versions = await stackVersions(deps.cloudFormation, stackId);
      const failed: string[] = [];
      for (const name of FUNCTION_NAMES) {
        const { functionName } = settings().targets[name];
        try {
          const version = versions.get(functionName);
          if (version === undefined)
            throw new Error(`the stack names no version of ${functionName}`);
          await republish(deps.lambda, functionName, version, log);
        } catch (error) {
          failed.push(name);
          log.error('Version not published after the rollback', {
            group: name,
            error: error as Error,
          });
        }
      }
      // EventBridge tries again (publishing again is harmless: nothing changed, nothing published).
      if (failed.length > 0) throw new Error(`not published: ${failed.join(', ')}`);
    },
  };
}

/**
 * When the figures of the new version's first invocations after the last shift are in: Lambda
 * sends a minute's metrics once the minute is over, stamped at each invocation's start, so an
 * invocation's are in once it has ended (up to the function's timeout) and its minute is over,
 * and METRICS_DELAY_MS later: the first whole minute after the shift, or its longest invocation.
 */
export function settledAt(group: FunctionName, shiftedAt: number): number {
  const firstWholeMinuteEnd = Math.ceil(shiftedAt / MINUTE) * MINUTE + MINUTE;
  const longestEnd = shiftedAt + FUNCTIONS[group].timeoutSeconds * 1000;
  return Math.max(firstWholeMinuteEnd, Math.ceil(longestEnd / MINUTE) * MINUTE) + METRICS_DELAY_MS;
}

/**
 * What a passed watch did not see: CloudWatch's figures of its last METRICS_DELAY_MS, and, for a
 * function whose invocations run longer than the watch could wait (`unsettled`), those still
 * running: Lambda reports an invocation once it ends.
 */
function notSeen(group: FunctionName, unsettled: boolean): string {
  const delay = `CloudWatch's figures of its last ${METRICS_DELAY_MS / 1000} s`;
  return unsettled
    ? `${delay}, and ${group}'s invocations still running (up to ${FUNCTIONS[group].timeoutSeconds} s: Lambda reports one when it ends)`
    : delay;
}

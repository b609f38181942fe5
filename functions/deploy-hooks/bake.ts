/**
 * The bake: the watch of a new version after the last shift, when CodeDeploy's own watch of the
 * deployment alarms is no longer promised (docs/deploy.md, "Who watches the alarms"). At once
 * and every ALARM_POLL_MS it reads the group's deployment alarms and the hook's judgement of the
 * deployment so far (./judge.ts, which may first probe the new version: its `read`), and ends at
 * the first read that finds an alarm in ALARM or a reason to fail (unless the deploy ignores
 * alarms: a hotfix).
 *
 * It fails closed: it passes the new version only once the stage's bake is over, the figures of
 * the first invocations after the shift can have come in (`settledAt`), and the judgement has
 * figures enough of the new version's own. Without them it watches on, up to its `deadline` (the
 * hook's own time, less what it needs after), then fails, saying which figures it lacked. When
 * the deadline comes before `settledAt` (a function that runs longer than the watch can wait),
 * it passes on what it has and says what it could not see.
 */
import { DescribeAlarmsCommand, type CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { FunctionName } from '../../lib/functions.ts';
import type { Logger } from '../shared/logger.ts';

/** How often the post-traffic hook reads the alarms and judges while it watches. */
export const ALARM_POLL_MS = 20_000;

/** One read of the judgement: why the new version fails, and why its figures are not enough yet. */
export interface WatchRead {
  readonly reasons: readonly string[];
  readonly missing?: string;
}

export interface BakeOptions {
  readonly alarms: readonly string[];
  /** The judgement of the deployment so far. */
  readonly judge?: () => Promise<WatchRead>;
  readonly seconds: number;
  /** When the first invocations after the shift have reported (epoch ms). */
  readonly settledAt: number;
  /** When the watch must end, passed or failed (epoch ms). */
  readonly deadline: number;
  readonly ignoreAlarms: boolean;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** How the watch ended: the reasons it failed, or none; and what it passed without seeing. */
export interface BakeOutcome {
  readonly failed: readonly string[];
  readonly unsettled?: boolean;
}

const NOTHING_READ: WatchRead = { reasons: [] };

/** The alarms of the list in ALARM now. */
async function alarmsFiring(cloudWatch: CloudWatchClient, names: readonly string[]) {
  if (names.length === 0) return [];
  const { MetricAlarms = [], CompositeAlarms = [] } = await cloudWatch.send(
    new DescribeAlarmsCommand({ AlarmNames: [...names] }),
  );
  return [...MetricAlarms, ...CompositeAlarms]
    .filter((alarm) => alarm.StateValue === 'ALARM')
    .map((alarm) => alarm.AlarmName ?? '');
}

/** Watches a group's new version: what ended it (reasons to fail), or none. */
export async function bake(
  cloudWatch: CloudWatchClient,
  group: FunctionName,
  options: BakeOptions,
  log: Logger,
): Promise<BakeOutcome> {
  const { now, sleep } = options;
  const end = now() + options.seconds * 1000;
  log.info('Watching the new version', { group, seconds: options.seconds });
  let extended = false;
  for (;;) {
    // The alarms and the judgement read at once: a poll waits for the slower of the two.
    const [alarms, read] = await Promise.all([
      alarmsFiring(cloudWatch, options.alarms),
      options.judge?.() ?? NOTHING_READ,
    ]);
    const firing = [...alarms, ...read.reasons];
    const ignored = options.ignoreAlarms;
    if (firing.length > 0) {
      if (!ignored) return { failed: firing };
      log.warn('Alarm in ALARM ignored (deployIgnoringAlarms)', { group, alarms: firing });
    }
    const at = now();
    // A hotfix passes without the figures too (logged with the judgement, not obeyed).
    const missing = ignored ? undefined : read.missing;
    if (at >= end || at >= options.deadline) {
      if (missing === undefined && at >= options.settledAt && at >= end) return { failed: [] };
      if (at >= options.deadline) {
        if (missing !== undefined) {
          return { failed: [`no verdict without the new version's figures: ${missing}`] };
        }
        return { failed: [], unsettled: true };
      }
      if (!extended) {
        extended = true;
        log.info('Watch extended: the figures to pass the new version are not in yet', {
          group,
          ...(missing !== undefined ? { missing } : {}),
          until: new Date(
            missing !== undefined
              ? options.deadline
              : Math.min(options.deadline, options.settledAt),
          ).toISOString(),
        });
      }
    }
    // The next read: on the poll, and not past what the watch waits for (the bake's end, then
    // the first invocations' figures, then the deadline).
    const next = Math.min(
      options.deadline,
      at < end
        ? end
        : missing === undefined && at < options.settledAt
          ? options.settledAt
          : Infinity,
    );
    await sleep(Math.max(1, Math.min(ALARM_POLL_MS, next - at)));
  }
}

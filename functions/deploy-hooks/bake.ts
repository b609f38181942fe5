/**
 * The bake: the watch of a new version after the last shift, when CodeDeploy's own watch of the
 * deployment alarms is no longer promised (docs/deploy.md, "Who watches the alarms"). At once
 * and every ALARM_POLL_MS until the stage's bake ends it reads the group's deployment alarms and
 * the hook's judgement of the deployment so far (./judge.ts), and ends at the first read that
 * finds an alarm in ALARM or a reason to fail (unless the deploy ignores alarms: a hotfix).
 */
import { DescribeAlarmsCommand, type CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { FunctionName } from '../../lib/functions.ts';
import type { Logger } from '../shared/logger.ts';

/** How often the post-traffic hook reads the alarms and judges while it watches. */
export const ALARM_POLL_MS = 20_000;

export interface BakeOptions {
  readonly alarms: readonly string[];
  /** The judgement of the deployment so far: why it fails, or nothing. */
  readonly judge?: () => Promise<readonly string[]>;
  readonly seconds: number;
  readonly ignoreAlarms: boolean;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

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

/** Watches a group's new version for the bake: returns what ended it (alarms, reasons), or none. */
export async function bake(
  cloudWatch: CloudWatchClient,
  group: FunctionName,
  options: BakeOptions,
  log: Logger,
): Promise<string[]> {
  const { now, sleep } = options;
  const end = now() + options.seconds * 1000;
  log.info('Watching the new version', { group, seconds: options.seconds });
  for (;;) {
    // The alarms and the judgement read at once: a poll waits for the slower of the two.
    const [alarms, reasons] = await Promise.all([
      alarmsFiring(cloudWatch, options.alarms),
      options.judge?.() ?? [],
    ]);
    const firing = [...alarms, ...reasons];
    if (firing.length > 0) {
      if (!options.ignoreAlarms) return firing;
      log.warn('Alarm in ALARM ignored (deployIgnoringAlarms)', { group, alarms: firing });
    }
    const left = end - now();
    if (left <= 0) return [];
    await sleep(Math.min(ALARM_POLL_MS, left));
  }
}

/**
 * The order in which vitest's two workers take the test files (the sequencer in vitest.config.ts).
 * `npm test` is bound by the CPU of a 2-core machine, so what decides its time is that nothing
 * sleeps while the CPU has work, and that no long file is left to the end with nothing beside it.
 *
 * vitest's own order runs project after project, each longest-first by the durations of the last
 * run on this machine, and by file size when there is none (a fresh clone, CI): the isolated
 * project's faults file (43 s, nearly all waiting) came last, and by size the lifecycle file
 * (80–117 s) came among the last. Measured on the 2-core machine, `npm test` 467 s in vitest's
 * order, 404 s with the waiting files first (2026-11-26).
 */
import { LONG_FILES } from './long-files.ts';

/**
 * Files that mostly wait on the clock (a cache's TTL, a time budget, the SDK's back-off): tens of
 * seconds of a worker for a few seconds of CPU. First, so that their waits overlap the checks
 * (which start with the run and take the CPU the tests leave) and the other worker. The isolated
 * project's files first: a worker changes project once. Wall and CPU seconds as measured.
 */
export const WAITING_FILES: readonly string[] = [
  'test/integration/faults.test.ts', // 43 s, 4 s of CPU
  'test/integration/authorizer-cache.test.ts', // 15 s, 1.5 s
  'test/integration/local-stack-setup.test.ts', // 22 s, 0.4 s
  'test/integration/budget-from-arrival.test.ts', // 11 s, 0.2 s
  'test/integration/request-budget.test.ts', // 7 s, 0.1 s
];

/**
 * The files that take the most time of a worker (processes of their own: `npm start`, DynamoDB
 * Local, the CLI; bursts of requests), longest first: next, whatever a fresh clone's file sizes
 * say.
 */
export const HEAVY_FILES: readonly string[] = [
  'test/e2e/local-lifecycle.test.ts', // 80–117 s
  'test/e2e/local-cli.test.ts', // 63–90 s
  'test/integration/rate-limiter.test.ts', // 62–75 s
  'test/e2e/local-fidelity.test.ts', // 54–80 s
  'test/e2e/conditional-list.test.ts', // 41–62 s
  'test/client/consumer.test.ts', // 30–49 s
  'test/e2e/fuzz.test.ts', // 18–20 s
  'test/docs/commands.test.ts', // 16–33 s
  'test/admin/targets.test.ts', // 15–16 s
  'test/admin/bans.test.ts', // 13–15 s
  'test/integration/list-conditional.test.ts', // 13–17 s
  'test/client/client.test.ts', // 11–18 s
  'test/integration/list-backpressure.test.ts', // 11–52 s
  'test/e2e/paused-dynamodb.test.ts', // 9–35 s
];

const GROUPS = [LONG_FILES, WAITING_FILES, HEAVY_FILES];

/**
 * Where a file goes, as a sort key: the long files, then the waiting ones, then the heavy ones,
 * each in the order listed, then all others (in the order they came: vitest's own).
 */
export function runRank(file: string): [group: number, at: number] {
  for (const [group, names] of GROUPS.entries()) {
    const at = names.findIndex((name) => file.endsWith(name));
    if (at >= 0) return [group, at];
  }
  return [GROUPS.length, 0];
}

/** Compares two files by runRank (a stable sort keeps the others' order). */
export function byRunRank(a: string, b: string): number {
  const [groupA, atA] = runRank(a);
  const [groupB, atB] = runRank(b);
  return groupA - groupB || atA - atB;
}

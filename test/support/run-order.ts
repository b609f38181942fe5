/**
 * The order in which vitest's workers take the test files (the sequencer in vitest.config.ts).
 * `npm test` is bound by the CPU of a 2-core machine: what decides its time is that no long file
 * is left to the end with nothing beside it.
 *
 * vitest's own order runs project after project, each longest-first by the durations of the last
 * run on this machine, and by file size when there is none (a fresh clone, CI): the isolated
 * project's faults file (35–43 s, nearly all waiting) came last with nothing beside it, and by
 * size the lifecycle file (72–117 s, one of the smaller files) came among the last on a fresh
 * clone. So the heaviest files go first, by name, whatever their project; the others follow in
 * vitest's order.
 *
 * Not first: the files that test time budgets (faults, budget-from-arrival, request-budget,
 * authorizer-cache). The checks run beside the first files (npm test's first 40–60 s); the files
 * that wait on the clock were once put first, to overlap them, and beside a CPU hog a budget
 * test's margin ran out there (2026-11-26). After the heavy files they run beside tests only.
 */
import { LONG_FILES } from './long-files.ts';

/**
 * The files that take the most time of a worker (processes of their own: `npm start`, DynamoDB
 * Local, the CLI; bursts of requests), about longest first, with the wall seconds measured on the
 * 2-core machine. The ETag race (conditional-list) and the bursts (local-fidelity) each flood the
 * run's one DynamoDB Local; side by side, a list of the race waited behind a burst and answered
 * 503 (CI, 2026-11-26; the race now sends that request again after its Retry-After, as a client
 * would). With three workers, two files stand between them: the rate limiter's file, long and
 * without a local API, and the consumer's (tsc, mostly).
 */
export const HEAVY_FILES: readonly string[] = [
  'test/e2e/upgrade-from-1.0.0.test.ts', // 90 s, a third of it two cdk synths' CPU
  'test/e2e/local-lifecycle.test.ts', // 72–117 s
  'test/e2e/local-cli.test.ts', // 51–90 s
  'test/e2e/first-deploy.test.ts', // 34 s, most of it cdk synth's CPU
  'test/e2e/conditional-list.test.ts', // 41–62 s
  'test/integration/rate-limiter.test.ts', // 39–75 s
  'test/client/consumer.test.ts', // 30–49 s
  'test/e2e/local-fidelity.test.ts', // 47–80 s
  'test/integration/list-backpressure.test.ts', // 11–52 s
  'test/integration/faults.test.ts', // 35–43 s, 4 s of CPU
  'test/docs/commands.test.ts', // 16–33 s
  'test/e2e/paused-dynamodb.test.ts', // 9–35 s
  'test/e2e/list-encodings.test.ts', // 20 s
  'test/e2e/fuzz.test.ts', // 18–20 s
  'test/admin/targets.test.ts', // 15–18 s
];

/**
 * Where a file goes, as a sort key: the long files (a vitest of their own in `npm test`), then
 * the heavy ones in the order listed, then all others (in the order they came: vitest's own).
 */
export function runRank(file: string): [group: number, at: number] {
  for (const [group, names] of [LONG_FILES, HEAVY_FILES].entries()) {
    const at = names.findIndex((name) => file.endsWith(name));
    if (at >= 0) return [group, at];
  }
  return [2, 0];
}

/** Compares two files by runRank (a stable sort keeps the others' order). */
export function byRunRank(a: string, b: string): number {
  const [groupA, atA] = runRank(a);
  const [groupB, atB] = runRank(b);
  return groupA - groupB || atA - atB;
}

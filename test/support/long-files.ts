/**
 * Test files that mostly wait on the clock: tens of seconds to minutes of wall time for a few
 * seconds of CPU (clients pacing across minute windows, a cache's TTL, time budgets, the SDK's
 * back-off). They are a vitest project of their own (`long`, vitest.config.ts): `npm test` runs
 * that project in a vitest of its own, one file at a time, beside the checks and a vitest that
 * runs every other project two files at a time (test/run-all.ts), so that their waiting holds
 * neither of those two workers. In the order listed (test/support/run-order.ts): the polite
 * clients first, beside the checks; the time-budget files after them, beside tests only.
 * Seconds as measured on the 2-core machine (wall, CPU).
 */
export const LONG_FILES: readonly string[] = [
  'test/e2e/polite-clients.test.ts', // 86–102 s, 1 s
  'test/integration/faults.test.ts', // 35–43 s, 4 s
  'test/integration/local-stack-setup.test.ts', // 22 s, 0.4 s
  'test/integration/authorizer-cache.test.ts', // 10–15 s, 1.5 s
  'test/integration/budget-from-arrival.test.ts', // 11 s, 0.2 s
  'test/integration/request-budget.test.ts', // 7 s, 0.1 s
];

/** The project that holds LONG_FILES. */
export const LONG_PROJECT = 'long';

/**
 * `npm test`'s two vitests, by their arguments: each test file runs in exactly one of them
 * (test/unit/test-lanes.test.ts). Chosen by project: a CLI `--exclude` does not reach a project
 * that sets its own `exclude`, so the long files once ran in both. The long files one at a time:
 * with two of them beside the other vitest's two, four files at once starved a burst test's time
 * budget (2026-11-25).
 */
export const TEST_LANES: Readonly<Record<'long' | 'rest', readonly string[]>> = {
  long: ['--project', LONG_PROJECT, '--maxWorkers', '1'],
  rest: ['--project', `!${LONG_PROJECT}`],
};

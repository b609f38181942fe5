/**
 * Test files that take minutes of wall time, mostly sleeping (clients pacing by the clock). They
 * are a vitest project of their own (`long`, vitest.config.ts): `npm test` runs that project in a
 * vitest of its own, beside the checks and a vitest that runs every other project
 * (test/run-all.ts); a plain `vitest run` starts them first.
 */
export const LONG_FILES: readonly string[] = [
  'test/e2e/polite-clients.test.ts', // 100–160 s
  'test/e2e/lagging-index.test.ts', // 150 s: lags of 0, 5, 15 and 60 s, waited out
];

/** The project that holds LONG_FILES. */
export const LONG_PROJECT = 'long';

/**
 * `npm test`'s two vitests, by their arguments: each test file runs in exactly one of them
 * (test/unit/test-lanes.test.ts). Chosen by project: a CLI `--exclude` does not reach a project
 * that sets its own `exclude`, so the long files once ran in both.
 */
export const TEST_LANES: Readonly<Record<'long' | 'rest', readonly string[]>> = {
  long: ['--project', LONG_PROJECT],
  rest: ['--project', `!${LONG_PROJECT}`],
};

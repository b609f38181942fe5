/**
 * Test files that take minutes of wall time, mostly sleeping (clients pacing by the clock).
 * `npm test` runs them in a vitest of their own, beside the checks and the other files
 * (test/run-all.ts); a plain `vitest run` starts them first (vitest.config.ts).
 */
export const LONG_FILES: readonly string[] = ['test/e2e/polite-clients.test.ts'];

import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { useCompileCache } from './test/support/run-environment.ts';
import { ISOLATED_FILES } from './test/support/isolated-files.ts';
import { LONG_FILES, LONG_PROJECT } from './test/support/long-files.ts';
import { byRunRank } from './test/support/run-order.ts';

/** The order in which the workers take the files: test/support/run-order.ts. */
class RunOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return (await super.sort(files)).sort((a, b) => byRunRank(a.moduleId, b.moduleId));
  }
}

useCompileCache();

/** Settings every project shares. */
const shared = {
  setupFiles: ['test/support/setup.ts'],
  // A hang guard, not a measure: tests that promise a time assert it themselves. Tests that
  // spawn processes (the CLI, npm start) are slow on a shared 2-core machine with a CPU hog
  // beside the run, so the guard leaves them ample room.
  testTimeout: 120_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    projects: [
      // Pure functions: no database, no Java (`npm run test:unit`). Their files share workers
      // (no process per file): they keep no state outside their own tests.
      {
        extends: true,
        test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
      // One DynamoDB Local for the whole run; each test file makes its own tables. The files
      // share their worker's modules, except those that change what a module reads as it loads
      // (test/support/isolated-files.ts).
      {
        extends: true,
        test: {
          ...shared,
          name: 'db',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'test/ci/**', ...ISOLATED_FILES, ...LONG_FILES],
          isolate: false,
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          ...shared,
          name: 'db-isolated',
          include: [...ISOLATED_FILES],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      // The files that mostly sleep (test/support/long-files.ts): `npm test` runs them in a
      // vitest of their own.
      {
        extends: true,
        test: {
          ...shared,
          name: LONG_PROJECT,
          include: [...LONG_FILES],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
    pool: 'forks',
    // Three test files at once, on the 2-core machines CI and developers have: many files mostly
    // wait (on DynamoDB Local, a child process, a timer), so with two at a time part of the
    // machine's CPU stays idle (`npm run bench:test-cpu` shows where a run's time goes). Not
    // more: many files run a local API and DynamoDB Local, and their time budgets (answers within
    // 3 s) must not measure contention; three leave them their margin, also beside a CPU hog.
    maxWorkers: 3,
    sequence: { sequencer: RunOrder },
  },
});

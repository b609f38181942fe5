import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local for the whole run; each test file makes its own tables.
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // At most two test files at once (CI machines have 2 cores): many files run a local API and
    // DynamoDB Local, and their time budgets (answers within 3 s) must not measure contention.
    maxWorkers: 2,
  },
});

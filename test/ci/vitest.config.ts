/**
 * The tests of CI's extra tools (cfn-lint), which `npm test` does not need:
 * `npm run test:ci-tools`, run by .ci/run after `npm run lint:cfn`.
 */
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: join(import.meta.dirname, '..', '..'),
    include: ['test/ci/**/*.test.ts'],
    testTimeout: 120_000,
  },
});

/**
 * The test files that need a fresh module graph of their own (vitest's `isolate`). The other
 * files that use the database share their worker's modules (vitest.config.ts): each file costs
 * about 0.8 s less CPU (the AWS SDK, middy and the project's modules loaded once per worker,
 * not once per file).
 *
 * A file belongs here when it changes what a module reads as it loads: the functions' logger
 * reads LOG_LEVEL at load, the functions' default dependencies their tables from the environment.
 * test/unit/isolated-files.test.ts fails when a file does that and is not listed.
 */
export const ISOLATED_FILES: readonly string[] = [
  // LOG_LEVEL=INFO before the functions' modules load.
  'test/infra/operations.test.ts',
  'test/integration/authorizer-cache.test.ts',
  'test/integration/deploy-hooks.test.ts',
  'test/integration/deploy-table.test.ts',
  'test/integration/dynamodb-calls.test.ts',
  'test/integration/faults.test.ts',
  'test/integration/invocation-scope.test.ts',
  'test/integration/permissions.test.ts',
  // Its tables in the environment, for the bundles' default dependencies.
  'test/integration/deployed-bundles.test.ts',
  // The functions as npm start loads them (local/local-stack.ts loadFunctions): their tables in
  // the environment before their modules load. Two such files in one worker would share the
  // first one's functions, on its dropped tables.
  'test/contract/openapi.test.ts',
  'test/contract/openapi-v2.test.ts',
];

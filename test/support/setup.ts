// Handlers that stream need the Lambda runtime's `awslambda` global when they are loaded.
import { appendFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, expect, inject } from 'vitest';
import { TEST_FILE_VARIABLE } from '../../bench/process-census.ts';
import { LOCAL_REGION } from '../../lib/dynamodb/client.ts';
import { installLambdaRuntimeGlobals } from '../../local/lambda-runtime.ts';

installLambdaRuntimeGlobals();
process.env.LOG_LEVEL ??= 'SILENT';
// Metrics are checked where they matter, not printed by every test.
process.env.METRICS_DISABLED ??= 'true';
// The functions create their DynamoDB client as they load (Lambda's init), from DYNAMODB_ENDPOINT:
// a test file that imports a function module before it hands the function its tables gets the
// run's DynamoDB Local, as the local API would give it, and never AWS's default endpoint.
const endpoint = inject('dynamodbEndpoint') as string | undefined;
if (endpoint) {
  process.env.DYNAMODB_ENDPOINT ??= endpoint;
  process.env.AWS_REGION ??= LOCAL_REGION;
}

// Which test file the processes a test starts belong to, for `npm run bench:test-cpu`
// (bench/process-census.ts): they inherit it. With STORE_ORDERS_TEST_CPU_LOG naming a file, each
// test file's CPU in its own worker is added to it as a line of JSON. The variable is taken out of
// the environment (kept for the worker's next files), so that a run a test starts (npm test's own
// test) does not write its files' records into this one's.
const testPath = expect.getState().testPath;
const testFile = testPath && relative(join(import.meta.dirname, '..', '..'), testPath);
if (testFile) process.env[TEST_FILE_VARIABLE] = testFile;
const CPU_LOG = Symbol.for('store-orders.test-cpu-log');
const worker = globalThis as { [CPU_LOG]?: string };
worker[CPU_LOG] ??= process.env.STORE_ORDERS_TEST_CPU_LOG;
delete process.env.STORE_ORDERS_TEST_CPU_LOG;
const cpuLog = worker[CPU_LOG];
if (cpuLog && testFile) {
  const cpuAtStart = process.cpuUsage();
  const wallAtStart = performance.now();
  afterAll(() => {
    const { user, system } = process.cpuUsage(cpuAtStart);
    const record = {
      file: testFile,
      cpuMs: Math.round((user + system) / 1000),
      wallMs: Math.round(performance.now() - wallAtStart),
    };
    appendFileSync(cpuLog, `${JSON.stringify(record)}\n`);
  });
}

/**
 * A function of the service as the cost benchmark's containers load it (bench/cost-server.ts
 * names this file as every function's entry): the real module, loaded as the container would
 * load it, after pointing the function at its own lane of the capacity proxy
 * (BENCH_COST_ENDPOINTS, a JSON map of function name to endpoint), so that every DynamoDB call
 * is put down to the function that made it. What the function writes to stdout and stderr gets
 * its name as a tag, and each invocation a mark before and after it, with how long the handler
 * ran (as Lambda bills it: from the call until its promise settles): bench/function-output.ts.
 * The handler is the real one: the function's source module, or, for a stage as synthesized
 * (`npm run bench:cost -- --stage NAME`), its bundle (BENCH_COST_BUNDLE), required as Lambda
 * loads it, its SDK pointed at the lane through AWS_ENDPOINT_URL_DYNAMODB as on AWS it sets no
 * endpoint.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { PROJECT_ROOT } from '../local/local-stack.ts';
import { beginMark, dataTag, endMark } from './function-output.ts';

const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');

const { name } = workerData as { name: FunctionName };
const endpoint = (JSON.parse(process.env.BENCH_COST_ENDPOINTS ?? '{}') as Record<string, string>)[
  name
];
if (!endpoint) throw new Error(`bench/cost-function.ts: no endpoint for ${name}`);
const bundle = process.env.BENCH_COST_BUNDLE;
if (bundle) process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
else process.env.DYNAMODB_ENDPOINT = endpoint;

type Handler = ((...args: unknown[]) => Promise<unknown>) & { [STREAMING]?: string };
const real = (
  bundle
    ? createRequire(bundle)(bundle)
    : await import(pathToFileURL(join(PROJECT_ROOT, 'functions', FUNCTIONS[name].entry)).href)
) as { handler: Handler };

// Every write of the function (its log lines, its metrics) carries its name.
const original = {
  stdout: process.stdout.write.bind(process.stdout),
  stderr: process.stderr.write.bind(process.stderr),
};
for (const stream of ['stdout', 'stderr'] as const) {
  const write = original[stream];
  const tagged = (chunk: string | Uint8Array, ...rest: never[]): boolean =>
    write(
      typeof chunk === 'string'
        ? `${dataTag(name)}${chunk}`
        : Buffer.concat([Buffer.from(dataTag(name)), chunk]),
      ...rest,
    );
  process[stream].write = tagged;
}

function mark(line: string): void {
  original.stdout(line);
  original.stderr(line);
}

async function timed(args: unknown[]): Promise<unknown> {
  mark(beginMark(name));
  const started = performance.now();
  try {
    return await real.handler(...args);
  } finally {
    mark(endMark(name, performance.now() - started));
  }
}

const wrapped = Object.assign((...args: unknown[]) => timed(args), {
  ...(real.handler[STREAMING] ? { [STREAMING]: real.handler[STREAMING] } : {}),
});

export const handler = wrapped;

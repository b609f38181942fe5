/**
 * `npm test`: the checks (types, lint, format, OpenAPI) and every test file. It fails if anything
 * fails.
 *
 * The checks run beside the tests at a lower CPU priority (nice 10): they take the CPU the tests
 * leave idle (waiting for DynamoDB Local, a child process, a timer) and yield it when the tests
 * need it, so that the tests' time budgets do not measure them. Their output is held and printed
 * when they end; when they fail, the tests are stopped. The files that mostly wait on the clock
 * (test/support/long-files.ts) run in a vitest of their own, beside the one that runs the rest
 * three files at a time; both use one DynamoDB Local, started here. With arguments
 * (`npm test -- test/unit`), the checks and one vitest with those arguments.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import type { DynamoDbLocal } from '../local/dynamodb-local.ts';
import { startRunDynamoDb } from './support/global-setup.ts';
import { ownTemporaryDirectory } from './support/run-environment.ts';
import { TEST_LANES } from './support/long-files.ts';

const PROJECT_ROOT = join(import.meta.dirname, '..');
const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
/** The checks' niceness: below the tests, whose answers have time budgets. */
const CHECKS_NICENESS = 10;
const running = new Set<ChildProcess>();
/** Children in a process group of their own: the terminal's signals do not reach them. */
const ownGroups = new Set<ChildProcess>();

/**
 * Runs a command; resolves true when it exits 0. `quiet` holds its output for `output()`, and
 * runs it in a process group of its own, so that stopping it stops what it started (npm → sh →
 * eslint, tsc): a quiet command's output is held, it has no business with the terminal.
 */
function run(
  command: string,
  args: readonly string[],
  options: { quiet?: boolean } = {},
): { child: ChildProcess; ok: Promise<boolean>; output: () => string } {
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    detached: options.quiet === true,
  });
  running.add(child);
  if (options.quiet) ownGroups.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ok = new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.once('close', (code) => {
      running.delete(child);
      ownGroups.delete(child);
      resolve(code === 0);
    });
  });
  return { child, ok, output: () => output };
}

const vitest = (args: readonly string[]) => run(process.execPath, [VITEST, 'run', ...args]);

function checks() {
  const npm = process.env.npm_execpath; // set when npm runs this
  const started = npm
    ? run(process.execPath, [npm, 'run', 'check'], { quiet: true })
    : run('npm', ['run', 'check'], { quiet: true });
  try {
    if (started.child.pid !== undefined) setPriority(started.child.pid, CHECKS_NICENESS);
  } catch {
    // A system that refuses a lower priority runs the checks at the tests' own.
  }
  return started;
}

function stop(child: ChildProcess): void {
  try {
    if (ownGroups.has(child) && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    else child.kill('SIGTERM');
  } catch {
    // already gone
  }
}

function stopAll(): void {
  for (const child of running) stop(child);
}

/**
 * The DynamoDB Local both vitests use (their global setup starts one each otherwise): started
 * only for a whole run, and not when TEST_DYNAMODB_ENDPOINT names one. It stops when this
 * process ends, however it ends (local/dynamodb-local.ts).
 */
async function sharedDynamoDb(): Promise<DynamoDbLocal | undefined> {
  if (process.env.TEST_DYNAMODB_ENDPOINT) return undefined;
  try {
    const dynamo = await startRunDynamoDb();
    process.env.TEST_DYNAMODB_ENDPOINT = dynamo.endpoint;
    return dynamo;
  } catch (error) {
    console.error(`npm test: ${(error as Error).message}`);
    stopAll();
    process.exit(1);
  }
}

// Ctrl-C and a closed terminal reach the tests from the terminal, not the checks' own group; a
// SIGTERM to this process is passed on to all.
for (const signal of ['SIGINT', 'SIGHUP'] as const) {
  process.on(signal, () => ownGroups.forEach(stop));
}
process.on('SIGTERM', stopAll);

const args = process.argv.slice(2);
ownTemporaryDirectory();
const check = checks();
const dynamo = args.length > 0 ? undefined : await sharedDynamoDb();
const tests = args.length > 0 ? [vitest(args)] : [vitest(TEST_LANES.long), vitest(TEST_LANES.rest)];
const checked = await check.ok;
process.stdout.write(
  `\n── npm run check (${checked ? 'passed' : 'FAILED'}) ──\n${check.output()}\n`,
);
if (!checked) {
  console.error('npm test: the checks failed (above); stopping the tests');
  stopAll();
}
const passed = (await Promise.all(tests.map((test) => test.ok))).every(Boolean);
await dynamo?.stop();
console.log(
  `npm test: checks ${checked ? 'passed' : 'FAILED'}, tests ${passed ? 'passed' : 'FAILED'}`,
);
process.exitCode = checked && passed ? 0 : 1;

/**
 * `npm test`: the checks (types, lint, format, OpenAPI) and every test file, two at a time. It
 * fails if anything fails.
 *
 * The checks run beside the tests at a lower CPU priority (nice 10): they take the CPU the tests
 * leave idle (waiting for DynamoDB Local, a child process, a timer) and yield it when the tests
 * need it, so that the tests' time budgets do not measure them. Their output is held and printed
 * when they end; when they fail, the tests are stopped. The long files (test/support/long-files.ts)
 * hold a worker for minutes while mostly sleeping, so they run in a vitest of their own. With
 * arguments (`npm test -- test/unit`), the checks and vitest with those arguments.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { LONG_FILES } from './support/long-files.ts';

// The project's root, named here rather than imported from local/ (which loads the AWS SDK).
const PROJECT_ROOT = join(import.meta.dirname, '..');
const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
/** The checks' niceness: below the tests, whose answers have time budgets. */
const CHECKS_NICENESS = 10;
const running = new Set<ChildProcess>();

/** Runs a command; resolves true when it exits 0. `quiet` holds its output for `output()`. */
function run(
  command: string,
  args: readonly string[],
  options: { quiet?: boolean } = {},
): { child: ChildProcess; ok: Promise<boolean>; output: () => string } {
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
  running.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ok = new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.once('close', (code) => {
      running.delete(child);
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

function stopAll(): void {
  for (const child of running) child.kill('SIGTERM');
}

// Ctrl-C reaches every child from the terminal; a SIGTERM to this process is passed on.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', stopAll);

const args = process.argv.slice(2);
const check = checks();
const tests =
  args.length > 0
    ? [vitest(args)]
    : [vitest(LONG_FILES), vitest(LONG_FILES.flatMap((file) => ['--exclude', file]))];
const checked = await check.ok;
process.stdout.write(
  `\n── npm run check (${checked ? 'passed' : 'FAILED'}) ──\n${check.output()}\n`,
);
if (!checked) {
  console.error('npm test: the checks failed (above); stopping the tests');
  stopAll();
}
const passed = (await Promise.all(tests.map((test) => test.ok))).every(Boolean);
console.log(
  `npm test: checks ${checked ? 'passed' : 'FAILED'}, tests ${passed ? 'passed' : 'FAILED'}`,
);
process.exitCode = checked && passed ? 0 : 1;

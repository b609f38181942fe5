/**
 * `npm test`: the checks (types, lint, format, OpenAPI), then every test file, two at a time.
 * The long files (test/support/long-files.ts) hold a worker for minutes while mostly sleeping, so
 * they run in a vitest of their own, started beside the checks; the others run once the checks
 * pass. It fails if anything fails. With arguments (`npm test -- test/unit`), the checks, then
 * vitest with those arguments.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { LONG_FILES } from './support/long-files.ts';

// The project's root, named here rather than imported from local/ (which loads the AWS SDK).
const PROJECT_ROOT = join(import.meta.dirname, '..');
const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const running = new Set<ChildProcess>();

/** Runs a command with this terminal; resolves true when it exits 0. */
function run(
  command: string,
  args: readonly string[],
): { child: ChildProcess; ok: Promise<boolean> } {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: 'inherit' });
  running.add(child);
  const ok = new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code === 0);
    });
  });
  return { child, ok };
}

const vitest = (args: readonly string[]) => run(process.execPath, [VITEST, 'run', ...args]);
const npm = process.env.npm_execpath; // set when npm runs this
const checks = () =>
  npm ? run(process.execPath, [npm, 'run', 'check']) : run('npm', ['run', 'check']);

// Ctrl-C reaches every child from the terminal; a SIGTERM to this process is passed on.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => {
  for (const child of running) child.kill('SIGTERM');
});

const args = process.argv.slice(2);
let passed: boolean;
if (args.length > 0) {
  passed = (await checks().ok) && (await vitest(args).ok);
} else {
  const long = vitest(LONG_FILES);
  const checked = await checks().ok;
  if (!checked) long.child.kill('SIGTERM');
  const rest = checked && (await vitest(LONG_FILES.flatMap((file) => ['--exclude', file])).ok);
  passed = (await long.ok) && rest;
}
process.exitCode = passed ? 0 : 1;

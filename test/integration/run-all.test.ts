/**
 * `npm test`'s program (test/run-all.ts) as a contributor stops it: a SIGTERM stops everything it
 * started, the checks' npm → sh → eslint and tsc included, and leaves no process behind.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isAlive } from '../support/local-api.ts';

const RUN_ALL = join(import.meta.dirname, '..', 'run-all.ts');

/** Every process below `root`, with its command line. */
function descendants(root: number): { pid: number; args: string }[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='])
    .toString()
    .trim()
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({ pid: Number(match[1]), ppid: Number(match[2]), args: match[3] ?? '' }));
  const found: { pid: number; args: string }[] = [];
  const parents = [root];
  while (parents.length > 0) {
    const parent = parents.pop();
    for (const row of rows.filter((r) => r.ppid === parent)) {
      found.push({ pid: row.pid, args: row.args });
      parents.push(row.pid);
    }
  }
  return found;
}

function tryKill(pid: number | undefined): void {
  try {
    if (pid !== undefined) process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

describe('npm test, stopped', () => {
  it('a SIGTERM stops the tests and the checks, eslint and tsc included, and leaves no process', async () => {
    const run = spawn(process.execPath, [RUN_ALL, 'test/unit/routes.test.ts'], {
      cwd: join(import.meta.dirname, '..', '..'),
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
    // Until the checks are under way: eslint and tsc running.
    let started: { pid: number; args: string }[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      started = descendants(run.pid!);
      if (started.some((p) => /eslint/.test(p.args)) && started.some((p) => /tsc/.test(p.args)))
        break;
      await sleep(200);
    }
    expect(started.some((p) => /eslint/.test(p.args))).toBe(true);
    run.kill('SIGTERM');
    const ended = await Promise.race([exited, sleep(30_000).then(() => 'still running')]);
    if (ended === 'still running') for (const p of [run, ...started]) tryKill(p.pid);
    expect(ended).toBe(1);
    // Whatever it started ends with it (a moment for the last ones to be reaped).
    let left = started.filter((p) => isAlive(p.pid));
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await sleep(200);
      left = started.filter((p) => isAlive(p.pid));
    }
    expect(left).toEqual([]);
  });
});

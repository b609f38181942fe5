/**
 * `npm start` as a developer's terminal and a test harness treat it: SIGTERM or SIGINT to npm,
 * to node, or to the whole process group stop everything (npm, node, Java, the state file, the
 * port); SIGKILL of node leaves no Java and no state behind; and when its DynamoDB Local dies,
 * it says so in one line and exits non-zero.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { LocalState } from '../../local/local-stack.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { isAlive, tempStateFile } from '../support/local-api.ts';
import { uniquePrefix } from '../support/tables.ts';

interface Running {
  readonly npm: ChildProcess;
  readonly state: LocalState;
  readonly stateFile: string;
  readonly port: number;
  output(): string;
  /** Resolves with npm's exit code (or signal). */
  readonly exited: Promise<string>;
}

/** `npm start` as a developer runs it: npm → node → DynamoDB Local, in a process group of its own. */
async function npmStart(): Promise<Running> {
  const stateFile = tempStateFile();
  const npmCli = process.env.npm_execpath;
  const [command, args] = npmCli
    ? [process.execPath, [npmCli, 'start', '--']]
    : ['npm', ['start', '--']];
  const npm = spawn(command, [...args, '--port', '0', '--table-prefix', uniquePrefix('life')], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, STORE_ORDERS_LOCAL_STATE: stateFile, LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  npm.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<string>((resolve) =>
    npm.once('exit', (code, signal) => resolve(signal ?? String(code))),
  );
  const deadline = Date.now() + 60_000;
  while (!/Listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.test(out)) {
    if (Date.now() > deadline || npm.exitCode !== null) throw new Error(`did not start:\n${out}`);
    await sleep(100);
  }
  const port = Number(/Listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(out)?.[1]);
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalState;
  return { npm, state, stateFile, port, output: () => out, exited };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Waits until nothing of it is left: npm, node, Java, the state file, the port. */
async function expectAllGone(running: Running, withinMs = 15_000): Promise<void> {
  const pids = { npm: running.npm.pid!, node: running.state.pid, java: running.state.dynamoDbPid! };
  const deadline = Date.now() + withinMs;
  const leftovers = async () => ({
    ...Object.fromEntries(
      Object.entries(pids)
        .filter(([, pid]) => isAlive(pid))
        .map(([name]) => [name, 'alive']),
    ),
    ...(existsSync(running.stateFile) ? { stateFile: 'present' } : {}),
    ...((await portOpen(running.port)) ? { port: 'open' } : {}),
  });
  let left = await leftovers();
  while (Object.keys(left).length > 0 && Date.now() < deadline) {
    await sleep(200);
    left = await leftovers();
  }
  for (const pid of Object.values(pids)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  expect(left).toEqual({});
}

describe('signals to npm start', () => {
  it.each([
    ['SIGTERM', 'npm'],
    ['SIGINT', 'npm'],
    ['SIGTERM', 'node'],
    ['SIGINT', 'node'],
    ['SIGTERM', 'the process group'],
    ['SIGINT', 'the process group'],
  ] as const)('%s to %s stops everything', async (signal, target) => {
    const running = await npmStart();
    if (target === 'npm') process.kill(running.npm.pid!, signal);
    else if (target === 'node') process.kill(running.state.pid, signal);
    else process.kill(-running.npm.pid!, signal);
    await expectAllGone(running);
  });

  it('SIGKILL of node leaves no Java and no state behind', async () => {
    const running = await npmStart();
    process.kill(running.state.pid, 'SIGKILL');
    await expectAllGone(running);
  });

  it('says in one line that its DynamoDB Local died, and exits non-zero', async () => {
    const running = await npmStart();
    process.kill(running.state.dynamoDbPid!, 'SIGKILL');
    expect(await running.exited).toBe('1');
    // npm's exit can be seen before the last of its output is read: wait for it.
    const errors = () =>
      running
        .output()
        .split('\n')
        .filter((line) => line.startsWith('error:'));
    await expect
      .poll(errors, { timeout: 5_000 })
      .toEqual([
        `error: DynamoDB Local (pid ${running.state.dynamoDbPid}) ended unexpectedly (killed by SIGKILL); the local API stops with it`,
      ]);
    await expectAllGone(running);
  });
});

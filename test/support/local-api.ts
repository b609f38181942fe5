/** Runs `npm start`'s program (local/start.ts) as a child process, as a developer would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { orderToJson, type Order } from '../../lib/orders/order.ts';
import { dynamodbEndpoint, uniquePrefix } from './tables.ts';

export interface LocalApi {
  readonly url: string;
  readonly process: ChildProcess;
  readonly tablePrefix: string;
  readonly stateFile: string;
  /** Everything the process printed so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const START = join(PROJECT_ROOT, 'local', 'start.ts');

function spawnStart(
  args: readonly string[],
  stateFile: string,
  logLevel = 'ERROR',
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  return spawn(process.execPath, [START, ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env, STORE_ORDERS_LOCAL_STATE: stateFile, LOG_LEVEL: logLevel },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function tempStateFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'store-orders-')), 'stack.json');
}

/** A key as `--keys` takes it (CONTRACT §6). */
export interface KeyFileEntry {
  readonly key: string;
  readonly plan: string;
  readonly limits?: { readonly perMinute: number; readonly perDay: number };
  readonly permissions?: readonly string[];
}

/**
 * The arguments that give the local API these keys (`--keys`) and these orders instead of the
 * demo orders (`--seed`), each written to a file of its own.
 */
export function keysAndSeedArgs(
  keys: readonly KeyFileEntry[],
  orders?: readonly Order[],
): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'store-orders-'));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify(keys));
  const args = ['--keys', join(dir, 'keys.json')];
  if (!orders) return args;
  writeFileSync(join(dir, 'seed.json'), `[${orders.map((order) => orderToJson(order)).join(',')}]`);
  return [...args, '--seed', join(dir, 'seed.json')];
}

/**
 * Starts the local API on a free port. By default it shares the test run's DynamoDB Local with
 * tables of its own; `ownDynamoDb` makes it start its own, as `npm start` does.
 */
export async function startLocalApi(
  options: {
    args?: readonly string[];
    ownDynamoDb?: boolean;
    tablePrefix?: string;
    /** The functions' LOG_LEVEL (default ERROR: quiet). */
    logLevel?: string;
    /** The DynamoDB it uses (default: the test run's; a proxy in front of it, say). */
    dynamodbEndpoint?: string;
    /** Environment of its process beside the test's (an operator's clock, say). */
    env?: Readonly<Record<string, string>>;
  } = {},
): Promise<LocalApi> {
  const tablePrefix = options.tablePrefix ?? uniquePrefix('e2e');
  const stateFile = tempStateFile();
  const args = ['--port', '0', '--table-prefix', tablePrefix, ...(options.args ?? [])];
  if (!options.ownDynamoDb) {
    args.push('--dynamodb-endpoint', options.dynamodbEndpoint ?? dynamodbEndpoint());
  }
  const child = spawnStart(args, stateFile, options.logLevel, options.env);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`local API did not start:\n${out}`)), 110_000);
    const onData = (): void => {
      const match = /Listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`local API exited with ${code}:\n${out}`));
    });
  });
  return {
    url,
    process: child,
    tablePrefix,
    stateFile,
    output: () => out,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs local/start.ts expecting it to fail (bad input): it must exit on its own. */
export async function runStartExpectingExit(args: readonly string[]): Promise<RunResult> {
  const child = spawnStart(args, tempStateFile());
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

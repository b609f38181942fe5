/** Running the operator CLI: in this process (runCli), or as a child process (runCliProcess). */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import type { AttributeValue, KeysAndAttributes, WriteRequest } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { runAdmin } from '../../admin/program.ts';
import { isOrderItem } from '../../lib/dynamodb/order-item.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import type { TestTables } from '../support/tables.ts';

export const CLI = join(PROJECT_ROOT, 'admin', 'cli.ts');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A stream that collects what is written to it, as a pipe (not a terminal) would. */
function collector(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

let inProcessRuns = Promise.resolve();

/**
 * Runs a command line of the CLI in this process (admin/program.ts's runAdmin, what admin/cli.ts
 * runs), with stdin a pipe (closed after `input`, not a terminal) and the environment given for the
 * run. STORE_ORDERS_LOCAL_STATE points nowhere unless given, so a developer's running `npm start`
 * is never touched. Runs one at a time: the environment is the process's. `runCliProcess` runs the
 * same as a child process, for what is about the process itself.
 */
export interface CliOptions {
  /** Added to the environment; an undefined value removes the variable. */
  readonly env?: Record<string, string | undefined>;
  readonly input?: string;
  /** A working directory of its own: the CLI runs as a process. */
  readonly cwd?: string;
  /** Node options before the CLI's path, e.g. `--import` of a test stub: the CLI runs as a process. */
  readonly nodeArgs?: readonly string[];
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  if (options.cwd !== undefined || options.nodeArgs !== undefined) {
    return runCliProcess(args, options);
  }
  const run = inProcessRuns.then(async () => {
    const env = {
      STORE_ORDERS_LOCAL_STATE: join(tempDir(), 'no-local-api.json'),
      ...options.env,
    };
    const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    const stdin = Object.assign(new PassThrough(), { isTTY: false });
    stdin.end(options.input ?? '');
    const stdout = collector();
    const stderr = collector();
    try {
      const code = await runAdmin(args, {
        stdin: stdin as unknown as NodeJS.ReadStream,
        stdout: stdout.stream,
        stderr: stderr.stream as unknown as NodeJS.WriteStream,
        now: () => new Date(),
      });
      return { code, stdout: stdout.text(), stderr: stderr.text() };
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
  inProcessRuns = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

/**
 * Runs the CLI as a child process, as an operator's shell does, with stdin not a terminal (a pipe,
 * closed after `input`). STORE_ORDERS_LOCAL_STATE points nowhere unless given.
 */
export async function runCliProcess(
  args: readonly string[],
  options: CliOptions = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, ...args], {
    cwd: options.cwd ?? PROJECT_ROOT,
    env: Object.fromEntries(
      Object.entries({
        ...process.env,
        STORE_ORDERS_LOCAL_STATE: join(tempDir(), 'no-local-api.json'),
        ...options.env,
      }).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** The explicit flags that point the CLI at a test's tables on the run's DynamoDB Local. */
export function tableFlags(t: TestTables): string[] {
  return [
    '--endpoint',
    t.endpoint,
    '--table-keys',
    t.tables.apiKeys,
    '--table-orders',
    t.tables.orders,
  ];
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'store-orders-admin-'));
}

export function tempFile(name: string, content: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, content);
  return path;
}

/** A refusal: the exit code, exactly one line on stderr matching, no stack trace. */
export function expectOneLineError(result: CliResult, code: number, message: RegExp): void {
  expect(result.stderr).not.toMatch(/\n\s+at /);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(message);
  expect(result.code).toBe(code);
}

/**
 * Every item of a table, as DynamoDB holds it — of the orders table, every order (its list
 * version items, which every write of orders touches, are not orders).
 */
export async function scanAll(
  client: DynamoDBDocumentClient,
  table: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: table, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items.filter((item) => item.shard === undefined || isOrderItem(item));
}

/** The key printed by `keys create` / `keys rotate` (the indented `sok_…` line). */
export function printedKey(stdout: string): string {
  const match = /^ {2}(sok_[0-9A-Za-z]+)$/m.exec(stdout);
  if (!match) throw new Error(`no key in:\n${stdout}`);
  return match[1] as string;
}

/** The public id in `Created key key_… (…)`. */
export function printedKeyId(stdout: string): string {
  const match = /Created key (key_[0-9A-Za-z]+)/.exec(stdout);
  if (!match) throw new Error(`no key id in:\n${stdout}`);
  return match[1] as string;
}

type Marshalled = Record<string, AttributeValue>;
const asDocument = (item: Marshalled | undefined) => unmarshall(item ?? {}, { wrapNumbers: true });

function documentWrites(requests: Record<string, unknown>) {
  return Object.fromEntries(
    Object.entries(requests).map(([table, writes]) => [
      table,
      (writes as WriteRequest[]).map((write) => ({
        PutRequest: { Item: asDocument(write.PutRequest?.Item) },
      })),
    ]),
  );
}

function documentKeys(requests: Record<string, unknown>) {
  return Object.fromEntries(
    Object.entries(requests).map(([table, keys]) => [
      table,
      { ...(keys as KeysAndAttributes), Keys: (keys as KeysAndAttributes).Keys?.map(asDocument) },
    ]),
  );
}

/** What a batch call meets: DynamoDB, a failure, or a throttle of all its items. */
export type BatchFault = 'pass' | 'fail' | 'throttle';

/**
 * Fault injection for BatchWriteItem or BatchGetItem (which name their table in RequestItems,
 * not TableName, so test/support's failDynamoDbCalls does not reach them): `decide` is asked for
 * every call of that command, numbered from 1, with the ids it writes or reads. `fail` rejects
 * the call with `makeError()`; `throttle` answers that none of its items or keys were processed,
 * as DynamoDB does when it throttles a batch. Returns the calls seen so far and a function that
 * removes it.
 */
export function injectBatchFaults(
  client: DynamoDBDocumentClient,
  command: 'BatchWriteItemCommand' | 'BatchGetItemCommand',
  decide: (call: number, ids: readonly string[]) => BatchFault,
  makeError: () => Error,
): { calls: () => number; remove: () => void } {
  const name = `batchFault${Math.random()}`;
  let calls = 0;
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName !== command) return next(args);
      const requests = (args.input as { RequestItems: Record<string, unknown> }).RequestItems;
      const writing = command === 'BatchWriteItemCommand';
      const ids = Object.values(requests).flatMap((request) =>
        writing
          ? (request as WriteRequest[]).map((put) => put.PutRequest?.Item?.id?.N ?? '')
          : ((request as KeysAndAttributes).Keys?.map((key) => key.id?.N ?? '') ?? []),
      );
      calls++;
      switch (decide(calls, ids)) {
        case 'fail':
          return Promise.reject(makeError());
        case 'throttle':
          // This answer skips the document client's unmarshalling: give it in document form.
          return Promise.resolve({
            output: {
              ...(writing
                ? { UnprocessedItems: documentWrites(requests) }
                : { Responses: {}, UnprocessedKeys: documentKeys(requests) }),
              $metadata: {},
            },
            response: {},
          } as unknown as Awaited<ReturnType<typeof next>>);
        case 'pass':
          return next(args);
      }
    },
    { step: 'finalizeRequest', name, priority: 'high' },
  );
  return { calls: () => calls, remove: () => void client.middlewareStack.remove(name) };
}

/**
 * Loads one function bundle as Lambda's Node.js runtime does: `require()` of its CommonJS file,
 * with the runtime's streaming global in place. Run in a fresh process per sample, without
 * NODE_OPTIONS, as Lambda runs the functions:
 *
 *   node bench/load-bundle.ts path/to/index.js [invocations.json]
 *
 * Its last line on stdout is JSON: `ms`, the load (module evaluation: the part of Lambda's init
 * the code decides), and the type of `handler`. Given a file of invocations (`{ "events":
 * [first, warm], "record": false }`), it then invokes the handler with each event in turn, as
 * the runtime would (a streamed answer is read to its end), and adds `answers` (each answer's
 * time from the start of the load, its status or policy effect, and the connections the process
 * had opened by then) and, when asked to record, the DynamoDB calls it sent (`calls`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  createContext,
  installLambdaRuntimeGlobals,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
} from '../local/lambda-runtime.ts';
import { countConnections, recordDynamoDbCalls, type RecordedCall } from './connections.ts';

export interface Invocations {
  readonly events: readonly unknown[];
  readonly record?: boolean;
}

export interface Answer {
  /** Milliseconds from the start of the load until this answer was complete. */
  readonly at: number;
  /**
   * CPU milliseconds the process spent from the start of the load until then (user + system):
   * what the code costs, without the time it waited for a core on a busy machine.
   */
  readonly cpu: number;
  /** The HTTP status, the authorizer's policy effect, or `ok`. */
  readonly status: string;
  /** Connections the process had opened when this answer was complete (since the load). */
  readonly connections: number;
}

export interface Loaded {
  readonly ms: number;
  readonly handler: string;
  readonly answers?: readonly Answer[];
  /** When recording: the DynamoDB calls of each invocation. */
  readonly calls?: readonly (readonly RecordedCall[])[];
}

/** One invocation, as Lambda's runtime makes it: the answer's status once it is all out. */
async function invoke(handler: unknown, event: unknown): Promise<string> {
  const context = createContext('bench');
  if (isStreamingHandler(handler)) {
    const response = await invokeStreaming(handler, event, context);
    for await (const chunk of response.body) void chunk;
    await response.done;
    return String(response.prelude?.statusCode ?? 200);
  }
  const result = (await invokeBuffered(handler, event, context)) as {
    statusCode?: number;
    policyDocument?: { Statement: { Effect: string }[] };
  };
  return String(result.statusCode ?? result.policyDocument?.Statement[0]?.Effect ?? 'ok');
}

installLambdaRuntimeGlobals();
const [file, invocationsFile] = process.argv.slice(2);
if (!file) throw new Error('usage: node bench/load-bundle.ts <bundle.js> [invocations.json]');
const invocations: Invocations = invocationsFile
  ? (JSON.parse(readFileSync(invocationsFile, 'utf8')) as Invocations)
  : { events: [] };
const connections = countConnections();
const calls = invocations.record ? recordDynamoDbCalls().calls : undefined;
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const cpuStarted = cpuMs();
const started = performance.now();
const loaded = createRequire(import.meta.url)(file) as { handler?: unknown };
const ms = performance.now() - started;
const answers: Answer[] = [];
const callsOf: RecordedCall[][] = [];
for (const event of invocations.events) {
  const status = await invoke(loaded.handler, event);
  answers.push({
    at: performance.now() - started,
    cpu: cpuMs() - cpuStarted,
    status,
    connections: connections.opened(),
  });
  if (calls) callsOf.push(calls.splice(0));
}
const result: Loaded = {
  ms,
  handler: typeof loaded.handler,
  ...(invocationsFile ? { answers } : {}),
  ...(calls ? { calls: callsOf } : {}),
};
// The last line: the bundle's own log lines come before it.
process.stdout.write(`\n${JSON.stringify(result)}\n`);
// Keep-alive sockets would hold the process open.
process.exit(0);

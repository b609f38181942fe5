/**
 * One Lambda container of the local API: a worker thread that loads one function's module (its
 * cold start), then serves one invocation at a time for as long as it is kept warm. Module
 * state, SDK clients and the logger are its own, as in a Lambda execution environment.
 *
 * Messages from the pool: `invoke` {id, event, timeoutMs}, `abort` {id} (the client went away),
 * `credit` {id, bytes} (the client took that much of a streamed body). To the pool: `ready`
 * {initMs}, `returned` {id, result}, `prelude` {id, prelude}, `chunk` {id, data}, `end` {id},
 * `failed` {id, message, tooLarge?}. A streamed body never runs more than its window (1 MiB by
 * default) ahead of what the client took.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';
import type { FunctionName } from '../lib/functions.ts';
import {
  createContext,
  installLambdaRuntimeGlobals,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
  PayloadTooLargeError,
} from './lambda-runtime.ts';

export interface ContainerData {
  readonly name: FunctionName;
  /** Absolute path of the function's module: a source module, or a CommonJS bundle (`require`d). */
  readonly entry: string;
  readonly format: 'module' | 'commonjs';
  /** The export Lambda calls. */
  readonly handlerName: string;
  /** Its memory setting, as its context reports it. */
  readonly memoryMb: number;
  /** Bytes of a streamed body that may be in flight before the client takes them. */
  readonly streamWindow: number;
}

interface Invoke {
  readonly type: 'invoke';
  readonly id: number;
  readonly event: unknown;
  readonly timeoutMs: number;
}
type FromPool =
  | Invoke
  | { readonly type: 'abort'; readonly id: number }
  | { readonly type: 'credit'; readonly id: number; readonly bytes: number }
  | { readonly type: 'memory' };

const port = parentPort;
if (!port) throw new Error('local/container.ts runs as a worker thread of the container pool');
const { name, entry, format, handlerName, memoryMb, streamWindow } = workerData as ContainerData;

installLambdaRuntimeGlobals();
const started = performance.now();
// A bundle is loaded as Lambda's Node.js runtime loads a CommonJS file: `require`.
const loaded = (
  format === 'commonjs' ? createRequire(entry)(entry) : await import(pathToFileURL(entry).href)
) as Record<string, unknown>;
const handler = loaded[handlerName];
port.postMessage({ type: 'ready', initMs: Math.round(performance.now() - started) });

/** The invocation being served: one at a time. */
let current:
  { readonly id: number; readonly abort: AbortController; readonly credit: Credit } | undefined;

/** Flow control of a streamed body: what may still be sent before the client takes more. */
class Credit {
  private available = streamWindow;
  private waiting: (() => void) | undefined;

  /** Waits until `bytes` may be sent (a chunk larger than the window waits for all of it). */
  async take(bytes: number, signal: AbortSignal): Promise<void> {
    while (this.available < Math.min(bytes, streamWindow)) {
      if (signal.aborted) return;
      await new Promise<void>((resolve) => {
        const onAbort = (): void => resolve();
        this.waiting = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.available -= bytes;
  }

  give(bytes: number): void {
    this.available += bytes;
    const wake = this.waiting;
    this.waiting = undefined;
    wake?.();
  }
}

async function serve({ id, event, timeoutMs }: Invoke): Promise<void> {
  const abort = new AbortController();
  const credit = new Credit();
  current = { id, abort, credit };
  const context = createContext(name, timeoutMs, memoryMb);
  try {
    if (isStreamingHandler(handler)) {
      const streamed = await invokeStreaming(handler, event, context, abort.signal);
      port!.postMessage({ type: 'prelude', id, prelude: streamed.prelude });
      for await (const chunk of streamed.body as AsyncIterable<Buffer>) {
        await credit.take(chunk.byteLength, abort.signal);
        if (abort.signal.aborted) break;
        // A copy of its own: a stream's chunk may share its memory with others.
        const data = new Uint8Array(chunk);
        port!.postMessage({ type: 'chunk', id, data }, [data.buffer]);
      }
      await streamed.done;
      port!.postMessage({ type: 'end', id });
    } else {
      const result = await invokeBuffered(handler, event, context);
      port!.postMessage({ type: 'returned', id, result });
    }
  } catch (error) {
    port!.postMessage({
      type: 'failed',
      id,
      message: error instanceof Error ? error.message : String(error),
      tooLarge: error instanceof PayloadTooLargeError,
    });
  } finally {
    current = undefined;
  }
}

/** A full collection, for measuring (asked for only then: a serving container never runs it). */
let collect: (() => void) | undefined;
function collectGarbage(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}

/**
 * What this container holds — heap in use and memory outside it — after a full collection: for
 * measuring (benchmarks, tests), not for serving.
 */
function memory(): { type: 'memory'; liveBytes: number } {
  collectGarbage();
  const heap = getHeapStatistics();
  return { type: 'memory', liveBytes: heap.used_heap_size + heap.external_memory };
}

port.on('message', (message: FromPool) => {
  if (message.type === 'memory') port.postMessage(memory());
  else if (message.type === 'invoke') void serve(message);
  else if (message.id !== current?.id) return;
  else if (message.type === 'abort') current.abort.abort(new Error('the client went away'));
  else current.credit.give(message.bytes);
});

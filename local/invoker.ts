/**
 * How the API Gateway emulation runs a function: an Invoker takes an event and gives what Lambda
 * would give back — a returned value (buffered), a stream (prelude, body, completion), a
 * failure, a timeout or a response over the 6 MB buffered limit. `npm start` runs functions in
 * containers (local/container-pool.ts); tests and `npm run invoke` may run handlers in-process
 * (below).
 */
import type { Readable } from 'node:stream';
import type { FunctionName } from '../lib/functions.ts';
import {
  createContext,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
  PayloadTooLargeError,
  type StreamedResponse,
} from './lambda-runtime.ts';

export type Prelude = StreamedResponse['prelude'];

export type Invocation =
  | { readonly kind: 'returned'; readonly result: unknown }
  | {
      readonly kind: 'streaming';
      readonly prelude: Prelude;
      readonly body: Readable;
      /** Settles when the function has finished; rejects when it failed mid-stream. */
      readonly done: Promise<void>;
    }
  /** The function threw (before answering); `message` is what Lambda reports. */
  | { readonly kind: 'failed'; readonly message: string }
  /** The function did not answer within its timeout. */
  | { readonly kind: 'timed-out' }
  /** Its buffered answer was larger than Lambda's 6 MB. */
  | { readonly kind: 'too-large' };

export interface InvokeOptions {
  /** The client went away: a queued invocation is dropped, a running one is told to stop. */
  readonly signal?: AbortSignal;
  /** How long the function may run before it answers (ms). */
  readonly timeoutMs: number;
}

export interface Invoker {
  invoke(name: FunctionName, event: unknown, options: InvokeOptions): Promise<Invocation>;
}

function failedWith(error: unknown): Invocation {
  if (error instanceof PayloadTooLargeError) return { kind: 'too-large' };
  return { kind: 'failed', message: error instanceof Error ? error.message : String(error) };
}

/** Runs a function's handler on an event in this thread, with its timeout. */
export async function invokeHandler(
  handler: unknown,
  name: FunctionName,
  event: unknown,
  options: InvokeOptions,
): Promise<Invocation> {
  const context = createContext(name, options.timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Invocation>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'timed-out' }), options.timeoutMs);
  });
  const work: Promise<Invocation> = isStreamingHandler(handler)
    ? invokeStreaming(handler, event, context, options.signal).then(
        (streamed) => ({ kind: 'streaming', ...streamed }),
        failedWith,
      )
    : invokeBuffered(handler, event, context).then(
        (result) => ({ kind: 'returned', result }),
        failedWith,
      );
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The handlers, run in this process (tests, `npm run invoke`): no isolation, no pool. */
export function inProcessInvoker(handlers: Partial<Record<FunctionName, unknown>>): Invoker {
  return {
    invoke: (name, event, options) => {
      const handler = handlers[name];
      if (!handler) return Promise.resolve({ kind: 'failed', message: `no function ${name}` });
      return invokeHandler(handler, name, event, options);
    },
  };
}

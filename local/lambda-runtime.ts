/**
 * What the Lambda Node.js runtime provides, for running the real handlers on this machine:
 * the `awslambda` global of response streaming (streamifyResponse, HttpResponseStream with its
 * JSON prelude + 8 NUL bytes framing), a context object, and invocation in buffered or
 * streaming mode with the 6 MB limit on buffered responses.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';

const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const PRELUDE_DELIMITER = Buffer.alloc(8);

/** Lambda's limit on a buffered (non-streamed) response payload. */
export const BUFFERED_RESPONSE_LIMIT_BYTES = 6 * 1024 * 1024;

type StreamingHandler = (
  event: unknown,
  stream: NodeJS.WritableStream,
  context: unknown,
) => Promise<unknown>;
type AnyHandler = ((event: unknown, context: unknown) => Promise<unknown>) & {
  [STREAMING]?: string;
};

/** Installs the `awslambda` global (once); handlers that stream need it when they are loaded. */
export function installLambdaRuntimeGlobals(): void {
  // The AWS SDK (lambda-invoke-store) may already have created an empty `awslambda` object.
  const globals = globalThis as unknown as { awslambda?: Record<string, unknown> };
  const runtime = (globals.awslambda ??= {});
  runtime.streamifyResponse ??= (handler: StreamingHandler) => {
    (handler as unknown as AnyHandler)[STREAMING] = 'response';
    return handler;
  };
  runtime.HttpResponseStream ??= {
    from: (stream: NodeJS.WritableStream, prelude: unknown) => {
      stream.write(JSON.stringify(prelude));
      stream.write(PRELUDE_DELIMITER);
      return stream;
    },
  };
}

export function isStreamingHandler(handler: unknown): boolean {
  return typeof handler === 'function' && (handler as AnyHandler)[STREAMING] === 'response';
}

export interface LambdaContext {
  functionName: string;
  awsRequestId: string;
  getRemainingTimeInMillis: () => number;
  [key: string]: unknown;
}

/** What Lambda gives a function deployed without a memory setting. */
const LAMBDA_DEFAULT_MEMORY_MB = 128;

/**
 * A function's memory setting, as its context reports it: for the service's functions the one
 * lib/functions.ts gives the stack and the emulator; for a stand-in (a handler a test or a
 * benchmark runs under a name of its own) Lambda's default.
 */
function memorySettingMb(functionName: string): number {
  return Object.hasOwn(FUNCTIONS, functionName)
    ? FUNCTIONS[functionName as FunctionName].memoryMb
    : LAMBDA_DEFAULT_MEMORY_MB;
}

/**
 * The context Lambda hands a function's handler: its name, memory setting (`memoryMb`, else the
 * one lib/functions.ts gives it) and deadline.
 */
export function createContext(
  functionName: string,
  timeoutMs = 29_000,
  memoryMb: number = memorySettingMb(functionName),
): LambdaContext {
  const deadline = Date.now() + timeoutMs;
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}

export class PayloadTooLargeError extends Error {
  constructor(bytes: number) {
    super(
      `Response payload size (${bytes} bytes) exceeded the maximum allowed (${BUFFERED_RESPONSE_LIMIT_BYTES} bytes)`,
    );
    this.name = 'PayloadTooLargeError';
  }
}

/** Invokes a buffered handler; its serialised result must fit in 6 MB, as in Lambda. */
export async function invokeBuffered(
  handler: unknown,
  event: unknown,
  context: LambdaContext,
): Promise<unknown> {
  const result = await (handler as AnyHandler)(event, context);
  const bytes = Buffer.byteLength(JSON.stringify(result ?? null));
  if (bytes > BUFFERED_RESPONSE_LIMIT_BYTES) throw new PayloadTooLargeError(bytes);
  return result;
}

/** The HTTP prelude (JSON + 8 NUL bytes) at the head of a streamed response, if well formed. */
function splitPrelude(head: Buffer): { prelude: StreamedResponse['prelude']; rest: Buffer } {
  const at = head.indexOf(PRELUDE_DELIMITER);
  if (at < 0) return { prelude: undefined, rest: head };
  try {
    const prelude = JSON.parse(
      head.subarray(0, at).toString('utf8'),
    ) as StreamedResponse['prelude'];
    return { prelude, rest: head.subarray(at + PRELUDE_DELIMITER.length) };
  } catch {
    return { prelude: undefined, rest: head };
  }
}

export interface StreamedResponse {
  /** The HTTP prelude the handler wrote (statusCode, headers), if any. */
  readonly prelude: { statusCode?: number; headers?: Record<string, string> } | undefined;
  readonly body: Readable;
  /** Settles when the handler has finished; rejects when it failed. */
  readonly done: Promise<void>;
  /** Ends the invocation from outside (the client went away): the handler's stream errors. */
  abort(reason: Error): void;
}

/**
 * Invokes a streaming handler and resolves as soon as its prelude is written (or the body
 * starts without one), so the caller can pipe the body while the handler still produces it.
 * `signal` ends the invocation from outside at any moment (the client went away): the
 * handler's response stream errors, as Lambda's does when its connection closes.
 */
export function invokeStreaming(
  handler: unknown,
  event: unknown,
  context: LambdaContext,
  signal?: AbortSignal,
): Promise<StreamedResponse> {
  const responseStream = new PassThrough();
  const abortWith = (): void =>
    void responseStream.destroy(
      signal?.reason instanceof Error ? signal.reason : new Error('the client went away'),
    );
  if (signal?.aborted) abortWith();
  else signal?.addEventListener('abort', abortWith, { once: true });
  const done = (handler as StreamingHandler)(event, responseStream, context).then(
    () => undefined,
    (error: unknown) => {
      responseStream.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    },
  );
  done.catch(() => undefined);
  void done.finally(() => signal?.removeEventListener('abort', abortWith)).catch(() => undefined);
  const abort = (reason: Error): void => void responseStream.destroy(reason);
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer | string): void => {
      head = Buffer.concat([head, Buffer.from(chunk)]);
      if (head.indexOf(PRELUDE_DELIMITER) < 0 && head.length < 64 * 1024) return;
      responseStream.off('data', onData);
      responseStream.off('end', onEnd);
      responseStream.off('error', onError);
      responseStream.pause();
      const { prelude, rest } = splitPrelude(head);
      const body = new PassThrough();
      // A failure is the caller's through `done` too: one that comes before the caller listens
      // to the body (a handler that throws right after its prelude) must not go unhandled.
      body.on('error', () => undefined);
      if (rest.length > 0) body.write(rest);
      responseStream.on('error', (error) => body.destroy(error));
      responseStream.pipe(body);
      resolve({ prelude, body, done, abort });
    };
    const onEnd = (): void => {
      responseStream.off('data', onData);
      const { prelude, rest } = splitPrelude(head);
      resolve({ prelude, body: Readable.from([rest]), done, abort });
    };
    const onError = (error: Error): void => reject(error);
    responseStream.on('data', onData);
    responseStream.on('end', onEnd);
    responseStream.on('error', onError);
  });
}

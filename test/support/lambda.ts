/** Invoking handlers as Lambda would, with REST v1 proxy events, and counting DynamoDB calls. */
import { restProxyEvent } from '../../functions/shared/rest-event.ts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createContext, invokeStreaming, isStreamingHandler } from '../../local/lambda-runtime.ts';

export interface HttpResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** An identified caller with limits no test reaches (tests of the limits give their own). */
export const TEST_CALLER_CONTEXT: Record<string, string> = {
  principalId: 'key_test',
  keyId: 'key_test',
  plan: 'enterprise',
  perMinute: '1000000',
  perDay: '1000000000',
};

export function proxyEvent(options: {
  method: string;
  resource: string;
  path: string;
  pathParameters?: Record<string, string> | null;
  authorizer?: Record<string, string>;
}) {
  return restProxyEvent({
    stage: 'v1',
    method: options.method,
    resource: options.resource,
    path: options.path,
    pathParameters: options.pathParameters ?? null,
    authorizer: options.authorizer ?? TEST_CALLER_CONTEXT,
    requestId: 'test',
  });
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Runs a buffered or streaming HTTP handler and returns status, headers and the whole body. */
export async function invokeHttp(handler: unknown, event: unknown): Promise<HttpResult> {
  const context = createContext('test');
  if (isStreamingHandler(handler)) {
    const response = await invokeStreaming(handler, event, context);
    const body = await readAll(response.body);
    await response.done;
    return {
      statusCode: response.prelude?.statusCode ?? 200,
      headers: response.prelude?.headers ?? {},
      body,
    };
  }
  const result = (await (handler as (e: unknown, c: unknown) => Promise<unknown>)(
    event,
    context,
  )) as HttpResult;
  return { statusCode: result.statusCode, headers: result.headers ?? {}, body: result.body ?? '' };
}

/** Counts the DynamoDB operations a client sends (after SDK retries: one per HTTP attempt). */
export function countDynamoDbCalls(
  client: DynamoDBDocumentClient,
  tableName?: string,
): { calls: string[]; reset(): void } {
  const calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as { TableName?: string };
      if (tableName === undefined || input.TableName === tableName) {
        calls.push(context.commandName ?? 'unknown');
      }
      return next(args);
    },
    { step: 'finalizeRequest', name: `countCalls${Math.random()}` },
  );
  return { calls, reset: () => void calls.splice(0) };
}

/** One DynamoDB call a client sent: what, to which table, when it went out and was answered. */
export interface TimedCall {
  readonly command: string;
  readonly table: string;
  readonly sent: number;
  answered?: number;
}

/**
 * Records the DynamoDB calls a client sends while `run` runs, with their send and answer times:
 * what tells calls made at once (each sent before the other was answered) from calls in turn.
 */
export async function timeDynamoDbCalls(
  client: DynamoDBDocumentClient,
  run: () => Promise<void>,
): Promise<TimedCall[]> {
  const calls: TimedCall[] = [];
  const name = `timeCalls${Math.random()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; RequestItems?: object };
      const call: TimedCall = {
        command: context.commandName ?? '',
        table: input.TableName ?? Object.keys(input.RequestItems ?? {}).join(),
        sent: performance.now(),
      };
      calls.push(call);
      const result = await next(args);
      call.answered = performance.now();
      return result;
    },
    { step: 'finalizeRequest', name },
  );
  try {
    await run();
  } finally {
    client.middlewareStack.remove(name);
  }
  return calls;
}

/** Makes the DynamoDB calls of a client (to one table, or all) fail with an error (fault injection). */
export function failDynamoDbCalls(
  client: DynamoDBDocumentClient,
  makeError: () => Error,
  tableName?: string,
): () => void {
  const name = `fault${Math.random()}`;
  client.middlewareStack.add(
    (next) => (args) => {
      const input = args.input as { TableName?: string };
      if (tableName !== undefined && input.TableName !== tableName) return next(args);
      return Promise.reject(makeError());
    },
    { step: 'finalizeRequest', name, priority: 'high' },
  );
  return () => void client.middlewareStack.remove(name);
}

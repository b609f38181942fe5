/**
 * Calls one version of a function with one event, as Lambda's API offers it, and reads what it
 * answered: a buffered invocation's payload, or the prelude of a streamed HTTP answer (the lists
 * stream), decoded by hand: Lambda's HTTP integration stream is the prelude's JSON, 8 NUL bytes,
 * then the body, which is left unread. A failed invocation is a failure, with its reason.
 */
import {
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  type LambdaClient,
} from '@aws-sdk/client-lambda';

export interface VersionCall {
  /** The function's name. */
  readonly functionName: string;
  /** The version called (never an alias: the one a deployment is about). */
  readonly version: string;
  readonly event: unknown;
  /** Whether it answers as a stream (InvokeWithResponseStream). */
  readonly streaming: boolean;
}

/** The answer's JSON (a proxy result, a stream's prelude, a policy), or why there is none. */
export type VersionAnswer =
  { readonly answer: Record<string, unknown> } | { readonly failed: string };

/** The 8 NUL bytes between a streamed HTTP answer's prelude and its body. */
const PRELUDE_END = Buffer.alloc(8);

function parseJson(bytes: Uint8Array | undefined): Record<string, unknown> {
  const text = Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return { unparsed: text.slice(0, 200) };
  }
}

export async function callVersion(lambda: LambdaClient, call: VersionCall): Promise<VersionAnswer> {
  const request = {
    FunctionName: call.functionName,
    Qualifier: call.version,
    Payload: Buffer.from(JSON.stringify(call.event)),
  };
  if (!call.streaming) {
    const answer = await lambda.send(new InvokeCommand(request));
    const payload = parseJson(answer.Payload);
    if (answer.FunctionError) {
      return {
        failed: `invocation failed: ${typeof payload.errorMessage === 'string' ? payload.errorMessage : answer.FunctionError}`,
      };
    }
    return { answer: payload };
  }
  const answer = await lambda.send(new InvokeWithResponseStreamCommand(request));
  let bytes = Buffer.alloc(0);
  for await (const part of answer.EventStream ?? []) {
    if (part.PayloadChunk?.Payload) {
      bytes = Buffer.concat([bytes, part.PayloadChunk.Payload]);
      const end = bytes.indexOf(PRELUDE_END);
      // The prelude is all a verdict needs: the body is left unread.
      if (end >= 0) return { answer: parseJson(bytes.subarray(0, end)) };
    }
    const complete = part.InvokeComplete;
    if (complete?.ErrorCode) {
      return {
        failed: `invocation failed: ${complete.ErrorCode} ${complete.ErrorDetails ?? ''}`.trim(),
      };
    }
  }
  return { failed: 'no answer' };
}

/**
 * Calls one version of a function with one event, as Lambda's API offers it, within a time
 * budget, and reads what it answered: a buffered invocation's payload, or a streamed HTTP
 * answer (the lists stream) — its prelude, decoded by hand (Lambda's HTTP integration stream is
 * the prelude's JSON, 8 NUL bytes, then the body), and its body read to the end without keeping
 * it: its size, its first and last bytes, whether it ended or failed. A failed invocation is a
 * failure, with its reason; so is no answer within the budget, and a body that stalls (no byte
 * for `idleMs`) or that the budget cuts: each with what it had sent.
 */
import {
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  type InvokeWithResponseStreamResponseEvent,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { byDeadline } from '../../lib/failures.ts';

export interface VersionCall {
  /** The function's name. */
  readonly functionName: string;
  /** The version called (never an alias: the one a deployment is about). */
  readonly version: string;
  readonly event: unknown;
  /** Whether it answers as a stream (InvokeWithResponseStream). */
  readonly streaming: boolean;
  /** How long the call may take: an answer not in by then is a failure. */
  readonly budgetMs: number;
  /**
   * For a streamed answer, how long its body may be read after the prelude (within the budget):
   * a body still flowing then is kept as cut, not as failed (a list longer than a check can read).
   */
  readonly bodyBudgetMs?: number;
  /** For a streamed answer, the longest wait for its next byte once the prelude is in: a stall. */
  readonly idleMs?: number;
}

/** What a streamed body was, read to its end (or its budget's), without keeping it. */
export interface StreamedBody {
  readonly bytes: number;
  /** The first bytes (up to 4 KiB) and the last 16, as text. */
  readonly head: string;
  readonly tail: string;
  /** Whether it ended as Lambda ends a complete response. */
  readonly complete: boolean;
  /**
   * Why it did not: the invocation's error, a stall, the call's budget's end; or `cut` alone: its
   * body's budget ended while it was still flowing (its last byte within `idleMs`).
   */
  readonly error?: string;
  readonly cut?: boolean;
}

/** The answer's JSON (a proxy result, a stream's prelude, a policy), or why there is none. */
export type VersionAnswer =
  | { readonly answer: Record<string, unknown>; readonly body?: StreamedBody }
  | { readonly failed: string };

/** The 8 NUL bytes between a streamed HTTP answer's prelude and its body. */
const PRELUDE_END = Buffer.alloc(8);
const HEAD_BYTES = 4096;
const TAIL_BYTES = 16;

function parseJson(bytes: Uint8Array | undefined): Record<string, unknown> {
  const text = Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return { unparsed: text.slice(0, 200) };
  }
}

/** A body as it streams in: counted, its head and tail kept. */
class BodyReader {
  bytes = 0;
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);

  add(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    if (this.head.byteLength < HEAD_BYTES) {
      this.head = Buffer.concat([this.head, chunk]).subarray(0, HEAD_BYTES);
    }
    // Only the chunk's last bytes join the tail: a body of many MB is not copied again.
    this.tail = Buffer.concat([this.tail, chunk.subarray(-TAIL_BYTES)]).subarray(-TAIL_BYTES);
  }

  read(outcome: { complete: boolean; error?: string; cut?: boolean }): StreamedBody {
    return {
      bytes: this.bytes,
      head: this.head.toString('utf8'),
      tail: this.tail.toString('utf8'),
      ...outcome,
    };
  }
}

/** The budget's end, as a rejection (also for a client that does not honour abortSignal). */
export class OutOfBudget extends Error {}

/** No byte of a streamed body for the call's idle bound. */
class Stalled extends Error {}

/** `work`, or OutOfBudget once `signal` aborts, whichever comes first. */
export function within<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  return byDeadline(work, signal, () => new OutOfBudget());
}

export async function callVersion(lambda: LambdaClient, call: VersionCall): Promise<VersionAnswer> {
  const request = {
    FunctionName: call.functionName,
    Qualifier: call.version,
    Payload: Buffer.from(JSON.stringify(call.event)),
  };
  const budget = AbortSignal.timeout(Math.max(1, call.budgetMs));
  const noAnswer = { failed: `no answer within ${call.budgetMs} ms` };
  if (!call.streaming) {
    let answer;
    try {
      answer = await within(
        budget,
        lambda.send(new InvokeCommand(request), { abortSignal: budget }),
      );
    } catch (error) {
      if (error instanceof OutOfBudget || budget.aborted) return noAnswer;
      throw error;
    }
    const payload = parseJson(answer.Payload);
    if (answer.FunctionError) {
      return {
        failed: `invocation failed: ${typeof payload.errorMessage === 'string' ? payload.errorMessage : answer.FunctionError}`,
      };
    }
    return { answer: payload };
  }
  let prelude: Record<string, unknown> | undefined;
  const body = new BodyReader();
  let bodyDeadline = Infinity;
  let pending = Buffer.alloc(0);
  try {
    const answer = await within(
      budget,
      lambda.send(new InvokeWithResponseStreamCommand(request), { abortSignal: budget }),
    );
    const stream: AsyncIterable<InvokeWithResponseStreamResponseEvent> = answer.EventStream ?? {
      async *[Symbol.asyncIterator]() {},
    };
    const parts = stream[Symbol.asyncIterator]();
    const release = () => void parts.return?.().catch(() => undefined);
    for (;;) {
      const part$ = parts.next();
      // Once the prelude is in, each next byte within the idle bound: a body that stalls fails.
      const idle =
        prelude && call.idleMs !== undefined
          ? byDeadline(part$, AbortSignal.timeout(call.idleMs), () => new Stalled())
          : part$;
      let next;
      try {
        next = await within(budget, idle);
      } catch (error) {
        if (!(error instanceof Stalled)) throw error;
        release();
        return {
          answer: prelude!,
          body: body.read({
            complete: false,
            error: `stalled: no byte for ${call.idleMs} ms after ${body.bytes} bytes`,
          }),
        };
      }
      if (next.done) break;
      const part = next.value;
      const chunk = part.PayloadChunk?.Payload;
      if (chunk) {
        if (prelude) {
          body.add(chunk);
        } else {
          pending = Buffer.concat([pending, chunk]);
          const end = pending.indexOf(PRELUDE_END);
          if (end >= 0) {
            prelude = parseJson(pending.subarray(0, end));
            body.add(pending.subarray(end + PRELUDE_END.byteLength));
            bodyDeadline = Date.now() + (call.bodyBudgetMs ?? Infinity);
          }
        }
        if (prelude && Date.now() >= bodyDeadline) {
          // Read as far as the budget allows, still flowing: the rest of the stream is let go.
          release();
          return { answer: prelude, body: body.read({ complete: false, cut: true }) };
        }
      }
      const complete = part.InvokeComplete;
      if (complete) {
        const error = complete.ErrorCode
          ? `${complete.ErrorCode} ${complete.ErrorDetails ?? ''}`.trim()
          : undefined;
        if (!prelude) {
          return { failed: error ? `invocation failed: ${error}` : 'no answer' };
        }
        return {
          answer: prelude,
          body: body.read({ complete: !error, ...(error ? { error } : {}) }),
        };
      }
    }
  } catch (error) {
    if (!(error instanceof OutOfBudget) && !budget.aborted) throw error;
    // The call's budget ended: with the prelude in, a body cut where it was; else no answer.
    return prelude
      ? {
          answer: prelude,
          body: body.read({
            complete: false,
            cut: true,
            error: `cut: the call's budget of ${call.budgetMs} ms ended after ${body.bytes} bytes`,
          }),
        }
      : noAnswer;
  }
  return prelude
    ? {
        answer: prelude,
        body: body.read({ complete: false, error: 'the stream ended unfinished' }),
      }
    : { failed: 'no answer' };
}

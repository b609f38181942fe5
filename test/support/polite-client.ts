/**
 * A client that does what the contract asks after a 503: it sends the request again after the
 * answer's Retry-After. Tests whose point is not the 503 use it where a loaded 2-core machine can
 * make DynamoDB Local slow enough for the contract's 503 (another test file's burst beside them).
 * A refused request changed nothing, so sending it again is what a client may do.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** What a sent request resolves to: at least its status and headers. */
export interface Answered {
  readonly status: number;
  readonly headers: Headers;
}

/** Attempts in all: the first and two more. */
const ATTEMPTS = 3;

/**
 * Sends until the answer is not a 503, at most ATTEMPTS times: the last answer,
 * whatever it is, and `sent`, when the answered attempt was sent (`performance.now()`), so a
 * test that times or orders its requests records the attempt that was answered. `onRetry` is
 * told of every 503 sent again.
 */
export async function sendPolitely<A extends Answered>(
  send: () => Promise<A>,
  options: { onRetry?: () => void } = {},
): Promise<{ answer: A; sent: number }> {
  for (let attempt = 1; ; attempt++) {
    const sent = performance.now();
    const answer = await send();
    if (answer.status !== 503 || attempt >= ATTEMPTS) return { answer, sent };
    options.onRetry?.();
    await sleep(Number(answer.headers.get('retry-after') ?? 1) * 1_000);
  }
}

/**
 * Time budgets: how long the service waits for DynamoDB before it answers anyway. One place for
 * the numbers the client configuration, the functions, the stack (function timeouts) and the
 * documents rely on.
 *
 * The promise (answerMs): an answer — a list's status line — within 5 s of the request
 * reaching API Gateway, whatever DynamoDB does, with warm functions (a cold start adds its init
 * time). The arithmetic, worst case:
 *  - the authorizer's key lookup ends `authorizerMs` (2 s) after the authorizer starts: a TOKEN
 *    authorizer's event carries no request time, so it cannot count from the arrival;
 *  - the function's DynamoDB work ends `requestMs` (3 s) after the arrival
 *    (`requestTimeEpoch`), but never less than `functionFloorMs` (2.5 s) after the function
 *    started: a slow key check (a cold start, a retried read) never leaves the function an
 *    expired budget, so a request whose dependencies answer normally is never refused for time;
 *  - so the work ends by arrival + max(3 s, 2 s + 2.5 s) = 4.5 s, plus the invocations' own
 *    overhead (milliseconds), and the answer is out within 5 s.
 */
export const TIME_BUDGETS = {
  /** The promise to clients: an answer (a list's status line) within this of the request. */
  answerMs: 5_000,
  /**
   * A function's DynamoDB work before it answers (the rate limiter, the cancel, a list's first
   * pages) ends this long after the request reached API Gateway (`requestTimeEpoch`)…
   */
  requestMs: 3_000,
  /** …but never less than this long after the function started (see requestDeadline). */
  functionFloorMs: 2_500,
  /** The authorizer's key lookup, from its own start (its event carries no request time). */
  authorizerMs: 2_000,
  /** One attempt of one DynamoDB call (SDK requestTimeout, thrown): a hung attempt is retried. */
  attemptMs: 1_000,
  /** Opening a connection to DynamoDB. */
  connectMs: 1_000,
  /** Each further page of a list once it streams: a longer stall ends the stream. */
  listPageMs: 3_000,
  /** One attempt of one call of the operator CLI, which can afford to wait. */
  adminAttemptMs: 10_000,
  /**
   * How long after its own deadline a write of orders is assumed to have landed if it ever
   * does (a request DynamoDB received just before its client gave up on it), clock differences
   * between writers and readers included: the list has no ETag for this long after a write
   * whose end nobody saw (lib/dynamodb/list-version.ts).
   */
  lateWriteMarginMs: 30_000,
} as const;

/**
 * The moment a function's DynamoDB work must be done by: `requestMs` after the request reached
 * API Gateway (after `startedAt` when the event does not say: a direct invocation), and never
 * less than `functionFloorMs` after `startedAt`, the function's own start.
 */
export function requestDeadline(
  requestTimeEpoch: number | undefined,
  startedAt: number,
  requestMs: number = TIME_BUDGETS.requestMs,
): number {
  const arrived =
    requestTimeEpoch !== undefined && Number.isFinite(requestTimeEpoch) && requestTimeEpoch > 0
      ? Math.min(requestTimeEpoch, startedAt)
      : startedAt;
  return Math.max(arrived + requestMs, startedAt + TIME_BUDGETS.functionFloorMs);
}

/** An AbortSignal that aborts at `deadline` (Unix ms), at once when it has passed. */
export function signalAt(deadline: number, now: number = Date.now()): AbortSignal {
  return AbortSignal.timeout(Math.max(0, deadline - now));
}

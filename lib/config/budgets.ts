/**
 * Time budgets: how long the service waits for DynamoDB before it answers anyway. One place for
 * the numbers the client configuration, the functions, the stack (function timeouts) and the
 * documents rely on.
 *
 * The rule: the authorizer and cancelOrder answer, and listOrders sends its status line, within
 * ANSWER_MS of the request, whatever DynamoDB does (a stalled call is abandoned at its deadline
 * and the request answered 503).
 */
export const TIME_BUDGETS = {
  /** The promise to clients: an answer (a list's status line) within this of the request. */
  answerMs: 3_000,
  /**
   * A function's DynamoDB work before it answers (the rate limiter, the cancel, a list's first
   * pages) ends this long after the request reached API Gateway (`requestTimeEpoch`), leaving
   * the rest of answerMs to answer.
   */
  requestMs: 2_500,
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
 * API Gateway, or after `startedAt` when the event does not say (a direct invocation).
 */
export function requestDeadline(requestTimeEpoch: number | undefined, startedAt: number): number {
  const arrived =
    requestTimeEpoch !== undefined && Number.isFinite(requestTimeEpoch) && requestTimeEpoch > 0
      ? Math.min(requestTimeEpoch, startedAt)
      : startedAt;
  return arrived + TIME_BUDGETS.requestMs;
}

/** An AbortSignal that aborts at `deadline` (Unix ms), at once when it has passed. */
export function signalAt(deadline: number, now: number = Date.now()): AbortSignal {
  return AbortSignal.timeout(Math.max(0, deadline - now));
}

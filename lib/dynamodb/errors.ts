/**
 * The one place where a failed DynamoDB call is classified (see lib/failures.ts): every adapter
 * sends through `send`, which enforces the caller's deadline and turns whatever went wrong into
 * a DependencyFailure — except a failed condition, which is an answer, not a failure.
 */
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { byDeadline, DependencyFailure, type FailureKind } from '../failures.ts';

/** DynamoDB refused the request before doing anything: retrying cannot apply it twice. */
const THROTTLING_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

const TRANSIENT_NAMES: ReadonlyMap<string, string> = new Map([
  ['InternalServerError', 'server-error'],
  ['ServiceUnavailable', 'server-error'],
  ['TimeoutError', 'timeout'],
  ['AbortError', 'timeout'],
  ['RequestTimeout', 'timeout'],
  ['RequestTimeoutException', 'timeout'],
  ['TransactionConflictException', 'conflict'],
  ['TransactionInProgressException', 'conflict'],
]);

const PERMANENT_NAMES: ReadonlyMap<string, string> = new Map([
  ['ResourceNotFoundException', 'missing-table'],
  ['AccessDeniedException', 'access-denied'],
  ['UnrecognizedClientException', 'credentials'],
  ['InvalidSignatureException', 'credentials'],
  ['MissingAuthenticationTokenException', 'credentials'],
  ['IncompleteSignatureException', 'credentials'],
  ['ExpiredTokenException', 'credentials'],
  ['ValidationException', 'validation'],
  ['SerializationException', 'validation'],
]);

/**
 * Network failures: the request may not have reached DynamoDB, or its answer got lost. Any
 * system error code (`E…`: ECONNRESET, EPROTO, EAI_AGAIN…) and Node's stream and socket errors
 * (ERR_STREAM_PREMATURE_CLOSE, ERR_SOCKET_CONNECTION_TIMEOUT…) are the network's, not a bug's:
 * retrying later can work. Certificate errors are not among them (a misconfiguration).
 */
const CONNECTION_CODE = /^((?!ERR_)E[A-Z0-9_]+|ERR_(STREAM|SOCKET)_[A-Z0-9_]+|UND_ERR_[A-Z0-9_]+)$/;

/** Whether an error carries the code of a network failure (see CONNECTION_CODE). */
export function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECTION_CODE.test(code);
}

/** A failed condition: the database answered, and said no. The caller reads why. */
export function isConditionFailure(error: unknown): boolean {
  return (
    error instanceof ConditionalCheckFailedException ||
    (error instanceof TransactionCanceledException &&
      (error.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed'))
  );
}

/** Whether a failed call is worth retrying later, and why, in a word. */
export function classifyDynamoDbError(error: unknown): { kind: FailureKind; reason: string } {
  if (error instanceof DependencyFailure) return { kind: error.kind, reason: error.reason };
  const e = (error ?? {}) as {
    name?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
    CancellationReasons?: { Code?: string }[];
  };
  const name = e.name ?? '';
  if (THROTTLING_NAMES.has(name)) return { kind: 'transient', reason: 'throttled' };
  const transient = TRANSIENT_NAMES.get(name);
  if (transient) return { kind: 'transient', reason: transient };
  const permanent = PERMANENT_NAMES.get(name);
  if (permanent) return { kind: 'permanent', reason: permanent };
  if (isConnectionFailure(error)) return { kind: 'transient', reason: 'connection' };
  if (error instanceof TransactionCanceledException) {
    const codes = (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
    const retryable = ['ThrottlingError', 'TransactionConflict', 'ProvisionedThroughputExceeded'];
    if (codes.some((code) => retryable.includes(code))) {
      return { kind: 'transient', reason: 'conflict' };
    }
  }
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return { kind: 'transient', reason: 'server-error' };
  // A 4xx the service explained otherwise, or something that is not a service answer at all.
  return { kind: 'permanent', reason: status !== undefined ? 'rejected' : 'unexpected' };
}

/** The failure as the service acts on it, naming what failed. */
export function dynamoDbFailure(error: unknown, dependency: string): DependencyFailure {
  if (error instanceof DependencyFailure) return error;
  const { kind, reason } = classifyDynamoDbError(error);
  const detail = error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : '';
  return new DependencyFailure(kind, dependency, reason, {
    message: `${dependency}: ${reason} (${kind})${detail ? ` — ${detail}` : ''}`,
    cause: error,
  });
}

/** The failure of a call abandoned at its deadline (the request may still reach DynamoDB). */
export function deadlineFailure(dependency: string): DependencyFailure {
  return new DependencyFailure('transient', dependency, 'timeout', {
    message: `${dependency}: no answer within the time budget (transient)`,
  });
}

/**
 * One DynamoDB call, settled by `signal`'s deadline at the latest (the SDK is handed the same
 * signal and aborts its request). Resolves with the answer; rejects with the failed condition
 * as it is, or with a classified DependencyFailure.
 */
export async function send<T>(
  dependency: string,
  call: (abortSignal: AbortSignal | undefined) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await byDeadline(call(signal), signal, () => deadlineFailure(dependency));
  } catch (error) {
    if (isConditionFailure(error)) throw error;
    throw dynamoDbFailure(error, dependency);
  }
}

import { ApiError, DEFAULT_RETRY_AFTER_SECONDS } from '../api/errors.ts';

const TRANSIENT_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'TransactionConflictException',
]);
const THROTTLING_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

/** DynamoDB refused the request before doing anything: retrying cannot apply it twice. */
export function isThrottling(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' && THROTTLING_NAMES.has(name);
}

const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);

/**
 * Whether a DynamoDB failure is the dependency's (throttling, 5xx, network, timeout) rather than
 * ours (validation, missing table, permissions). The SDK has already retried it.
 */
export function isDependencyFailure(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  if (e.name && TRANSIENT_NAMES.has(e.name)) return true;
  if (e.code && TRANSIENT_CODES.has(e.code)) return true;
  const status = e.$metadata?.httpStatusCode;
  return status !== undefined && status >= 500;
}

/** Rethrows a dependency failure as 503 SERVICE_UNAVAILABLE; anything else as it is. */
export function translateDynamoDbError(error: unknown): never {
  if (isDependencyFailure(error)) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      headers: { 'Retry-After': String(DEFAULT_RETRY_AFTER_SECONDS) },
      cause: error,
    });
  }
  throw error;
}

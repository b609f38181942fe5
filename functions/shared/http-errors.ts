/**
 * Error handling of the HTTP functions, in one place: what a client is told about each domain
 * error and failure, and what is logged and counted. The chain, in the order middy runs it on
 * an error:
 *   1. shape: the error becomes an ApiError of the catalogue (below); 5xx are logged with the
 *      request id and counted; every error answer writes one line with its code and status;
 *   2. @middy/http-error-handler turns it into the response: the body (JSON), the status and
 *      the error's headers (Retry-After, WWW-Authenticate, Vary).
 */
import type { MiddlewareObj } from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  INDEX_NOT_READY_RETRY_AFTER_SECONDS,
  ERROR_ANSWER_LOG,
  ERROR_CATALOGUE,
  type ErrorBody,
  type ErrorCode,
} from '../../lib/api/errors.ts';
import { DependencyFailure, INDEX_NOT_READY } from '../../lib/failures.ts';
import { PermissionDenied } from '../../lib/keys/permissions.ts';
import { RateLimitRefusal } from '../../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { InvalidOrderId, OrderAlreadyShipped, OrderNotFound } from '../../lib/orders/operations.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit } from './metrics.ts';

/** A failure the API reports to its client with a code of the catalogue. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    options: { message?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(options.message ?? ERROR_CATALOGUE[code].message, { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.headers = options.headers ?? {};
  }

  get body(): ErrorBody {
    return { code: this.code, message: this.message, status: this.status };
  }
}

const RETRY_LATER = { 'Retry-After': String(DEFAULT_RETRY_AFTER_SECONDS) };

/**
 * A failure of a request the rate limiter has decided on: its answer carries the decision's
 * headers (./rate-limit.ts) beside the error's own.
 */
export class DecidedRequestError extends Error {
  readonly headers: Readonly<Record<string, string>>;
  constructor(cause: unknown, headers: Readonly<Record<string, string>>) {
    super('A decided request failed', { cause });
    this.name = 'DecidedRequestError';
    this.headers = headers;
  }
}

/** `work`, whose failure is answered with `headers` too. */
export async function answeredWith<T>(
  headers: Readonly<Record<string, string>>,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new DecidedRequestError(error, headers);
  }
}

/** The orders' domain refusals and their codes: told to the client as they are. */
const DOMAIN_REFUSALS = [
  [InvalidOrderId, 'INVALID_ORDER_ID'],
  [OrderNotFound, 'ORDER_NOT_FOUND'],
  [OrderAlreadyShipped, 'ORDER_ALREADY_SHIPPED'],
] as const;

/** What the logs say of a failure: its class and cause, never a key (the logger redacts). */
function describe(error: unknown): Record<string, unknown> {
  if (error instanceof DependencyFailure) {
    return {
      failure: { kind: error.kind, dependency: error.dependency, reason: error.reason },
      error: error.cause instanceof Error ? error.cause : error,
    };
  }
  return { error: error instanceof Error ? error : new Error(String(error)) };
}

/** The fields every error answer's one line carries: what the saved query errors-by-code counts. */
const answered = (code: ErrorCode) => ({ code, status: ERROR_CATALOGUE[code].status });

/** A refusal the catalogue names as it is: an ApiError, or a domain refusal of the orders. */
function catalogueRefusal(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  for (const [domainError, code] of DOMAIN_REFUSALS) {
    if (error instanceof domainError)
      return new ApiError(code, { message: error.message, cause: error });
  }
  return undefined;
}

/**
 * The answer to an error, logged and counted here, one line each with the answer's `code` and
 * `status`: transient failures → 503 with Retry-After (a warning and ServiceUnavailable); bugs
 * and permanent failures → 500 without detail (an error and InternalErrors, which an alarm
 * watches); rate-limit refusals → 429 with Retry-After (a line by key id, and RateLimited or
 * BannedRequests); a request its key may not make → 403 (a line by key id, and PermissionDenied);
 * domain refusals as the catalogue says (an INFO line).
 */
export function toApiError(error: unknown): ApiError {
  const refusal = catalogueRefusal(error);
  if (refusal) {
    logger.info(ERROR_ANSWER_LOG, answered(refusal.code));
    return refusal;
  }
  if (error instanceof PermissionDenied) {
    // One line per refusal, by key id: which key asks for what it may not do.
    logger.info('Permission refusal', {
      keyId: error.keyId,
      permission: error.needed,
      ...answered('PERMISSION_DENIED'),
    });
    metrics.addMetric(METRIC_NAMES.permissionDenied, MetricUnit.Count, 1);
    return new ApiError('PERMISSION_DENIED', { message: error.message, cause: error });
  }
  if (error instanceof RateLimitRefusal) {
    const retryAfter = String(error.retryAfterSeconds);
    const limited = error.outcome === 'limited';
    const code = limited ? 'RATE_LIMITED' : 'API_KEY_TEMPORARILY_BANNED';
    // One line per refusal, by key id: what an operator reads to see who hits the limits.
    logger.info('Rate limit refusal', {
      keyId: error.keyId,
      outcome: error.outcome,
      ...answered(code),
    });
    const metric = limited ? METRIC_NAMES.rateLimited : METRIC_NAMES.bannedRequests;
    metrics.addMetric(metric, MetricUnit.Count, 1);
    return new ApiError(code, {
      message: limited
        ? `Rate limit exceeded: retry after ${retryAfter} seconds.`
        : `The API key is temporarily banned for repeated requests over its rate limit: retry after ${retryAfter} seconds.`,
      headers: { 'Retry-After': retryAfter },
      cause: error,
    });
  }
  if (error instanceof DependencyFailure && error.kind === 'transient') {
    logger.warn('Dependency unavailable: answering 503', {
      ...describe(error),
      ...answered('SERVICE_UNAVAILABLE'),
    });
    metrics.addMetric(METRIC_NAMES.serviceUnavailable, MetricUnit.Count, 1);
    if (error.reason === INDEX_NOT_READY) {
      // Not a hiccup: the index the filter needs is being built (a deploy added it).
      return new ApiError('SERVICE_UNAVAILABLE', {
        message: `The index this filter needs is being built: retry after ${INDEX_NOT_READY_RETRY_AFTER_SECONDS} seconds, or list without status, petId and ship dates meanwhile.`,
        headers: { 'Retry-After': String(INDEX_NOT_READY_RETRY_AFTER_SECONDS) },
        cause: error,
      });
    }
    return new ApiError('SERVICE_UNAVAILABLE', { headers: RETRY_LATER, cause: error });
  }
  logger.error('Request failed: answering 500', {
    ...describe(error),
    ...answered('INTERNAL_ERROR'),
  });
  metrics.addMetric(METRIC_NAMES.internalErrors, MetricUnit.Count, 1);
  // The catalogue's message only: no stack or internal detail reaches the client.
  return new ApiError('INTERNAL_ERROR', { cause: error });
}

/**
 * The error middlewares, to `.use()` first so that their onError runs last: the error becomes an
 * exposed http error (its status, its body as the message, its headers), which
 * http-error-handler answers as it is.
 */
export function httpErrors(): MiddlewareObj[] {
  const shape: MiddlewareObj = {
    onError: (request) => {
      if (request.response !== undefined) return;
      const decided = request.error instanceof DecidedRequestError ? request.error : undefined;
      const { status, body, headers } = toApiError(decided ? decided.cause : request.error);
      const exposed = {
        statusCode: status,
        expose: true,
        headers: { ...headers, ...decided?.headers },
      };
      request.error = Object.assign(new Error(JSON.stringify(body)), exposed);
    },
  };
  return [httpErrorHandler({ logger: false }), shape];
}

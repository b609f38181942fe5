/**
 * The API's error codes and the client's error classes. The list mirrors the service's error
 * catalogue (the OpenAPI document's `Error.code` enum); it is copied, not imported, so that the
 * client depends on nothing of the server.
 */
import type { RateLimitInfo } from './rate-limit-headers.ts';

/** Every error code the API answers with, and the HTTP status it always comes with. */
export const API_ERROR_STATUS = {
  BAD_REQUEST: 400,
  INVALID_ORDER_ID: 400,
  UNKNOWN_PARAMETER: 400,
  INVALID_PARAMETER: 400,
  INVALID_DATE_RANGE: 400,
  INVALID_PAGE_TOKEN: 400,
  UNAUTHORIZED: 401,
  PERMISSION_DENIED: 403,
  ORDER_NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  ORDER_ALREADY_SHIPPED: 409,
  REQUEST_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  API_KEY_TEMPORARILY_BANNED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

/** An error code of the API contract. */
export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/**
 * The code of an answer that is not an error of the contract: a body that is not the API's
 * Error JSON (a proxy's HTML page, say) or a status the operation does not have.
 */
export const UNEXPECTED_RESPONSE = 'UNEXPECTED_RESPONSE';

export type ErrorCode = ApiErrorCode | typeof UNEXPECTED_RESPONSE;

export function isApiErrorCode(value: unknown): value is ApiErrorCode {
  return typeof value === 'string' && Object.hasOwn(API_ERROR_STATUS, value);
}

export interface ApiErrorInit {
  readonly code: ErrorCode;
  readonly status: number;
  readonly message: string;
  readonly retryAfterSeconds?: number | undefined;
  readonly retryAt?: number | undefined;
  readonly rateLimit?: RateLimitInfo | undefined;
  readonly sent: boolean;
  readonly attempts: number;
  readonly cause?: unknown;
}

/**
 * An error answer of the API, or one the client gave itself without sending the request
 * (`sent: false`): a malformed order id (INVALID_ORDER_ID), or a call that would have been
 * refused (RATE_LIMITED, API_KEY_TEMPORARILY_BANNED) because the key's limit or ban does not
 * end within the call's time budget.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The contract's code, or UNEXPECTED_RESPONSE. */
  readonly code: ErrorCode;
  /** The HTTP status (for an error not sent: the status the API would have answered). */
  readonly status: number;
  /** Seconds to wait before trying again (`Retry-After`), when the answer said. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * When to try again (ms since the epoch, local clock): the moment `Retry-After` names, for a
   * call that was not sent or an answer that said. Sleep until then before calling again.
   */
  readonly retryAt: number | undefined;
  /** The rate-limit headers of the answer; undefined when it had none or was not sent. */
  readonly rateLimit: RateLimitInfo | undefined;
  /**
   * False when the client refused the call itself, without sending a request (for a retry that
   * could not be sent, `cause` is the error of the previous attempt).
   */
  readonly sent: boolean;
  /** Requests sent for this call (0 when none was). */
  readonly attempts: number;

  constructor(init: ApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.retryAt = init.retryAt;
    this.rateLimit = init.rateLimit;
    this.sent = init.sent;
    this.attempts = init.attempts;
  }
}

/** True for an ApiError, of one of `codes` when given. */
export function isApiError(error: unknown, ...codes: ErrorCode[]): error is ApiError {
  return error instanceof ApiError && (codes.length === 0 || codes.includes(error.code));
}

/**
 * The order list's body is not a well-formed JSON array of orders, or ended early (the service
 * cuts a list short when it fails after its first bytes, by closing or resetting the
 * connection; `cause` is then the network error). Orders before the fault were valid.
 */
export class OrderListParseError extends Error {
  override readonly name = 'OrderListParseError';
  /** Offset, in characters from the start of the body, where the fault was found. */
  readonly position: number;

  constructor(message: string, position: number, options?: ErrorOptions) {
    super(`Malformed order list at character ${position}: ${message}`, options);
    this.position = position;
  }
}

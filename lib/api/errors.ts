/**
 * The error catalogue: every error code the API can answer with, its HTTP status and its
 * default message. Handlers, the gateway responses, the local emulator and the OpenAPI document
 * all take their codes from here.
 */
export const ERROR_CATALOGUE = {
  BAD_REQUEST: { status: 400, message: 'The request could not be understood.' },
  INVALID_ORDER_ID: {
    status: 400,
    message: 'The order id must be a base-10 integer in the int64 range.',
  },
  UNKNOWN_PARAMETER: {
    status: 400,
    message: 'The request has a query parameter the list does not take.',
  },
  INVALID_PARAMETER: {
    status: 400,
    message: 'A query parameter has a malformed value, or is given more than once.',
  },
  INVALID_DATE_RANGE: {
    status: 400,
    message: 'shipDateFrom must be before shipDateTo: the date range is empty or inverted.',
  },
  INVALID_PAGE_TOKEN: {
    status: 400,
    message:
      'The page token was altered or cut short, is of an unknown version, or was issued for other filters.',
  },
  UNAUTHORIZED: { status: 401, message: 'The API key is missing or invalid.' },
  PERMISSION_DENIED: {
    status: 403,
    message: 'The API key may not make this request: it lacks the permission the operation needs.',
  },
  ORDER_NOT_FOUND: { status: 404, message: 'The order was not found.' },
  ROUTE_NOT_FOUND: { status: 404, message: 'No resource exists at this path.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'This method is not allowed on this resource.' },
  NOT_ACCEPTABLE: {
    status: 406,
    message:
      'None of the content codings the request accepts is available: accept zstd, br, gzip or identity.',
  },
  ORDER_ALREADY_SHIPPED: {
    status: 409,
    message: 'The order has already shipped and cannot be cancelled.',
  },
  REQUEST_TOO_LARGE: { status: 413, message: 'The request is too large.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests: the rate limit is exceeded.' },
  API_KEY_TEMPORARILY_BANNED: {
    status: 429,
    message: 'The API key is temporarily banned after repeated requests over its rate limit.',
  },
  INTERNAL_ERROR: { status: 500, message: 'An internal error occurred.' },
  SERVICE_UNAVAILABLE: {
    status: 503,
    message: 'The service is temporarily unavailable; retry after the indicated time.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** The Error object of the API: `status` always equals the HTTP status. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
}

/** Seconds a client should wait after a 503, when nothing better is known. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/**
 * Seconds a client should wait after a 503 of a v2 filter whose index is not ready: an index is
 * built (backfilled) in minutes to hours after the deploy that adds it, not in a second.
 */
export const INDEX_NOT_READY_RETRY_AFTER_SECONDS = 60;

export function errorBody(code: ErrorCode, message?: string): ErrorBody {
  const entry = ERROR_CATALOGUE[code];
  return { code, message: message ?? entry.message, status: entry.status };
}

/**
 * The message of the line a function writes when it answers a refusal of the catalogue (400, 404,
 * 409…), with the answer's `code` and `status`. Its 429s, 503s and 500s write their own lines,
 * which carry `code` and `status` too (functions/shared/http-errors.ts): the saved query
 * `errors-by-code` counts every line with a `code`.
 */
export const ERROR_ANSWER_LOG = 'Answered with an error';

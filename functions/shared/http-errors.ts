/**
 * Error handling of the HTTP functions, in one place. The chain, in the order middy runs it on
 * an error:
 *   1. shape: a catalogued ApiError keeps its code; anything else is logged and becomes a bare
 *      500 INTERNAL_ERROR (no stack or detail reaches the client);
 *   2. @middy/http-error-handler turns it into the response, with the Error object as body;
 *   3. headers: adds the error's headers (Retry-After, WWW-Authenticate), which
 *      http-error-handler 7.9 does not apply itself.
 */
import type { MiddlewareObj, Request } from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import { ApiError } from '../../lib/api/errors.ts';
import { JSON_CONTENT_TYPE } from '../../lib/api/http.ts';
import { logger } from './logger.ts';

interface ExposedHttpError {
  statusCode: number;
  message: string;
  expose: true;
  headers: Record<string, string>;
}

function toHttpError(error: unknown): ExposedHttpError {
  const apiError =
    error instanceof ApiError ? error : new ApiError('INTERNAL_ERROR', { cause: error });
  if (apiError.status >= 500) {
    logger.error('Request failed', {
      code: apiError.code,
      error: apiError.cause instanceof Error ? apiError.cause : apiError,
    });
  }
  // An unexpected error is a bare INTERNAL_ERROR: the catalogue's message, no detail.
  const body = apiError.body;
  return {
    statusCode: body.status,
    message: JSON.stringify(body),
    expose: true,
    headers: { ...apiError.headers },
  };
}

const shape: MiddlewareObj = {
  onError: (request: Request) => {
    if (request.response !== undefined) return;
    request.error = toHttpError(request.error) as unknown as Error;
  },
};

const applyHeaders: MiddlewareObj = {
  onError: (request: Request) => {
    const response = request.response as { headers?: Record<string, string> } | undefined;
    const headers = (request.error as Partial<ExposedHttpError> | undefined)?.headers;
    if (!response || !headers) return;
    response.headers = { ...response.headers, ...headers, 'Content-Type': JSON_CONTENT_TYPE };
  },
};

/** The error middlewares, to `.use()` first so that their onError runs last. */
export function httpErrors(): MiddlewareObj[] {
  return [applyHeaders, httpErrorHandler({ logger: false }), shape];
}

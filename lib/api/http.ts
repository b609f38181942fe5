/** Response helpers: the only place that builds `{ statusCode, headers, body }` objects. */
import type { Readable } from 'node:stream';
import type { ErrorBody } from './errors.ts';

export interface HttpResponse<Body = string> {
  statusCode: number;
  headers: Record<string, string>;
  body: Body;
}

export const JSON_CONTENT_TYPE = 'application/json';

export function noContent(headers: Record<string, string> = {}): HttpResponse {
  return { statusCode: 204, headers, body: '' };
}

export function jsonStream(
  statusCode: number,
  body: Readable,
  headers: Record<string, string> = {},
): HttpResponse<Readable> {
  return { statusCode, headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers }, body };
}

export function errorResponse(
  error: ErrorBody,
  headers: Readonly<Record<string, string>> = {},
): HttpResponse {
  return {
    statusCode: error.status,
    headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers },
    body: JSON.stringify(error),
  };
}

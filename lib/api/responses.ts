/** Response helpers: the only place that builds `{ statusCode, headers, body }` objects. */
import type { Readable } from 'node:stream';

export interface HttpResponse<Body = string> {
  statusCode: number;
  headers: Record<string, string>;
  body: Body;
}

export const JSON_CONTENT_TYPE = 'application/json';

/** `response` with `headers` added (they win over its own of the same name). */
export function withHeaders<Body>(
  response: HttpResponse<Body>,
  headers: Readonly<Record<string, string>>,
): HttpResponse<Body> {
  return { ...response, headers: { ...response.headers, ...headers } };
}

export function noContent(headers: Record<string, string> = {}): HttpResponse {
  return { statusCode: 204, headers, body: '' };
}

/**
 * 304 Not Modified: no body, and of the 200's headers only the validator and what caches need
 * (RFC 9110 §15.4.5: ETag, Cache-Control, Vary), no representation metadata.
 */
export function notModifiedResponse(headers: Record<string, string>): HttpResponse {
  return { statusCode: 304, headers, body: '' };
}

export function jsonStream(
  statusCode: number,
  body: Readable,
  headers: Record<string, string> = {},
): HttpResponse<Readable> {
  return { statusCode, headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers }, body };
}

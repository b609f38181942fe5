/**
 * What a conditional answer needs, for every list the API serves (v1's list, v2's pages): the
 * request's headers, the validators of an answer, and the 304 when the request's tag still
 * matches (RFC 9110 §13.1.2: weak comparison).
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  formatEntityTag,
  notModified,
  type EntityTag,
  type IfNoneMatch,
} from '../../lib/api/etag.ts';
import { notModifiedResponse, type HttpResponse } from '../../lib/api/responses.ts';
import type { CallOptions } from '../../lib/failures.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import type { ListVersion } from '../../lib/orders/order-store.ts';
import type { HttpRequest, Validated } from './http-function.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit } from './metrics.ts';

/**
 * Caches may keep a list but must ask the service (a conditional request) before each use
 * (`no-cache`), and only a client's own cache may keep it (`private`: it answers a request with
 * an API key; RFC 9111 §3.5 keeps shared caches from reusing it anyway, `private` says so to
 * those that do not follow that rule).
 */
const CACHE_CONTROL = { 'Cache-Control': 'private, no-cache' } as const;

/** A request header, by its lower-case name, whatever case the client sent (repeats joined). */
export function requestHeader(event: APIGatewayProxyEvent, name: string): string | undefined {
  for (const [key, values] of Object.entries(event.multiValueHeaders ?? {})) {
    if (key.toLowerCase() === name && values) return values.join(', ');
  }
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
}

/** A list request: what it asks and its If-None-Match. */
export interface ConditionalRequest {
  readonly condition: IfNoneMatch;
}

/**
 * The validators of an answer whose weak tag is `opaque` (none: the answer has no tag now), with
 * `headers` beside them, or its 304 when the request's condition still matches it — or one of
 * `alsoCurrent`, other tags that stand for the same answer now (a v2 page's content tag beside
 * its version tag). An answer without a tag is never a 304, not even to `If-None-Match: *`: a 304
 * carries the ETag its 200 would (RFC 9110 §15.4.5), and the answer is then given in full (or,
 * for an answer tagged by its content, once it is read: its own 304, with its tag).
 */
export function validate(
  condition: IfNoneMatch,
  opaque: string | undefined,
  headers: Readonly<Record<string, string>>,
  alsoCurrent: readonly string[] = [],
): Validated<HttpResponse> {
  const tag: EntityTag | undefined = opaque === undefined ? undefined : { weak: true, opaque };
  const validators = {
    ...(tag ? { ETag: formatEntityTag(tag) } : {}),
    ...CACHE_CONTROL,
    ...headers,
  };
  const current = [...(tag ? [tag] : []), ...alsoCurrent.map((o) => ({ weak: true, opaque: o }))];
  const matched = current.some((t) => notModified(condition, t));
  if (!matched) return { validators };
  logger.info('List not modified', { etag: validators.ETag });
  metrics.addMetric(METRIC_NAMES.listNotModified, MetricUnit.Count, 1);
  return { notModified: notModifiedResponse(validators) };
}

/** What a list's check read: the version, and the answer's tag it gave (none: no tag now). */
export interface VersionSeen {
  readonly version: ListVersion;
  readonly versionTag: string | undefined;
}

/**
 * A list's check (./http-function.ts ConditionalOperation): the list's version read by the
 * request's deadline, its answer's tag from it (`tagOf`: none when the answer has no tag now),
 * and the validators, with `headers`, or the 304; the full answer is handed what it read.
 */
export function versionCheck<Request extends ConditionalRequest>(
  readVersion: (options: CallOptions) => Promise<ListVersion>,
  tagOf: (request: Request, version: ListVersion, http: HttpRequest) => string | undefined,
  options: {
    readonly headers?: Readonly<Record<string, string>>;
    /** Whether the answer is tagged by its content: the check cannot decide (Checked.byContent). */
    readonly byContent?: (request: Request) => boolean;
  } = {},
): (request: Request, http: HttpRequest) => Promise<Validated<HttpResponse, VersionSeen>> {
  return async (request, http) => {
    const version = await readVersion({ signal: http.signal });
    const versionTag = tagOf(request, version, http);
    const validated = validate(request.condition, versionTag, options.headers ?? {});
    if ('notModified' in validated) return validated;
    const byContent = options.byContent?.(request) ?? false;
    return { ...validated, version, versionTag, ...(byContent ? { byContent } : {}) };
  };
}

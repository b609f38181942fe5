/**
 * What a conditional answer needs, for every list the API serves (v1's list, v2's pages): the
 * request's headers, the validators of an answer, and the 304 when the request's tag still
 * matches (RFC 9110 §13.1.2: weak comparison).
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  formatEntityTag,
  isConditional,
  notModified,
  type IfNoneMatch,
} from '../../lib/api/etag.ts';
import { notModifiedResponse, type HttpResponse } from '../../lib/api/responses.ts';
import type { CallOptions } from '../../lib/failures.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import type { ListVersion } from '../../lib/orders/order-store.ts';
import type { FreeAnswer } from './http-function.ts';
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

/**
 * The validators of an answer whose weak tag is `opaque` (none: the answer has no tag now), with
 * `headers` beside them, and its 304 when the request's condition still matches.
 */
export function validate(
  condition: IfNoneMatch,
  opaque: string | undefined,
  headers: Readonly<Record<string, string>>,
): { validators: Record<string, string>; notModified: HttpResponse | undefined } {
  const tag = opaque === undefined ? undefined : { weak: true, opaque };
  const validators = {
    ...(tag ? { ETag: formatEntityTag(tag) } : {}),
    ...CACHE_CONTROL,
    ...headers,
  };
  if (!notModified(condition, tag)) return { validators, notModified: undefined };
  logger.info('List not modified', { etag: validators.ETag });
  metrics.addMetric(METRIC_NAMES.listNotModified, MetricUnit.Count, 1);
  return { validators, notModified: notModifiedResponse(validators) };
}

/** What a list's check found when the answer is not a 304: the version read and its validators. */
export interface CheckedList {
  readonly version: ListVersion;
  readonly validators: Record<string, string>;
}

/** A list request that may be conditional; `checked`: what its free answer's check found. */
export interface ConditionalListRequest {
  readonly condition: IfNoneMatch;
  readonly checked?: CheckedList;
}

/**
 * The one step from the list's version to the answer's validators, for the free answer and `act`
 * alike: the version is read and `check`ed (its 304, or the validators of the answer to send);
 * a request whose free answer already did so (`checked`) reads and checks nothing again.
 */
export function versionCheck<Request extends ConditionalListRequest>(
  readVersion: (options: CallOptions) => Promise<ListVersion>,
  check: (request: Request, version: ListVersion) => ReturnType<typeof validate>,
): (
  request: Request,
  options: CallOptions,
) => Promise<CheckedList | { readonly notModified: HttpResponse }> {
  return async (request, options) => {
    if (request.checked) return request.checked;
    const version = await readVersion(options);
    const { validators, notModified: unchanged } = check(request, version);
    return unchanged ? { notModified: unchanged } : { version, validators };
  };
}

/**
 * The free answer of a conditional list request (./http-function.ts): once the key's free
 * allowance has admitted it, `checkVersion` (versionCheck) reads the list's version and checks
 * it; a 304 is the free answer, otherwise the request goes on, counted, with what the check
 * found (`act` reads no other version). `prepare`, when given, first turns the request into
 * what the check needs, without I/O (it may refuse it: then nothing is read).
 */
export function freeWhileUnchanged<Request extends ConditionalListRequest>(
  checkVersion: (
    request: Request,
    options: CallOptions,
  ) => Promise<CheckedList | { readonly notModified: HttpResponse }>,
  prepare: (request: Request) => Request = (request) => request,
): FreeAnswer<Request, HttpResponse> {
  return {
    applies: (request) => isConditional(request.condition),
    answer: async (request, { signal }) => {
      const prepared = prepare(request);
      const checked = await checkVersion(prepared, { signal });
      return 'notModified' in checked
        ? { free: checked.notModified }
        : { counted: { ...prepared, checked } };
    },
  };
}

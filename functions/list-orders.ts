/**
 * GET /store/orders — every order, sorted by id, streamed as one JSON array, compressed with the
 * best coding the client accepts (Accept-Encoding: zstd, br, gzip, else identity).
 *
 * Conditional: every 200 carries a weak ETag — the list's version, read before its first page
 * (lib/dynamodb/list-version.ts) — and `If-None-Match` with a matching tag (or `*`) is answered
 * 304 Not Modified without reading an order. The tag is weak (RFC 9110 §8.8.1): it stands for
 * the list, the same for every content coding, whose bytes differ and are not even the same
 * from one compressed response to the next (the compressor flushes when the reads pause); weak
 * comparison is what If-None-Match uses anyway. A 304 that the key's free allowance covers does
 * not use the plan's quota (./shared/rate-limit.ts, lib/limits/conditional.ts).
 */
import middy, { type MiddlewareObj } from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { negotiateCoding, type Coding } from '../lib/api/content-coding.ts';
import {
  formatEntityTag,
  isConditional,
  notModified,
  parseIfNoneMatch,
  type EntityTag,
  type IfNoneMatch,
} from '../lib/api/etag.ts';
import { jsonStream, notModifiedResponse } from '../lib/api/http.ts';
import { METRIC_NAMES } from '../lib/metrics.ts';
import { listOrders, listVersion } from '../lib/orders/operations.ts';
import type { ListVersion, OrderStore } from '../lib/orders/order-store.ts';
import { httpStoresFromEnv } from './shared/dependencies.ts';
import { ApiError } from './shared/http-errors.ts';
import { httpFunction } from './shared/http-function.ts';
import { httpInvocation, type HttpInvocation } from './shared/invocation.ts';
import { listBody, ListReport } from './shared/list-body.ts';
import { logger } from './shared/logger.ts';
import { metrics, MetricUnit } from './shared/metrics.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

/** Every answer that depends on Accept-Encoding says so (for caches): the 200, 304 and 406. */
const VARIES = { Vary: 'Accept-Encoding' } as const;

/**
 * Caches may keep the list but must ask the service (a conditional request) before each use
 * (`no-cache`), and only a client's own cache may keep it (`private`: it answers a request with
 * an API key; RFC 9111 §3.5 keeps shared caches from reusing it anyway, `private` says so to
 * those that do not follow that rule).
 */
const CACHE_CONTROL = { 'Cache-Control': 'private, no-cache' } as const;

export interface ListOrdersDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
  /** The response size at which the list is cut off (./shared/list-body.ts). */
  readonly ceilingBytes?: number;
}

/**
 * What a list request asks, read once per invocation, and the list's version, whose read
 * starts at the first look (before the limiter counts, with the free allowance): before the
 * first page.
 */
interface ListRequest {
  readonly condition: IfNoneMatch;
  readonly coding: Coding | undefined;
  readonly version: Promise<ListVersion>;
}

function tagOf(version: ListVersion): EntityTag | undefined {
  return version.tag === undefined ? undefined : { weak: true, opaque: version.tag };
}

/**
 * The request's preconditions: 406 when no coding is acceptable (before any precondition, RFC
 * 9110 §13.2.1); else the list's validators, and whether its tag still matches (then 304).
 */
async function checkConditions({ condition, coding, version }: ListRequest) {
  if (coding === undefined) throw new ApiError('NOT_ACCEPTABLE', { headers: VARIES });
  const tag = tagOf(await version);
  const validators = {
    ...(tag ? { ETag: formatEntityTag(tag) } : {}),
    ...CACHE_CONTROL,
    ...VARIES,
  };
  return { coding, validators, unchanged: notModified(condition, tag) };
}

function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  for (const [key, values] of Object.entries(event.multiValueHeaders ?? {})) {
    if (key.toLowerCase() === name && values) return values.join(', ');
  }
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  const listRequest = (
    event: APIGatewayProxyEvent,
    invocation: HttpInvocation<ListRequest> = httpInvocation(),
  ): ListRequest => {
    if (!invocation.own) {
      const version = listVersion(deps.orders(), { signal: invocation.signal });
      // Awaited by the handler; a request refused before it must not leave it unobserved.
      version.catch(() => undefined);
      invocation.own = {
        condition: parseIfNoneMatch(header(event, 'if-none-match')),
        coding: negotiateCoding(header(event, 'accept-encoding')),
        version,
      };
    }
    return invocation.own;
  };
  /** A conditional request may be answered free (a 304): whether it will, before the count. */
  const mayAnswerFree: MiddlewareObj<APIGatewayProxyEvent> = {
    before: ({ event }) => {
      const request = listRequest(event);
      if (!isConditional(request.condition)) return;
      httpInvocation().freeAnswer =
        // A 406 comes before any precondition (RFC 9110 §13.2.1).
        request.coding === undefined
          ? Promise.resolve(false)
          : request.version.then((version) => notModified(request.condition, tagOf(version)));
    },
  };
  const answer = async (event: APIGatewayProxyEvent, invocation: HttpInvocation<ListRequest>) => {
    const { coding, validators, unchanged } = await checkConditions(listRequest(event, invocation));
    if (unchanged) {
      logger.info('List not modified', { etag: validators.ETag });
      metrics.addMetric(METRIC_NAMES.listNotModified, MetricUnit.Count, 1);
      return notModifiedResponse(validators);
    }
    const report = new ListReport();
    const orders = await listOrders(deps.orders(), {
      signal: invocation.signal,
      onUnreadable: report.addUnreadable,
    });
    return jsonStream(200, listBody(orders, coding, report, deps.ceilingBytes), {
      ...(coding === 'identity' ? {} : { 'Content-Encoding': coding }),
      ...validators,
    });
  };
  const list = httpFunction(
    deps,
    answer,
    deps.freeAllowance ? [mayAnswerFree as MiddlewareObj] : [],
  );
  // Streamed by middy around the chain, whose own early timeout stands.
  return middy<APIGatewayProxyEvent>({
    executionMode: executionModeStreamifyResponse,
    timeoutEarlyInMillis: 0,
  }).handler(list);
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
const stores = httpStoresFromEnv();
export const handler = createListOrdersHandler({ ...stores, freeAllowance: stores.limiter });

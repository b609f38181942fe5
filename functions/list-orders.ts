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
 * not use the plan's quota (./shared/rate-limit.ts, lib/limits/free-allowance.ts). Nothing is read
 * before the rate limiter (or, for a conditional request, the free allowance) has admitted the
 * request (./shared/http-function.ts).
 */
import type { Readable } from 'node:stream';
import { negotiateCoding, type Coding } from '../lib/api/content-coding.ts';
import { parseIfNoneMatch } from '../lib/api/etag.ts';
import { jsonStream, type HttpResponse } from '../lib/api/responses.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { httpStoresFromEnv } from './shared/stores.ts';
import { ApiError } from './shared/http-errors.ts';
import { conditionalHttpFunction, type Checked, type HttpRequest } from './shared/http-function.ts';
import { streamed } from './shared/streamed-function.ts';
import { listBody, ListReport } from './shared/list-body.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';
import { requestHeader, versionCheck, type ConditionalRequest } from './shared/validators.ts';

/** Every answer that depends on Accept-Encoding says so (for caches): the 200, 304 and 406. */
const VARIES = { Vary: 'Accept-Encoding' } as const;

export interface ListOrdersDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
  /** The response size at which the list is cut off (./shared/list-body.ts). */
  readonly ceilingBytes?: number;
}

/** What a list request asks: its condition and the coding of its answer. */
interface ListRequest extends ConditionalRequest {
  readonly coding: Coding;
}

type ListAnswer = HttpResponse<Readable | string>;

/** The request's preconditions: 406 when no coding is acceptable, before any (RFC 9110 §13.2.1). */
function parseListRequest({ event }: HttpRequest): ListRequest {
  const coding = negotiateCoding(requestHeader(event, 'accept-encoding'));
  if (coding === undefined) throw new ApiError('NOT_ACCEPTABLE', { headers: VARIES });
  return { condition: parseIfNoneMatch(requestHeader(event, 'if-none-match')), coding };
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  /** The list's tag is its version's (read before its first page: it covers nothing the list lacks). */
  const check = versionCheck<ListRequest>(
    (options) => deps.orders().readListVersion(options),
    (_, version) => version.tag,
    { headers: VARIES },
  );

  const act = async (
    { coding }: ListRequest,
    { validators }: Checked,
    { signal }: HttpRequest,
  ): Promise<ListAnswer> => {
    const report = new ListReport();
    const orders = await deps.orders().openOrderStream({
      signal,
      onUnreadable: report.addUnreadable,
    });
    return jsonStream(200, listBody(orders, coding, report, deps.ceilingBytes), {
      ...(coding === 'identity' ? {} : { 'Content-Encoding': coding }),
      ...validators,
    });
  };

  return streamed(
    conditionalHttpFunction<ListRequest, Readable | string>(deps, {
      permission: 'read',
      parse: parseListRequest,
      check,
      act,
    }),
  );
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
const stores = httpStoresFromEnv();
export const handler = createListOrdersHandler({ ...stores, freeAllowance: stores.limiter });

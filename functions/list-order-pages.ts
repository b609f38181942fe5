/**
 * GET /v2/store/orders — the orders a query selects, one page at a time: filters (`status`,
 * `petId`, `shipDateFrom`/`shipDateTo`, `complete`), `pageSize` and `pageToken`
 * (lib/orders/list-query.ts). The body is `{"orders": [...], "nextPageToken": "…", "pageSize": N}`,
 * with `Link: <…>; rel="next"` beside the token; the last page has neither.
 *
 * Decided, then done (./shared/http-function.ts): a malformed query is refused 400 once the
 * request is counted; a conditional request is first admitted by the key's free allowance, and
 * its page's tag needs only the list's version (lib/orders/page-tag.ts): a 304 reads no order.
 * A page comes from the index its filter needs (lib/dynamodb/order-pages.ts), planned once a
 * request, without I/O, before the version is read: an index not deployed is answered 503 with
 * Retry-After having read nothing; one still being built, 503 once the page's reads find it.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { parseIfNoneMatch } from '../lib/api/etag.ts';
import { JSON_CONTENT_TYPE, type HttpResponse } from '../lib/api/responses.ts';
import {
  fromMultiValue,
  nextPageParameters,
  parseListQuery,
  type ListQuery,
} from '../lib/orders/list-query.ts';
import { orderToJsonV2 } from '../lib/orders/order.ts';
import type { OrderPageReader, PagePlan } from '../lib/orders/order-pages.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { pageEntityTag } from '../lib/orders/page-tag.ts';
import { encodePageToken } from '../lib/orders/page-token.ts';
import { ApiError } from './shared/http-errors.ts';
import type { HttpRequest } from './shared/http-function.ts';
import { streamedHttpFunction } from './shared/streamed-function.ts';
import { ListReport } from './shared/list-body.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';
import { orderPagesFromEnv } from './shared/page-stores.ts';
import { httpStoresFromEnv } from './shared/stores.ts';
import {
  freeWhileUnchanged,
  requestHeader,
  validate,
  versionCheck,
  type ConditionalListRequest,
} from './shared/validators.ts';

export interface ListOrderPagesDependencies extends RateLimitDependencies {
  /** The list's version (its tag covers a page read after it). */
  readonly orders: () => OrderStore;
  readonly pages: () => OrderPageReader;
  readonly now?: () => number;
}

/**
 * What a page request asks (and, once planned, its filter's plan; once a conditional request's
 * check read the version, what it found).
 */
interface PageRequest extends ConditionalListRequest {
  readonly query: ListQuery;
  readonly plan?: PagePlan;
  /** The query's parameters as sent, for the next page's link. */
  readonly parameters: readonly (readonly [string, string])[];
  /** The path as the client sent it (its stage included): the next page's link. */
  readonly path: string;
}

type PageAnswer = HttpResponse<string>;

function readPageRequest(event: APIGatewayProxyEvent): PageRequest {
  const parameters = fromMultiValue(event.multiValueQueryStringParameters);
  const parsed = parseListQuery(parameters);
  if ('error' in parsed) {
    throw new ApiError(parsed.error.code, { message: parsed.error.message });
  }
  return {
    query: parsed.ok,
    parameters,
    path: event.requestContext?.path ?? event.path,
    condition: parseIfNoneMatch(requestHeader(event, 'if-none-match')),
  };
}

/** The page's body: the orders' exact JSON, the next token when there is one, the size served. */
function pageBody(orders: readonly string[], nextPageToken: string | undefined, pageSize: number) {
  const token =
    nextPageToken === undefined ? '' : `,"nextPageToken":${JSON.stringify(nextPageToken)}`;
  return `{"orders":[${orders.join(',')}]${token},"pageSize":${pageSize}}`;
}

export function createListOrderPagesHandler(deps: ListOrderPagesDependencies) {
  const now = () => deps.now?.() ?? Date.now();

  /**
   * The request with its filter's plan: made once a request, without I/O, before the version is
   * read (an index not deployed throws index-not-ready here, having read nothing).
   */
  const planned = (request: PageRequest): PageRequest =>
    request.plan ? request : { ...request, plan: deps.pages().plan(request.query.filter) };

  /** The page's validators at `version`, and its 304 when the request's tag still matches. */
  const checkVersion = versionCheck<PageRequest>(
    (options) => deps.orders().readListVersion(options),
    (request, version) => {
      const { filter, start, pageSize } = request.query;
      const tag = pageEntityTag({
        version,
        filter,
        ...(start ? { start } : {}),
        pageSize,
        plan: request.plan ?? deps.pages().plan(filter),
        now: now(),
      });
      return validate(request.condition, tag, {});
    },
  );

  const act = async (input: PageRequest, { signal }: HttpRequest): Promise<PageAnswer> => {
    const request = planned(input);
    const checked = await checkVersion(request, { signal });
    if ('notModified' in checked) return checked.notModified;
    const { validators } = checked;
    const { filter, start, pageSize } = request.query;
    const report = new ListReport();
    const page = await deps.pages().readPage(
      { filter, ...(start ? { start } : {}), pageSize },
      {
        signal,
        onUnreadable: report.addUnreadable,
        ...(request.plan ? { plan: request.plan } : {}),
      },
    );
    const nextPageToken = page.next ? encodePageToken(filter, page.next) : undefined;
    const body = pageBody(page.orders.map(orderToJsonV2), nextPageToken, pageSize);
    report.orders = page.orders.length;
    report.bytes = Buffer.byteLength(body);
    report.publish('identity', 'complete', { source: page.plan.source, ...page.cost });
    const next = nextPageToken
      ? `<${request.path}?${new URLSearchParams(nextPageParameters(request.parameters, nextPageToken)).toString()}>; rel="next"`
      : undefined;
    return {
      statusCode: 200,
      headers: {
        'Content-Type': JSON_CONTENT_TYPE,
        ...validators,
        ...(next ? { Link: next } : {}),
      },
      body,
    };
  };

  return streamedHttpFunction<PageRequest, string>(deps, {
    permission: 'read',
    read: readPageRequest,
    free: freeWhileUnchanged(checkVersion, planned),
    act,
  });
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
const stores = httpStoresFromEnv();
export const handler = createListOrderPagesHandler({
  ...stores,
  pages: orderPagesFromEnv(),
  freeAllowance: stores.limiter,
});

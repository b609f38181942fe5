/**
 * GET /v2/store/orders — the orders a query selects, one page at a time: filters (`status`,
 * `petId`, `shipDateFrom`/`shipDateTo`, `complete`), `pageSize` and `pageToken`
 * (lib/orders/list-query.ts). The body is `{"orders": [...], "nextPageToken": "…", "pageSize": N}`,
 * with `Link: <…>; rel="next"` beside the token; the last page has neither.
 *
 * Decided, then done (./shared/http-function.ts), top to bottom: `parse` parses the query and
 * plans its pages, without I/O (a malformed query is refused 400, an index not deployed 503 with
 * Retry-After, both once the request is counted, having read nothing); `check` reads the list's
 * version, whose tag answers a conditional request for a page of the table 304 without reading an
 * order (within the key's free allowance, off the plan's quota); `act` reads the page
 * (lib/dynamodb/order-pages.ts), with what the version says of the index, and answers it: a page
 * of the table tagged by version, a page of an index by its content (lib/orders/page-tag.ts),
 * whose 304 is answered once the page is read (free within the allowance, as a version's: the
 * same page as the client's, nothing sent again). An index still being built is answered 503 once
 * the page's reads find it.
 */
import { parseIfNoneMatch } from '../lib/api/etag.ts';
import { JSON_CONTENT_TYPE, type HttpResponse } from '../lib/api/responses.ts';
import {
  fromMultiValue,
  nextPageParameters,
  parseListQuery,
  type ListQuery,
} from '../lib/orders/list-query.ts';
import { orderToJsonV2 } from '../lib/orders/order.ts';
import type { OrderPageReader, PagePlan } from '../lib/orders/order-page-reader.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { pageContentTag, pageEntityTag } from '../lib/orders/page-tag.ts';
import { encodePageToken } from '../lib/orders/page-token.ts';
import { ApiError } from './shared/http-errors.ts';
import { conditionalHttpFunction, type Checked, type HttpRequest } from './shared/http-function.ts';
import { ListReport } from './shared/list-body.ts';
import { orderPagesFromEnv } from './shared/page-stores.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';
import { httpStoresFromEnv } from './shared/stores.ts';
import { streamed } from './shared/streamed-function.ts';
import {
  requestHeader,
  validate,
  versionCheck,
  type ConditionalRequest,
  type VersionSeen,
} from './shared/validators.ts';

export interface ListOrderPagesDependencies extends RateLimitDependencies {
  /** The list's version (its tag covers a page read after it). */
  readonly orders: () => OrderStore;
  readonly pages: () => OrderPageReader;
}

/** What a page request asks, with its filter's plan. */
interface AskedPage extends ConditionalRequest {
  readonly query: ListQuery;
  readonly plan: PagePlan;
  /** The query's parameters as sent, for the next page's link. */
  readonly parameters: readonly (readonly [string, string])[];
  /** The path as the client sent it (its stage included): the next page's link. */
  readonly path: string;
}

type PageAnswer = HttpResponse<string>;

/** The page's body: the orders' exact JSON, the next token when there is one, the size served. */
function pageBody(orders: readonly string[], nextPageToken: string | undefined, pageSize: number) {
  const token =
    nextPageToken === undefined ? '' : `,"nextPageToken":${JSON.stringify(nextPageToken)}`;
  return `{"orders":[${orders.join(',')}]${token},"pageSize":${pageSize}}`;
}

export function createListOrderPagesHandler(deps: ListOrderPagesDependencies) {
  const parse = ({ event }: HttpRequest): AskedPage => {
    const parameters = fromMultiValue(event.multiValueQueryStringParameters);
    const parsed = parseListQuery(parameters);
    if ('error' in parsed) {
      throw new ApiError(parsed.error.code, { message: parsed.error.message });
    }
    return {
      query: parsed.ok,
      plan: deps.pages().plan(parsed.ok.filter),
      parameters,
      path: event.requestContext?.path ?? event.path,
      condition: parseIfNoneMatch(requestHeader(event, 'if-none-match')),
    };
  };

  /**
   * The version, and the page's 304 when its tag by version still matches (a page of the table);
   * a page of an index is tagged by its content, which only reading it decides.
   */
  const check = versionCheck<AskedPage>(
    (options) => deps.orders().readListVersion(options),
    ({ query: { filter, start, pageSize }, plan }, version) =>
      pageEntityTag({ version, filter, ...(start ? { start } : {}), pageSize, plan }),
    { byContent: ({ plan }) => !plan.consistent },
  );

  const act = async (
    { query: { filter, start, pageSize }, plan, parameters, path, condition }: AskedPage,
    { version, versionTag }: Checked<VersionSeen>,
    { now, signal }: HttpRequest,
  ): Promise<PageAnswer> => {
    const report = new ListReport();
    const page = await deps
      .pages()
      .readPage(
        { plan, ...(start ? { start } : {}), pageSize, seen: { version, at: now } },
        { signal, onUnreadable: report.addUnreadable },
      );
    const nextPageToken = page.next ? encodePageToken(filter, page.next) : undefined;
    const body = pageBody(page.orders.map(orderToJsonV2), nextPageToken, pageSize);
    report.orders = page.orders.length;
    report.bytes = Buffer.byteLength(body);
    report.publish('identity', 'complete', { source: page.plan.source, ...page.cost });
    const next = nextPageToken
      ? `<${path}?${new URLSearchParams(nextPageParameters(parameters, nextPageToken)).toString()}>; rel="next"`
      : undefined;
    // A page of the table is tagged by version, one of an index by its content. Either answers
    // 304 now that the page is read: the client holds this very page.
    const contentTag = pageContentTag(body);
    const validated = validate(condition, versionTag ?? contentTag, {}, [contentTag]);
    if ('notModified' in validated) return validated.notModified;
    return {
      statusCode: 200,
      headers: {
        'Content-Type': JSON_CONTENT_TYPE,
        ...validated.validators,
        ...(next ? { Link: next } : {}),
      },
      body,
    };
  };

  return streamed(
    conditionalHttpFunction<AskedPage, string, VersionSeen>(deps, {
      permission: 'read',
      parse,
      check,
      act,
    }),
  );
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
const stores = httpStoresFromEnv();
export const handler = createListOrderPagesHandler({
  ...stores,
  pages: orderPagesFromEnv(),
  freeAllowance: stores.limiter,
});

/**
 * A page of v2's list (`GET /v2/store/orders`): `{"orders": [...], "nextPageToken": "…",
 * "pageSize": 50}`, and the query that asks for one. The orders are read by the list's parser
 * (./order-list-parser.ts) from their own text, so that ids stay exact: the page's other members
 * are plain JSON.
 */
import { OrderListParseError } from './errors.ts';
import { ORDER_STATUSES, parseInt64, type Order, type OrderStatus } from './order.ts';
import { parseOrderList, type OrderListParserOptions } from './order-list-parser.ts';

/** What a v2 list asks for: every member optional, all of them combined with AND. */
export interface OrderFilter {
  /** One status, or several: an order with any of them. */
  readonly status?: OrderStatus | readonly OrderStatus[];
  /** One pet's orders: an int64, as a bigint or its digits. */
  readonly petId?: bigint | string;
  /** Orders shipping at or after this moment (RFC 3339, or a Date); sorted by ship date. */
  readonly shipDateFrom?: string | Date;
  /** Orders shipping before this moment (RFC 3339, or a Date); sorted by ship date. */
  readonly shipDateTo?: string | Date;
  readonly complete?: boolean;
}

/** One page of a filter's orders. */
export interface OrderPage {
  /** The page's orders, sorted by id, or by ship date then id when a date range is asked. */
  readonly orders: readonly Order[];
  /** The next page's token; undefined on the last page (only its absence means the end). */
  readonly nextPageToken: string | undefined;
  /** How many orders a page holds at most, as served (a larger `pageSize` is served as 100). */
  readonly pageSize: number;
  /** True when the API answered 304 Not Modified: this is the page the client kept. */
  readonly notModified: boolean;
  /** The page's ETag; undefined when the API sent none. */
  readonly etag: string | undefined;
}

/** The most a page may hold. */
export const MAX_PAGE_SIZE = 100;

function instant(value: string | Date, name: string): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError(`${name} is an invalid Date`);
    return value.toISOString();
  }
  return value;
}

/**
 * The query of one page: the filter's parameters, then the page size and token. A value the API
 * would refuse for its type (an unknown status, a petId outside int64, a page size below 1) is
 * refused here, before anything is sent; the API checks the rest (a date's format, the range).
 */
export function orderPageQuery(
  filter: OrderFilter,
  page: { readonly pageSize?: number; readonly pageToken?: string } = {},
): URLSearchParams {
  const query = new URLSearchParams();
  const statuses =
    filter.status === undefined
      ? []
      : typeof filter.status === 'string'
        ? [filter.status]
        : filter.status;
  for (const status of statuses) {
    if (!(ORDER_STATUSES as readonly string[]).includes(status)) {
      throw new TypeError(
        `status must be one of ${ORDER_STATUSES.join(', ')}, not ${JSON.stringify(status)}`,
      );
    }
    query.append('status', status);
  }
  if (filter.petId !== undefined) {
    const petId = parseInt64(String(filter.petId));
    if (petId === undefined)
      throw new TypeError(`petId ${String(filter.petId).slice(0, 40)} is not an int64`);
    query.set('petId', petId.toString());
  }
  if (filter.shipDateFrom !== undefined) {
    query.set('shipDateFrom', instant(filter.shipDateFrom, 'shipDateFrom'));
  }
  if (filter.shipDateTo !== undefined)
    query.set('shipDateTo', instant(filter.shipDateTo, 'shipDateTo'));
  if (filter.complete !== undefined) query.set('complete', String(filter.complete));
  if (page.pageSize !== undefined) {
    if (!Number.isInteger(page.pageSize) || page.pageSize < 1) {
      throw new TypeError(
        `pageSize must be a whole number from 1 (one above ${MAX_PAGE_SIZE} is served as ${MAX_PAGE_SIZE})`,
      );
    }
    query.set('pageSize', String(page.pageSize));
  }
  if (page.pageToken !== undefined) query.set('pageToken', page.pageToken);
  return query;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Where the value of a top-level member of a JSON object stands in `text` ([start, end)), or
 * undefined when the object has no such member. `text` must be well-formed JSON (parsed first).
 */
function memberSpan(text: string, name: string): [number, number] | undefined {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = -1;
  let lastKey: string | undefined;
  let valueStart = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) {
        inString = false;
        if (depth === 1 && valueStart < 0)
          lastKey = JSON.parse(text.slice(stringStart, i + 1)) as string;
      }
      continue;
    }
    const ch = text[i];
    if (c === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (ch === ':' && depth === 1) {
      valueStart = i + 1;
    } else if (ch === '{' || ch === '[') {
      depth++;
    } else if ((ch === ',' && depth === 1) || ((ch === '}' || ch === ']') && --depth === 0)) {
      if (valueStart >= 0 && lastKey === name) return [valueStart, i];
      valueStart = -1;
      lastKey = undefined;
    }
  }
  return undefined;
}

/** A page's body: its orders exact to the last digit, its token and its size. */
export function parseOrderPage(
  text: string,
  options?: OrderListParserOptions,
): Pick<OrderPage, 'orders' | 'nextPageToken' | 'pageSize'> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new OrderListParseError('the page is not JSON', 0, { cause: error });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new OrderListParseError('the page is not a JSON object', 0);
  }
  const { nextPageToken, pageSize } = body as Record<string, unknown>;
  if (nextPageToken !== undefined && typeof nextPageToken !== 'string') {
    throw new OrderListParseError('the page’s nextPageToken is not a string', 0);
  }
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1) {
    throw new OrderListParseError('the page’s pageSize is not a whole number', 0);
  }
  const span = memberSpan(text, 'orders');
  if (!span) throw new OrderListParseError('the page has no orders', 0);
  const orders = parseOrderList(text.slice(span[0], span[1]), options);
  return { orders, nextPageToken, pageSize };
}

/**
 * The Store Orders API client: web-standard APIs only (fetch, streams, TextDecoder,
 * AbortSignal, timers), so it runs unchanged in Node 24 and in browsers.
 */
import {
  API_ERROR_STATUS,
  ApiError,
  isApiErrorCode,
  OrderListParseError,
  UNEXPECTED_RESPONSE,
} from './errors.ts';
import { type Order, parseInt64 } from './order.ts';
import { OrderListParser } from './order-list-parser.ts';
import { orderPageQuery, parseOrderPage, type OrderFilter, type OrderPage } from './order-page.ts';
import { parseRetryAfter, readRateLimit, type RateLimitInfo } from './rate-limit-headers.ts';
import { RateLimitPacer, type PacerSnapshot, type Ticket } from './pacer.ts';
import { wait, Watchdog } from './timers.ts';

/** What `new Headers(…)` accepts (named so in the DOM lib, not in every environment's types). */
export type HeadersInput = ConstructorParameters<typeof Headers>[0];

export interface StoreOrdersClientOptions {
  /** Base address, ending in the stage: `https://…/v1`, or `http://127.0.0.1:3000/v1`. */
  readonly baseUrl: string | URL;
  /**
   * Base address of v2 (the filtered, paged list), used as given: by default `baseUrl` with its
   * last `/v1` as `/v2` (the two stages of one API, or a custom domain's two base paths).
   */
  readonly v2BaseUrl?: string | URL;
  /** The API key (`sok_…`), sent as `Authorization: Bearer <key>`. */
  readonly apiKey: string;
  /** Default per-call settings (each call can override them). */
  readonly timeoutMs?: number;
  readonly budgetMs?: number;
  readonly maxAttempts?: number;
  /** First backoff delay; each retry doubles it, up to `maxDelayMs` (full jitter). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Requests let in flight while the key's remaining count is not known yet (default 1). */
  readonly initialConcurrency?: number;
  /** RATE_LIMITED refusals tolerated in one minute before sending stops until the next one. */
  readonly maxRefusalsPerMinute?: number;
  /** Longest order (characters) the list parser accepts. */
  readonly maxOrderLength?: number;
  /** Headers sent with every request (browsers ignore forbidden ones such as Accept-Encoding). */
  readonly headers?: HeadersInput;
  /** A fetch to use instead of the global one. */
  readonly fetch?: typeof fetch;
  /**
   * Keep the last list and its ETag, and send `If-None-Match` with `getOrders` and
   * `listAllOrders` (default true): an unchanged list then costs a 304 with no body, which does
   * not use the key's plan. `false` turns it off for this client (`conditional` per call too).
   */
  readonly conditional?: boolean;
}

export interface CallOptions {
  /** Aborts the call: waits, the request and the reading of the list. */
  readonly signal?: AbortSignal;
  /**
   * Longest the server may stay silent (ms): until the answer's headers arrive, and between two
   * chunks of the list. Default 30 s. Exceeded: the call fails with a `TimeoutError`
   * DOMException (not retried).
   */
  readonly timeoutMs?: number;
  /**
   * Time budget of the call (ms) for waiting and retrying: a retry or a wait for the rate limit
   * that would end later than this after the call began is not made; the call fails with the
   * last error (or, when nothing could be sent, an ApiError with `sent: false`). Default 30 s.
   */
  readonly budgetMs?: number;
  /** Requests at most for this call, the first included. Default 4. */
  readonly maxAttempts?: number;
  /** Extra headers for this call. */
  readonly headers?: HeadersInput;
}

export interface ListCallOptions extends CallOptions {
  /** Send `If-None-Match` with the kept list's ETag (default: the client's `conditional`). */
  readonly conditional?: boolean;
}

export interface PageCallOptions extends ListCallOptions {
  /** Orders a page holds at most: 1 to 100 (default 50; a larger value is served as 100). */
  readonly pageSize?: number;
}

/** The list, and whether it is the one the client kept (the API answered 304 Not Modified). */
export interface OrderList {
  /** Every order, sorted by id (frozen: it is the client's kept copy too). */
  readonly orders: readonly Order[];
  /** True when the API answered 304 Not Modified: `orders` is the list kept from before. */
  readonly notModified: boolean;
  /** The list's ETag; undefined when the API sent none (a change was being written). */
  readonly etag: string | undefined;
}

/** Pages whose ETag a client keeps for conditional requests (the least recently asked go first). */
const KEPT_PAGES = 1_000;

const DEFAULTS = {
  timeoutMs: 30_000,
  budgetMs: 30_000,
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  initialConcurrency: 1,
  maxRefusalsPerMinute: 5,
};

interface Answer {
  readonly response: Response;
  readonly watchdog: Watchdog;
}

/** A request that got no answer: network failure, or an abort / timeout. */
function isAbort(watchdog: Watchdog): boolean {
  return watchdog.signal.aborted;
}

/** The path segment of an order id: exact digits, validated before anything is sent. */
export function orderIdSegment(id: bigint | string): string {
  if (typeof id === 'bigint') {
    if (parseInt64(id.toString()) !== undefined) return id.toString();
  } else if (typeof id === 'string') {
    const parsed = parseInt64(id);
    if (parsed !== undefined) return parsed.toString();
  } else {
    throw new TypeError(
      `An order id must be a bigint or a string of digits, not a ${typeof id} (a JS number cannot hold every int64).`,
    );
  }
  const shown = String(id).slice(0, 40);
  return invalidId(shown);
}

function invalidId(shown: string): never {
  throw new ApiError({
    code: 'INVALID_ORDER_ID',
    status: API_ERROR_STATUS.INVALID_ORDER_ID,
    message: `Not sent: order id ${JSON.stringify(shown)} is not a base-10 integer in the int64 range.`,
    sent: false,
    attempts: 0,
  });
}

/**
 * A client of the Store Orders API, for one API key: its calls are paced by the rate-limit
 * headers the API sends, retried where a retry is safe (429 RATE_LIMITED, 503, a network failure)
 * within each call's attempts and time budget, and every failure is an `ApiError` typed by the
 * API's codes. It keeps the last list and the pages it got, with their ETags, for conditional
 * requests.
 *
 * @example
 * ```typescript
 * import { StoreOrdersClient } from '@store-orders/client';
 *
 * const client = new StoreOrdersClient({
 *   baseUrl: 'http://127.0.0.1:3000/v1', // or https://…execute-api….amazonaws.com/v1
 *   apiKey: process.env.STORE_ORDERS_KEY!,
 * });
 * for await (const order of client.orders({ status: 'pending' })) console.log(order.id);
 * ```
 */
export class StoreOrdersClient {
  readonly #base: string;
  readonly #v2Base: string | undefined;
  readonly #authorization: string;
  readonly #options: StoreOrdersClientOptions;
  readonly #fetch: typeof fetch;
  readonly #pacer: RateLimitPacer;
  /** The last list with an ETag, and the tag: what `If-None-Match` is sent with. */
  #kept: { readonly etag: string; readonly orders: readonly Order[] } | undefined;
  /** The pages with an ETag, by their query: what a page's `If-None-Match` is sent with. */
  readonly #keptPages = new Map<string, OrderPage>();

  constructor(options: StoreOrdersClientOptions) {
    const base = String(options.baseUrl).replace(/\/+$/, '');
    if (!/^https?:\/\//i.test(base)) throw new TypeError(`baseUrl must be an http(s) URL`);
    if (!options.apiKey) throw new TypeError('apiKey is required');
    this.#base = base;
    // A v2BaseUrl given is used as given (a custom domain may map v2 to any base path); without
    // one, a baseUrl ending in /v1 gives it, and any other base leaves v2 unknown (getOrderPage
    // says so).
    if (options.v2BaseUrl === undefined) {
      this.#v2Base = /\/v1$/.test(base) ? base.replace(/\/v1$/, '/v2') : undefined;
    } else {
      const v2 = String(options.v2BaseUrl).replace(/\/+$/, '');
      if (!/^https?:\/\//i.test(v2)) throw new TypeError(`v2BaseUrl must be an http(s) URL`);
      this.#v2Base = v2;
    }
    this.#authorization = `Bearer ${options.apiKey}`;
    this.#options = options;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#pacer = new RateLimitPacer({
      initialConcurrency: options.initialConcurrency ?? DEFAULTS.initialConcurrency,
      maxRefusalsPerMinute: options.maxRefusalsPerMinute ?? DEFAULTS.maxRefusalsPerMinute,
    });
  }

  /** The rate-limit headers of the last answer that carried them (undefined before any). */
  get rateLimit(): RateLimitInfo | undefined {
    return this.#pacer.last;
  }

  /** The client's own pacing state: requests in flight, available, blocked or banned until. */
  get pacing(): PacerSnapshot {
    return this.#pacer.snapshot();
  }

  /**
   * Every order, sorted by id, read as the list streams in: one order at a time in memory.
   * The request is sent when iteration starts. A list cut short (the body ending early, or the
   * connection closed or reset mid-body), or a body that is not a well-formed list, ends the
   * iteration with an OrderListParseError (orders before the fault were complete and valid).
   * Breaking out of the loop cancels the download.
   *
   * @example
   * ```typescript
   * for await (const order of client.listOrders()) console.log(order.id, order.status);
   * ```
   */
  async *listOrders(options: CallOptions = {}): AsyncGenerator<Order, void, undefined> {
    const answer = await this.#call('GET', '/store/orders', options);
    yield* this.#orders(answer);
  }

  /** The orders of a list's answer, parsed as its body streams in. */
  async *#orders({ response, watchdog }: Answer): AsyncGenerator<Order, void, undefined> {
    const reader = response.body?.getReader();
    let finished = reader === undefined;
    try {
      if (response.status !== 200) {
        throw unexpected(response, `GET /store/orders answered ${response.status}, not 200.`);
      }
      const parser = new OrderListParser(
        this.#options.maxOrderLength === undefined
          ? {}
          : { maxOrderLength: this.#options.maxOrderLength },
      );
      const decoder = new TextDecoder('utf-8', { fatal: true });
      let bytes = 0;
      while (reader !== undefined) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (isAbort(watchdog)) throw error;
          // The connection was closed or reset mid-body: the list was cut short (the service
          // ends a list that fails after its status line so), whatever the network layer says.
          throw new OrderListParseError(
            `the connection was cut after ${parser.count} orders: the response was cut short`,
            parser.position,
            { cause: error },
          );
        }
        const { done, value } = chunk;
        if (done) {
          finished = true;
          break;
        }
        watchdog.pause();
        let text: string;
        try {
          text = decoder.decode(value, { stream: true });
        } catch {
          throw new OrderListParseError('the body is not valid UTF-8', bytes);
        }
        bytes += value.byteLength;
        for (const order of parser.push(text)) yield order;
        watchdog.touch();
      }
      watchdog.finish();
      let rest: string;
      try {
        rest = decoder.decode();
      } catch {
        throw new OrderListParseError('the body ends inside a UTF-8 sequence', bytes);
      }
      for (const order of parser.push(rest)) yield order;
      parser.end();
    } catch (error) {
      if (isAbort(watchdog)) throw watchdog.signal.reason;
      throw error;
    } finally {
      watchdog.finish();
      if (!finished) {
        // The caller stopped early, or the list failed: release the connection.
        watchdog.abort();
        await reader?.cancel().catch(() => undefined);
      }
    }
  }

  /**
   * Every order, in one array, and whether it is the list the client kept: with `conditional`
   * (the default) the client sends `If-None-Match` with the ETag of the last list it got, and on
   * 304 Not Modified returns that list (`notModified: true`) — same data, no body downloaded,
   * and within the key's free allowance nothing taken from its plan. One client keeps one list.
   *
   * @example
   * ```typescript
   * const { orders, notModified } = await client.getOrders();
   * if (!notModified) console.log(`${orders.length} orders, changed since the last call`);
   * ```
   */
  async getOrders(options: ListCallOptions = {}): Promise<OrderList> {
    const conditional = options.conditional ?? this.#options.conditional ?? true;
    const kept = conditional ? this.#kept : undefined;
    const headers = new Headers(options.headers);
    if (kept && !headers.has('If-None-Match')) headers.set('If-None-Match', kept.etag);
    const answer = await this.#call('GET', '/store/orders', { ...options, headers });
    const etag = answer.response.headers.get('etag') ?? undefined;
    if (answer.response.status === 304) {
      answer.watchdog.finish();
      await answer.response.body?.cancel().catch(() => undefined);
      if (!kept) {
        throw unexpected(
          answer.response,
          'GET /store/orders answered 304 Not Modified, but this client keeps no list (If-None-Match was given by the caller).',
        );
      }
      return { orders: kept.orders, notModified: true, etag: etag ?? kept.etag };
    }
    const orders: Order[] = [];
    for await (const order of this.#orders(answer)) orders.push(Object.freeze(order));
    Object.freeze(orders);
    if (conditional) this.#kept = etag === undefined ? undefined : { etag, orders };
    return { orders, notModified: false, etag };
  }

  /**
   * Every order, in one array (memory grows with the list: prefer `listOrders` for big lists).
   * Conditional like `getOrders`: an unchanged list is the kept one (a copy of the array).
   *
   * @example
   * ```typescript
   * const orders = await client.listAllOrders();
   * const pending = orders.filter((order) => order.status === 'pending');
   * ```
   */
  async listAllOrders(options: ListCallOptions = {}): Promise<Order[]> {
    return [...(await this.getOrders(options)).orders];
  }

  /**
   * The orders a filter selects, one page after another, paced by the rate-limit headers like
   * every call: a page is one request. Each page is conditional (the client keeps its ETag):
   * walking an unchanged filter again costs 304s. Breaking out of the loop sends nothing more.
   *
   * @example
   * ```typescript
   * const march = { shipDateFrom: '2026-03-01T00:00:00Z', shipDateTo: '2026-04-01T00:00:00Z' };
   * for await (const order of client.orders({ status: 'pending', ...march })) {
   *   console.log(order.id, order.shipDate);
   * }
   * ```
   */
  async *orders(filter: OrderFilter = {}, options: PageCallOptions = {}): AsyncGenerator<Order> {
    for await (const page of this.orderPages(filter, options)) yield* page.orders;
  }

  /**
   * The pages of a filter, first to last (see `orders`).
   *
   * @example
   * ```typescript
   * for await (const page of client.orderPages({ petId: 7n }, { pageSize: 100 })) {
   *   console.log(page.orders.length, page.notModified ? '(unchanged)' : '');
   * }
   * ```
   */
  async *orderPages(
    filter: OrderFilter = {},
    options: PageCallOptions = {},
  ): AsyncGenerator<OrderPage> {
    let pageToken: string | undefined;
    do {
      const page = await this.getOrderPage(filter, { ...options, pageToken });
      yield page;
      pageToken = page.nextPageToken;
    } while (pageToken !== undefined);
  }

  /**
   * One page of a filter: the first, or the one `pageToken` names. With `conditional` (the
   * default) it sends `If-None-Match` with the ETag of the same page got before, and on 304
   * returns that page (`notModified: true`).
   *
   * @example
   * ```typescript
   * import type { OrderFilter } from '@store-orders/client';
   *
   * const unshipped: OrderFilter = { status: ['pending', 'cancelled'] };
   * const first = await client.getOrderPage(unshipped, { pageSize: 20 });
   * const pageToken = first.nextPageToken;
   * if (pageToken !== undefined) {
   *   const second = await client.getOrderPage(unshipped, { pageSize: 20, pageToken });
   *   console.log(second.orders.map((order) => order.id));
   * }
   * ```
   */
  async getOrderPage(
    filter: OrderFilter = {},
    options: PageCallOptions & { readonly pageToken?: string | undefined } = {},
  ): Promise<OrderPage> {
    const base = this.#v2Base;
    if (base === undefined) {
      throw new TypeError('v2 needs v2BaseUrl (a baseUrl that ends in /v1 gives it by itself)');
    }
    const query = orderPageQuery(filter, {
      ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
      ...(options.pageToken === undefined ? {} : { pageToken: options.pageToken }),
    });
    const path = `/store/orders?${query.toString()}`;
    const conditional = options.conditional ?? this.#options.conditional ?? true;
    const kept = conditional ? this.#keptPages.get(path) : undefined;
    const headers = new Headers(options.headers);
    if (kept?.etag && !headers.has('If-None-Match')) headers.set('If-None-Match', kept.etag);
    const { response, watchdog } = await this.#call('GET', path, { ...options, headers }, base);
    const etag = response.headers.get('etag') ?? undefined;
    let text: string;
    try {
      text = response.status === 304 ? '' : await response.text();
    } finally {
      watchdog.finish();
    }
    if (response.status === 304) {
      await response.body?.cancel().catch(() => undefined);
      if (!kept) {
        throw unexpected(
          response,
          'GET /v2/store/orders answered 304, but this client kept no such page.',
        );
      }
      // Asked again: the page is now the most recently asked of those kept.
      this.#keptPages.delete(path);
      this.#keptPages.set(path, kept);
      return { ...kept, notModified: true, etag: etag ?? kept.etag };
    }
    if (response.status !== 200) {
      throw unexpected(response, `GET /v2/store/orders answered ${response.status}, not 200.`);
    }
    const read = parseOrderPage(
      text,
      this.#options.maxOrderLength === undefined
        ? {}
        : { maxOrderLength: this.#options.maxOrderLength },
    );
    const page: OrderPage = Object.freeze({
      orders: Object.freeze(read.orders.map((order) => Object.freeze(order))),
      nextPageToken: read.nextPageToken,
      pageSize: read.pageSize,
      notModified: false,
      etag,
    });
    this.#keptPages.delete(path);
    if (conditional && etag !== undefined) {
      this.#keptPages.set(path, page);
      if (this.#keptPages.size > KEPT_PAGES) {
        this.#keptPages.delete(this.#keptPages.keys().next().value as string);
      }
    }
    return page;
  }

  /**
   * Cancels a pending order. Resolves when the order is cancelled, including when it already was
   * (the operation is idempotent). Fails with ApiError ORDER_NOT_FOUND, ORDER_ALREADY_SHIPPED or
   * INVALID_ORDER_ID (a malformed id is refused before sending, with `sent: false`).
   *
   * @example
   * ```typescript
   * import { isApiError } from '@store-orders/client';
   *
   * try {
   *   await client.cancelOrder('9007199254740993'); // an int64: a bigint or its digits
   * } catch (error) {
   *   if (isApiError(error, 'ORDER_ALREADY_SHIPPED')) console.log('too late');
   *   else throw error;
   * }
   * ```
   */
  async cancelOrder(id: bigint | string, options: CallOptions = {}): Promise<void> {
    const segment = orderIdSegment(id);
    const { response, watchdog } = await this.#call(
      'DELETE',
      `/store/orders/${encodeURIComponent(segment)}`,
      options,
    );
    try {
      await response.body?.cancel();
    } finally {
      watchdog.finish();
    }
  }

  /**
   * Sends one operation's request: through the pacer, retrying 429 RATE_LIMITED, 503 and
   * network failures with exponential backoff (full jitter) after Retry-After, within the call's
   * attempts and time budget. Resolves with a 2xx answer, whose body is still to be read under
   * the returned watchdog; throws an ApiError for any other.
   */
  async #call(
    method: string,
    path: string,
    options: CallOptions,
    base: string = this.#base,
  ): Promise<Answer> {
    const defaults = this.#options;
    const timeoutMs = options.timeoutMs ?? defaults.timeoutMs ?? DEFAULTS.timeoutMs;
    const budgetMs = options.budgetMs ?? defaults.budgetMs ?? DEFAULTS.budgetMs;
    const maxAttempts = Math.max(
      1,
      options.maxAttempts ?? defaults.maxAttempts ?? DEFAULTS.maxAttempts,
    );
    const deadline = Date.now() + budgetMs;
    const signal = options.signal;
    const headers = new Headers(defaults.headers);
    for (const [name, value] of new Headers(options.headers)) headers.set(name, value);
    headers.set('Authorization', this.#authorization);
    if (!headers.has('Accept')) headers.set('Accept', 'application/json');

    let attempts = 0;
    let lastFailure: Error | undefined;
    for (;;) {
      const ticket = await this.#pacer.acquire(deadline, signal, attempts, lastFailure);
      attempts++;
      const outcome = await this.#attempt(
        method,
        `${base}${path}`,
        headers,
        ticket,
        timeoutMs,
        signal,
        attempts,
      );
      if ('response' in outcome) return outcome;
      // Retry, if attempts and time allow: Retry-After, then backoff with full jitter.
      const delay = outcome.retryAfterMs + this.#backoff(attempts);
      if (attempts >= maxAttempts || Date.now() + delay > deadline) throw outcome.failure;
      lastFailure = outcome.failure;
      await wait(delay, { signal });
    }
  }

  /** One request: a 2xx answer, or a failure worth retrying; anything else is thrown. */
  async #attempt(
    method: string,
    url: string,
    headers: Headers,
    ticket: Ticket,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    attempts: number,
  ): Promise<Answer | { failure: Error; retryAfterMs: number }> {
    const watchdog = new Watchdog(timeoutMs, signal);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        signal: watchdog.signal,
      });
    } catch (error) {
      this.#pacer.abandoned(ticket);
      watchdog.finish();
      if (isAbort(watchdog)) throw watchdog.signal.reason;
      // A network failure: both operations are idempotent, so it is retried.
      return { failure: error as Error, retryAfterMs: 0 };
    }
    const info = readRateLimit(response.headers, response.status, Date.now());
    // 304 Not Modified: an answer, not a failure (the caller sent If-None-Match).
    if (response.ok || response.status === 304) {
      this.#pacer.answered(ticket, { status: response.status, info });
      return { response, watchdog };
    }
    const error = await this.#errorOf(response, info, attempts, ticket, watchdog);
    if (!isRetryable(error)) throw error;
    return { failure: error, retryAfterMs: (error.retryAfterSeconds ?? 0) * 1000 };
  }

  /** The ApiError of a non-2xx answer (its body read under the watchdog). */
  async #errorOf(
    response: Response,
    info: RateLimitInfo | undefined,
    attempts: number,
    ticket: Ticket,
    watchdog: Watchdog,
  ): Promise<ApiError> {
    let body: string;
    try {
      body = await response.text();
    } catch (error) {
      this.#pacer.answered(ticket, { status: response.status, info });
      if (isAbort(watchdog)) throw watchdog.signal.reason;
      throw error;
    } finally {
      watchdog.finish();
    }
    const error = errorFromBody(response, body, info, attempts);
    this.#pacer.answered(ticket, {
      status: response.status,
      info,
      code: error.code,
      retryAfterSeconds: error.retryAfterSeconds,
    });
    return error;
  }

  #backoff(attempt: number): number {
    const base = this.#options.baseDelayMs ?? DEFAULTS.baseDelayMs;
    const cap = this.#options.maxDelayMs ?? DEFAULTS.maxDelayMs;
    return Math.random() * Math.min(cap, base * 2 ** (attempt - 1));
  }
}

/** 429 RATE_LIMITED and 503 are retried; a ban, and every other answer, are final. */
function isRetryable(error: ApiError | Error): boolean {
  if (!(error instanceof ApiError)) return true;
  if (error.status === 503) return true;
  return error.status === 429 && error.code !== 'API_KEY_TEMPORARILY_BANNED';
}

function errorFromBody(
  response: Response,
  body: string,
  info: RateLimitInfo | undefined,
  attempts: number,
): ApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const fields = typeof parsed === 'object' && parsed !== null ? parsed : {};
  const code = 'code' in fields ? fields.code : undefined;
  const message = 'message' in fields ? fields.message : undefined;
  if (isApiErrorCode(code)) {
    return new ApiError({
      code,
      status: response.status,
      message: typeof message === 'string' ? message : `${code} (${response.status})`,
      ...retryAfterOf(response),
      rateLimit: info,
      sent: true,
      attempts,
    });
  }
  return unexpected(response, `Unexpected answer ${response.status}: ${body.slice(0, 200)}`, {
    info,
    attempts,
  });
}

/** An answer's Retry-After: in seconds, and as the local time to come back at. */
function retryAfterOf(response: Response) {
  const now = Date.now();
  const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'), now);
  return {
    retryAfterSeconds,
    retryAt: retryAfterSeconds === undefined ? undefined : now + retryAfterSeconds * 1000,
  };
}

function unexpected(
  response: Response,
  message: string,
  extra: { info?: RateLimitInfo | undefined; attempts?: number } = {},
): ApiError {
  return new ApiError({
    code: UNEXPECTED_RESPONSE,
    status: response.status,
    message,
    ...retryAfterOf(response),
    rateLimit: extra.info,
    sent: true,
    attempts: extra.attempts ?? 1,
  });
}

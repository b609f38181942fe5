/**
 * The smoke suite: black-box checks of a running API (a deployed stage or `npm start`) over
 * HTTP(S), by its base addresses (v1's, ending in /v1, and v2's) and one API key (and, when
 * given, a key that may only read). Read-only unless given a pending order to cancel. About
 * twenty requests, fourteen of them counted against the key's limits; five more with a read-only
 * key, against its own. A check that needs orders the stage does not hold (a new stage's, empty,
 * or of one page) says what it could not check and does not fail the suite.
 */
import { methodsByPath, ROUTES } from '../lib/api/routes.ts';
import { WWW_AUTHENTICATE } from '../lib/api/gateway-responses.ts';
import { generateApiKey } from '../lib/keys/api-key.ts';

export interface SmokeOptions {
  /** Base address, e.g. `https://abc123.execute-api.eu-west-1.amazonaws.com/v1`. */
  readonly baseUrl: string;
  /** v2's base address (`…/v2`); without it v2's checks are skipped. */
  readonly v2BaseUrl?: string;
  readonly apiKey: string;
  /** A key that may only read: checked to read, and to be refused a cancel (403). */
  readonly readOnlyKey?: string;
  /** Id of a pending order: only then is an order really cancelled. */
  readonly pendingOrder?: bigint;
  /** Time allowed per request. */
  readonly timeoutMs: number;
}

/**
 * `skip`: a check that could not run because one it depends on failed (the suite fails);
 * `unchecked`: one the stage's orders give nothing to check (too few of them: the suite passes).
 */
export type Outcome = 'ok' | 'fail' | 'skip' | 'unchecked';

export interface CheckResult {
  readonly name: string;
  readonly outcome: Outcome;
  /** Why it failed, was skipped or could not check. */
  readonly reason?: string;
}

/** A check's verdict: thrown to fail a check with a reason. */
class CheckFailure extends Error {}

/** A check that cannot run because one it depends on failed. */
class Skip extends Error {}

/** A check the stage's orders give nothing to check (an empty stage's, or one of a page). */
class Unchecked extends Error {}

function expect(condition: unknown, reason: string): asserts condition {
  if (!condition) throw new CheckFailure(reason);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INTEGER = /^-?(0|[1-9]\d*)$/;

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

interface Order {
  readonly id: bigint;
  readonly status?: unknown;
}

/** The two operations' paths, from the route table. */
const LIST_PATH = ROUTES.find((r) => r.operationId === 'listOrders')!.path;
const ORDER_PATH = ROUTES.find((r) => r.operationId === 'cancelOrder')!.path;
const orderPath = (id: string) => ORDER_PATH.replace(/\{\w+\}/, encodeURIComponent(id));

/** JSON.parse of an answer whose `id` and `petId` are read exact; `inexact` gets those that are not. */
function parseExact(text: string, inexact: string[]): unknown {
  const reviver = (key: string, value: unknown, context?: { source?: string }): unknown => {
    if ((key === 'id' || key === 'petId') && typeof value === 'number') {
      const source = context?.source ?? '';
      if (!INTEGER.test(source)) {
        inexact.push(`${key} ${source}`);
        return value;
      }
      const exact = BigInt(source);
      if (exact < INT64_MIN || exact > INT64_MAX) inexact.push(`${key} ${source}`);
      return exact;
    }
    return value;
  };
  try {
    return JSON.parse(text, reviver);
  } catch (error) {
    throw new CheckFailure(`the body is not JSON (${(error as Error).message})`);
  }
}

/**
 * Orders that are objects with an integer id, sorted by id (or, with a ship-date range, by ship
 * date, then id).
 */
function expectSortedOrders(body: unknown[], order: 'id' | 'shipDate' = 'id'): Order[] {
  body.forEach((item: unknown, i) => {
    expect(
      typeof item === 'object' && item !== null && typeof (item as Order).id === 'bigint',
      `item ${i} has no integer id`,
    );
  });
  const orders = body as Order[];
  const at = (o: Order) => {
    const shipDate = (o as { shipDate?: unknown }).shipDate;
    return typeof shipDate === 'string' ? Date.parse(shipDate) : NaN;
  };
  for (let i = 1; i < orders.length; i++) {
    const [a, b] = [orders[i - 1]!, orders[i]!];
    const before = order === 'id' ? a.id < b.id : at(a) < at(b) || (at(a) === at(b) && a.id < b.id);
    expect(before, `not sorted by ${order}: ${a.id} before ${b.id}`);
  }
  return orders;
}

/** A v2 page: `{"orders": [...], "nextPageToken"?, "pageSize"}`, its orders sorted, ids exact. */
export function parsePage(
  text: string,
  order: 'id' | 'shipDate' = 'id',
): {
  orders: Order[];
  nextPageToken?: string;
  pageSize: number;
} {
  const inexact: string[] = [];
  const body = parseExact(text, inexact) as {
    orders?: unknown;
    nextPageToken?: unknown;
    pageSize?: unknown;
  };
  expect(
    typeof body === 'object' && body !== null && Array.isArray(body.orders),
    'the body is not a page',
  );
  expect(inexact.length === 0, `not int64 integers: ${inexact.slice(0, 3).join(', ')}`);
  expect(
    body.nextPageToken === undefined || typeof body.nextPageToken === 'string',
    'nextPageToken is not a string',
  );
  expect(Number.isInteger(body.pageSize), 'pageSize is not an integer');
  return {
    orders: expectSortedOrders(body.orders as unknown[], order),
    ...(typeof body.nextPageToken === 'string' ? { nextPageToken: body.nextPageToken } : {}),
    pageSize: body.pageSize as number,
  };
}

/**
 * Parses a list body with int64 ids exact: `id` and `petId` are read from their source text
 * (JSON.parse source text access, Node 24), never through a JS number.
 */
export function parseOrders(text: string): Order[] {
  const inexact: string[] = [];
  const body = parseExact(text, inexact);
  expect(Array.isArray(body), 'the body is not a JSON array');
  expect(inexact.length === 0, `not int64 integers: ${inexact.slice(0, 3).join(', ')}`);
  return expectSortedOrders(body);
}

/** An id no listed order has: above the largest, or the first free one from 1 up. */
export function absentId(orders: readonly Order[]): bigint {
  const ids = new Set(orders.map((o) => o.id));
  const largest = orders.at(-1)?.id ?? 0n;
  if (largest < INT64_MAX) return largest < 0n ? 1n : largest + 1n;
  let id = 1n;
  while (ids.has(id)) id += 1n;
  return id;
}

function expectError(answer: Answer, status: number, code: string): void {
  expect(answer.status === status, `status ${answer.status}, expected ${status}`);
  const type = answer.headers.get('content-type') ?? '';
  expect(/^application\/json\b/i.test(type), `Content-Type ${JSON.stringify(type)}`);
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    throw new CheckFailure(`the body is not JSON: ${JSON.stringify(answer.text.slice(0, 80))}`);
  }
  const error = body as { code?: unknown; message?: unknown; status?: unknown };
  expect(typeof body === 'object' && body !== null, 'the body is not an Error object');
  expect(error.code === code, `code ${JSON.stringify(error.code)}, expected ${code}`);
  expect(typeof error.message === 'string' && error.message !== '', 'the Error has no message');
  expect(error.status === status, `body status ${JSON.stringify(error.status)} ≠ ${status}`);
}

function expectHeader(answer: Answer, name: string, expected: string): void {
  const actual = answer.headers.get(name);
  expect(
    actual === expected,
    `${name} ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`,
  );
}

function expectRateLimitHeaders(answer: Answer): void {
  const integer = (name: string): bigint => {
    const value = answer.headers.get(name);
    expect(value !== null && /^\d+$/.test(value), `${name} ${JSON.stringify(value)}`);
    return BigInt(value);
  };
  const limit = integer('X-RateLimit-Limit');
  const remaining = integer('X-RateLimit-Remaining');
  const reset = integer('X-RateLimit-Reset');
  expect(limit > 0n, `X-RateLimit-Limit ${limit}`);
  expect(remaining <= limit, `X-RateLimit-Remaining ${remaining} above the limit ${limit}`);
  const now = BigInt(Math.floor(Date.now() / 1000));
  expect(
    reset > now - 60n && reset <= now + 86_400n + 60n,
    `X-RateLimit-Reset ${reset} is not a time within the next day`,
  );
  for (const name of ['RateLimit-Policy', 'RateLimit']) {
    expect(answer.headers.get(name), `no ${name} header`);
  }
}

function expectAllow(answer: Answer, allowed: readonly string[]): void {
  const actual = (answer.headers.get('allow') ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)
    .sort();
  expect(
    actual.join(', ') === [...allowed].sort().join(', '),
    `Allow ${JSON.stringify(answer.headers.get('allow'))}, expected ${allowed.join(', ')}`,
  );
}

export async function runSmoke(
  options: SmokeOptions,
  report: (result: CheckResult) => void = () => {},
): Promise<CheckResult[]> {
  const base = options.baseUrl.replace(/\/+$/, '');
  const results: CheckResult[] = [];

  const request = async (
    method: string,
    path: string,
    authorization?: string,
    headers: Record<string, string> = {},
    origin: string = base,
  ): Promise<Answer> => {
    let response: Response;
    try {
      response = await fetch(`${origin}${path}`, {
        method,
        headers:
          authorization === undefined ? headers : { ...headers, Authorization: authorization },
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CheckFailure(
        `${method} ${path}: no answer (${cause?.code ?? cause?.message ?? (error as Error).message})`,
      );
    }
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const bearer = `Bearer ${options.apiKey}`;

  const check = async <T>(name: string, run: () => T | Promise<T>): Promise<T | undefined> => {
    let result: CheckResult;
    let value: T | undefined;
    try {
      value = await run();
      result = { name, outcome: 'ok' };
    } catch (error) {
      if (
        !(error instanceof CheckFailure) &&
        !(error instanceof Skip) &&
        !(error instanceof Unchecked)
      ) {
        throw error;
      }
      result = {
        name,
        outcome: error instanceof Skip ? 'skip' : error instanceof Unchecked ? 'unchecked' : 'fail',
        reason: error.message,
      };
    }
    results.push(result);
    report(result);
    return value;
  };

  // ── Authentication: refused before any function runs, with the challenge header ──────────
  const unauthorized = (answer: Answer) => {
    expectError(answer, 401, 'UNAUTHORIZED');
    expectHeader(answer, 'WWW-Authenticate', WWW_AUTHENTICATE);
  };
  await check('401 without Authorization', async () =>
    unauthorized(await request('GET', LIST_PATH)),
  );
  await check('401 with a well-formed unknown key', async () =>
    unauthorized(await request('GET', LIST_PATH, `Bearer ${generateApiKey()}`)),
  );
  await check('401 with a malformed Authorization header', async () =>
    unauthorized(await request('GET', LIST_PATH, 'Bearer not-a-key')),
  );

  // ── Routing: answered by API Gateway before authentication ───────────────────────────────
  await check('404 ROUTE_NOT_FOUND for an unknown path', async () =>
    expectError(await request('GET', '/store/no-such-path'), 404, 'ROUTE_NOT_FOUND'),
  );
  for (const [path, allowed] of methodsByPath()) {
    const method = ['GET', 'POST', 'DELETE', 'PUT'].find(
      (m) => !(allowed as string[]).includes(m),
    )!;
    const concrete = path.replace(/\{\w+\}/g, '1');
    await check(
      `405 METHOD_NOT_ALLOWED for ${method} ${concrete}, Allow: ${allowed.join(', ')}`,
      async () => {
        const answer = await request(method, concrete);
        expectError(answer, 405, 'METHOD_NOT_ALLOWED');
        expectAllow(answer, allowed);
      },
    );
  }

  // ── The list: sorted, exact, with the rate-limit headers ─────────────────────────────────
  let listed: Answer | undefined;
  const orders = await check('200 list: a JSON array sorted by id, int64 ids exact', async () => {
    listed = await request('GET', LIST_PATH, bearer);
    expect(listed.status === 200, `status ${listed.status}: ${listed.text.slice(0, 120)}`);
    const type = listed.headers.get('content-type') ?? '';
    expect(/^application\/json\b/i.test(type), `Content-Type ${JSON.stringify(type)}`);
    return parseOrders(listed.text);
  });
  await check('rate-limit headers on the list', () => {
    if (listed?.status !== 200) throw new Skip('the list failed');
    expectRateLimitHeaders(listed);
  });
  await check(
    "304 Not Modified for the list's ETag (or 200 if the list changed since)",
    async () => {
      if (listed?.status !== 200) throw new Skip('the list failed');
      const etag = listed.headers.get('etag');
      if (etag === null)
        throw new Skip('the list came without an ETag (a change was being written)');
      const answer = await request('GET', LIST_PATH, bearer, { 'If-None-Match': etag });
      if (answer.status === 200) {
        // Only a list that changed meanwhile may come whole: with another tag, or none.
        expect(answer.headers.get('etag') !== etag, `200 with the same ETag ${etag}`);
        return;
      }
      expect(answer.status === 304, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      expect(answer.text === '', `a 304 with a body of ${answer.text.length} characters`);
      expectHeader(answer, 'ETag', etag);
      expectRateLimitHeaders(answer);
    },
  );

  // ── Cancel: an absent id, a malformed id, and (only when asked) a real cancel ────────────
  await check('404 ORDER_NOT_FOUND cancelling an order that does not exist', async () => {
    if (!orders) throw new Skip('the list failed: no id known to be absent');
    const id = absentId(orders);
    const answer = await request('DELETE', orderPath(id.toString()), bearer);
    expectError(answer, 404, 'ORDER_NOT_FOUND');
    expectRateLimitHeaders(answer);
  });
  await check('400 INVALID_ORDER_ID for a malformed order id', async () =>
    expectError(
      await request('DELETE', orderPath('not-a-number'), bearer),
      400,
      'INVALID_ORDER_ID',
    ),
  );

  // ── v2: a page, the next one by its token, a refused query, a conditional page ───────────
  const v2 = options.v2BaseUrl?.replace(/\/+$/, '');
  const v2Request = (target: string, headers: Record<string, string> = {}) =>
    request('GET', target, bearer, headers, v2);
  let firstPage: Answer | undefined;
  const page = await check('v2: 200 a page of two orders, sorted, int64 ids exact', async () => {
    if (!v2) throw new Skip('no v2 base address');
    firstPage = await v2Request(`${LIST_PATH}?pageSize=2`);
    expect(firstPage.status === 200, `status ${firstPage.status}: ${firstPage.text.slice(0, 120)}`);
    const read = parsePage(firstPage.text);
    expect(read.orders.length <= 2, `${read.orders.length} orders on a page of 2`);
    expect(read.pageSize === 2, `pageSize ${read.pageSize}`);
    expectRateLimitHeaders(firstPage);
    return read;
  });
  await check("v2: the next page, at the Link header's address, after the first", async () => {
    if (!v2 || !page || !firstPage) throw new Skip('the first page failed');
    if (page.nextPageToken === undefined) {
      throw new Unchecked(
        `the stage holds ${page.orders.length} order${page.orders.length === 1 ? '' : 's'}: no next page to follow`,
      );
    }
    const link = /^<([^>]+)>; rel="next"$/.exec(firstPage.headers.get('link') ?? '');
    expect(link, `Link ${JSON.stringify(firstPage.headers.get('link'))}`);
    expect(link[1]!.includes(`pageToken=${page.nextPageToken}`), 'the Link is not the next page');
    // The Link's target as a client would follow it: resolved against the v2 base address (a
    // path-absolute reference, the stage in it, takes only its origin).
    const target = new URL(link[1]!, `${v2}/`).href;
    const next = await request('GET', target, bearer, {}, '');
    expect(next.status === 200, `status ${next.status}: ${next.text.slice(0, 120)}`);
    const read = parsePage(next.text);
    const last = page.orders.at(-1)?.id;
    expect(
      last === undefined || read.orders.every((o) => o.id > last),
      'the next page repeats an order of the first',
    );
  });
  // Each filter is served by an index of its own (docs/architecture.md, "The v2 list"): a page of
  // each, every order on it matching, shows that every index the stage has serves.
  const pet = orders?.find((o) => typeof (o as { petId?: unknown }).petId === 'bigint') as
    { petId: bigint } | undefined;
  const petId = pet?.petId ?? 1n;
  const month = { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };
  const dated = (o: Order) => {
    const shipDate = (o as { shipDate?: unknown }).shipDate;
    const at = typeof shipDate === 'string' ? Date.parse(shipDate) : NaN;
    return at >= Date.parse(month.from) && at < Date.parse(month.to);
  };
  const filters: readonly [string, string, (o: Order) => boolean][] = [
    ['status=pending', 'status=pending', (o) => o.status === 'pending'],
    ['a ship-date range', `shipDateFrom=${month.from}&shipDateTo=${month.to}`, dated],
    [
      'status=pending with a ship-date range',
      `status=pending&shipDateFrom=${month.from}&shipDateTo=${month.to}`,
      (o) => o.status === 'pending' && dated(o),
    ],
    [`petId=${petId}`, `petId=${petId}`, (o) => (o as { petId?: unknown }).petId === petId],
    [
      `petId=${petId} with a ship-date range`,
      `petId=${petId}&shipDateFrom=${month.from}&shipDateTo=${month.to}`,
      (o) => (o as { petId?: unknown }).petId === petId && dated(o),
    ],
  ];
  for (const [name, query, matches] of filters) {
    await check(`v2: 200 a page of ${name}, every order matching`, async () => {
      if (!v2) throw new Skip('no v2 base address');
      const answer = await v2Request(`${LIST_PATH}?${query}&pageSize=5`);
      expect(answer.status === 200, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      const read = parsePage(answer.text, name.includes('ship-date') ? 'shipDate' : 'id');
      const wrong = read.orders.find((o) => !matches(o));
      expect(!wrong, `order ${wrong?.id} does not match ${query}`);
    });
  }
  await check('v2: 400 INVALID_PARAMETER for an unknown status', async () => {
    if (!v2) throw new Skip('no v2 base address');
    expectError(await v2Request(`${LIST_PATH}?status=lost`), 400, 'INVALID_PARAMETER');
  });
  await check(
    "v2: 304 Not Modified for a page's ETag (or 200 if the store changed since)",
    async () => {
      if (!v2 || !firstPage || firstPage.status !== 200) throw new Skip('the first page failed');
      const etag = firstPage.headers.get('etag');
      if (etag === null)
        throw new Skip('the page came without an ETag (a change was being written)');
      const answer = await v2Request(`${LIST_PATH}?pageSize=2`, { 'If-None-Match': etag });
      if (answer.status === 200) {
        expect(answer.headers.get('etag') !== etag, `200 with the same ETag ${etag}`);
        return;
      }
      expect(answer.status === 304, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      expectHeader(answer, 'ETag', etag);
    },
  );

  // ── A key that may only read: it reads, and is refused a cancel, which changes nothing ────
  const readOnly = options.readOnlyKey;
  if (readOnly !== undefined) {
    const reader = `Bearer ${readOnly}`;
    const readerList = await check('read-only key: 200 list', async () => {
      const answer = await request('GET', LIST_PATH, reader);
      expect(answer.status === 200, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      parseOrders(answer.text);
      return answer;
    });
    await check(
      'read-only key: 403 PERMISSION_DENIED cancelling, in v1 and v2, with the rate-limit headers',
      async () => {
        if (!orders) throw new Skip('the list failed: no id known to be absent');
        // An id no order has: were the refusal missing, the cancel would still change nothing.
        const path = orderPath(absentId(orders).toString());
        for (const origin of v2 ? [base, v2] : [base]) {
          const answer = await request('DELETE', path, reader, {}, origin);
          expectError(answer, 403, 'PERMISSION_DENIED');
          expectRateLimitHeaders(answer);
        }
      },
    );
    await check(
      "read-only key: 304 for its list's ETag after its 403s (or 200 if the list changed since)",
      async () => {
        if (!readerList) throw new Skip('its list failed');
        const etag = readerList.headers.get('etag');
        if (etag === null) throw new Skip('its list came without an ETag');
        const answer = await request('GET', LIST_PATH, reader, { 'If-None-Match': etag });
        if (answer.status === 200) {
          expect(answer.headers.get('etag') !== etag, `200 with the same ETag ${etag}`);
          return;
        }
        expect(answer.status === 304, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      },
    );
    await check('read-only key: v2: 200 a page', async () => {
      if (!v2) throw new Skip('no v2 base address');
      const answer = await request('GET', `${LIST_PATH}?pageSize=2`, reader, {}, v2);
      expect(answer.status === 200, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      parsePage(answer.text);
    });
  }

  const pending = options.pendingOrder;
  if (pending !== undefined) {
    const cancelled = await check(`204 cancelling pending order ${pending}`, async () => {
      if (!orders) throw new Skip('the list failed: cannot tell the order is pending');
      const order = orders.find((o) => o.id === pending);
      expect(order, `order ${pending} is not in the list`);
      expect(
        order.status === 'pending',
        `order ${pending} is ${JSON.stringify(order.status)}, not pending: nothing was cancelled`,
      );
      const answer = await request('DELETE', orderPath(pending.toString()), bearer);
      expect(answer.status === 204, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
      expect(answer.text === '', 'a 204 with a body');
      return true;
    });
    await check(`204 cancelling order ${pending} again (idempotent)`, async () => {
      if (!cancelled) throw new Skip('the first cancel failed');
      const answer = await request('DELETE', orderPath(pending.toString()), bearer);
      expect(answer.status === 204, `status ${answer.status}: ${answer.text.slice(0, 120)}`);
    });
  }
  return results;
}

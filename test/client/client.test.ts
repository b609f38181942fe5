/**
 * The client against a small scripted HTTP server: retries and Retry-After, the time budget,
 * bans as final, abort and timeout, compressed lists, and pacing of concurrent calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  isApiError,
  OrderListParseError,
  StoreOrdersClient,
  type StoreOrdersClientOptions,
} from '../../client/src/index.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

interface Scripted {
  readonly url: string;
  /** Requests received so far (method and path). */
  readonly requests: string[];
  readonly server: Server;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(resolve);
        }),
    ),
  );
});

/** A server answering request n (0-based) with `handler`. */
async function scripted(handler: Handler): Promise<Scripted> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res, requests.length - 1);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, requests, server };
}

function json(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function error(code: string, status: number) {
  return { code, message: `${code} from the test server`, status };
}

function client(url: string, options: Partial<StoreOrdersClientOptions> = {}) {
  return new StoreOrdersClient({ baseUrl: url, apiKey: 'sok_test', baseDelayMs: 10, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

const LIST = '[{"id":1,"status":"pending"},{"id":9223372036854775807,"petId":9007199254740993}]';
const ORDERS = [
  { id: 1n, status: 'pending' },
  { id: 9223372036854775807n, petId: 9007199254740993n },
];

describe('requests', () => {
  it('sends the key as a bearer token, the id digits exact, and accepts 204', async () => {
    let authorization: string | undefined;
    const api = await scripted((req, res) => {
      authorization = req.headers.authorization;
      res.writeHead(204).end();
    });
    await client(api.url).cancelOrder(9223372036854775807n);
    await client(api.url).cancelOrder('-0009007199254740993');
    expect(api.requests).toEqual([
      'DELETE /v1/store/orders/9223372036854775807',
      'DELETE /v1/store/orders/-9007199254740993',
    ]);
    expect(authorization).toBe('Bearer sok_test');
  });

  it.each(['1e3', '1.0', '+1', ' 1', '', '0x10', '9223372036854775808', '-9223372036854775809'])(
    'refuses the order id %j without sending anything',
    async (id) => {
      const api = await scripted((_req, res) => res.writeHead(204).end());
      const e = await rejection(client(api.url).cancelOrder(id));
      expect(e).toBeInstanceOf(ApiError);
      expect(e).toMatchObject({ code: 'INVALID_ORDER_ID', status: 400, sent: false, attempts: 0 });
      expect(api.requests).toEqual([]);
    },
  );

  it('refuses a bigint outside int64 and a JS number', async () => {
    const api = await scripted((_req, res) => res.writeHead(204).end());
    await expect(client(api.url).cancelOrder(2n ** 63n)).rejects.toMatchObject({
      code: 'INVALID_ORDER_ID',
    });
    await expect(client(api.url).cancelOrder(1 as unknown as bigint)).rejects.toThrow(TypeError);
    expect(api.requests).toEqual([]);
  });

  it('types error answers by their code, with the rate-limit headers of the answer', async () => {
    const api = await scripted((_req, res) =>
      json(res, 409, error('ORDER_ALREADY_SHIPPED', 409), {
        'x-ratelimit-limit': '60',
        'x-ratelimit-remaining': '41',
        'x-ratelimit-reset': '1800000000',
        'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
        ratelimit: '"minute";r=41;t=17, "day";r=900;t=5000',
      }),
    );
    const c = client(api.url);
    const e = await rejection(c.cancelOrder(3n));
    expect(isApiError(e, 'ORDER_ALREADY_SHIPPED')).toBe(true);
    expect(e).toMatchObject({
      status: 409,
      sent: true,
      attempts: 1,
      message: 'ORDER_ALREADY_SHIPPED from the test server',
      rateLimit: {
        limit: 60,
        remaining: 41,
        reset: 1800000000,
        policy: [
          { name: 'minute', quota: 60, windowSeconds: 60 },
          { name: 'day', quota: 1000, windowSeconds: 86400 },
        ],
        windows: [
          { name: 'minute', remaining: 41, resetSeconds: 17 },
          { name: 'day', remaining: 900, resetSeconds: 5000 },
        ],
      },
    });
    expect(c.rateLimit?.remaining).toBe(41);
    expect(api.requests).toHaveLength(1); // a 409 is final
  });

  it('reports an answer that is not the API error JSON as UNEXPECTED_RESPONSE', async () => {
    const api = await scripted((_req, res) => res.writeHead(502).end('<html>Bad gateway</html>'));
    await expect(client(api.url).cancelOrder(1n)).rejects.toMatchObject({
      code: 'UNEXPECTED_RESPONSE',
      status: 502,
      message: expect.stringContaining('<html>Bad gateway</html>'),
    });
  });
});

describe('retries', () => {
  it('retries a 503 after its Retry-After, then succeeds', async () => {
    const api = await scripted((_req, res, n) =>
      n === 0
        ? json(res, 503, error('SERVICE_UNAVAILABLE', 503), {
            'retry-after': '1',
            'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
          })
        : res.writeHead(200, { 'content-type': 'application/json' }).end(LIST),
    );
    const c = client(api.url);
    const started = Date.now();
    expect(await c.listAllOrders()).toEqual(ORDERS);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(api.requests).toHaveLength(2);
    // A 503 whose counts are unknown carries only the policy.
    expect(c.rateLimit).toMatchObject({ status: 503, remaining: undefined, limit: undefined });
    expect(c.rateLimit?.policy).toHaveLength(2);
  });

  it('gives up after maxAttempts, with the last error', async () => {
    const api = await scripted((_req, res) =>
      json(res, 503, error('SERVICE_UNAVAILABLE', 503), { 'retry-after': '0' }),
    );
    const e = await rejection(client(api.url, { maxAttempts: 3 }).cancelOrder(1n));
    expect(e).toMatchObject({ code: 'SERVICE_UNAVAILABLE', attempts: 3, sent: true });
    expect(api.requests).toHaveLength(3);
  });

  it('does not retry when Retry-After ends beyond the time budget', async () => {
    const api = await scripted((_req, res) =>
      json(res, 503, error('SERVICE_UNAVAILABLE', 503), { 'retry-after': '120' }),
    );
    const started = Date.now();
    const e = await rejection(client(api.url, { budgetMs: 5_000 }).cancelOrder(1n));
    expect(e).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfterSeconds: 120, attempts: 1 });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('retries network failures (a closed port) and then gives up', async () => {
    const api = await scripted(() => undefined);
    await new Promise((resolve) => api.server.close(resolve));
    const e = await rejection(client(api.url, { maxAttempts: 2 }).cancelOrder(1n));
    expect(e).toBeInstanceOf(TypeError);
  });

  it('waits out a 429 RATE_LIMITED for every call of the client, then retries once', async () => {
    const api = await scripted((_req, res, n) =>
      n === 0
        ? json(res, 429, error('RATE_LIMITED', 429), {
            'retry-after': '1',
            'x-ratelimit-limit': '60',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 30),
          })
        : res.writeHead(204).end(),
    );
    const c = client(api.url);
    const first = c.cancelOrder(1n);
    // Once the 429 is in, the client is blocked until its Retry-After.
    await expect.poll(() => c.pacing.blockedUntil ?? 0).toBeGreaterThan(Date.now());
    const second = c.cancelOrder(2n); // blocked as well: not sent before Retry-After
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.requests).toHaveLength(1);
    await Promise.all([first, second]);
    expect(api.requests).toHaveLength(3);
  });

  it('treats a ban as final, and then sends nothing until it ends', async () => {
    const api = await scripted((_req, res) =>
      json(res, 429, error('API_KEY_TEMPORARILY_BANNED', 429), {
        'retry-after': '897',
        'x-ratelimit-remaining': '0',
      }),
    );
    const c = client(api.url);
    const e = await rejection(c.listAllOrders());
    expect(e).toMatchObject({
      code: 'API_KEY_TEMPORARILY_BANNED',
      retryAfterSeconds: 897,
      sent: true,
      attempts: 1,
    });
    // A call during the ban waits its budget (nothing can be sent), then says when to come back.
    const started = Date.now();
    const later = await rejection(c.cancelOrder(1n, { budgetMs: 300 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(later).toMatchObject({ code: 'API_KEY_TEMPORARILY_BANNED', sent: false, attempts: 0 });
    expect((later as ApiError).retryAfterSeconds).toBeGreaterThan(890);
    expect((later as ApiError).retryAt).toBe(c.pacing.bannedUntil);
    expect(api.requests).toHaveLength(1);
    expect(c.pacing.bannedUntil).toBeGreaterThan(Date.now() + 890_000);
  });

  it('cannot be spun: a retry loop around a call the rate limit blocks waits out each budget', async () => {
    const api = await scripted((_req, res) =>
      json(res, 429, error('RATE_LIMITED', 429), { 'retry-after': '600' }),
    );
    const c = client(api.url, { budgetMs: 200 });
    let calls = 0;
    const until = Date.now() + 1_500;
    while (Date.now() < until) {
      calls++;
      const e = await rejection(c.cancelOrder(1n));
      expect(e).toMatchObject({ code: 'RATE_LIMITED' });
      expect((e as ApiError).retryAt).toBeGreaterThan(Date.now() + 590_000);
    }
    // The first call was sent and refused at once; every other one waited its 200 ms unsent.
    expect(calls).toBeLessThanOrEqual(10);
    expect(api.requests).toHaveLength(1);
  });

  it('treats a RATE_LIMITED whose Retry-After ends beyond the budget as final, then waits unsent', async () => {
    const api = await scripted((_req, res) =>
      json(res, 429, error('RATE_LIMITED', 429), { 'retry-after': '900' }),
    );
    const c = client(api.url, { budgetMs: 200 });
    await expect(c.cancelOrder(1n)).rejects.toMatchObject({ code: 'RATE_LIMITED', sent: true });
    await expect(c.cancelOrder(1n)).rejects.toMatchObject({ code: 'RATE_LIMITED', sent: false });
    expect(api.requests).toHaveLength(1);
  });

  it('stops sending for the minute after maxRefusalsPerMinute refusals', async () => {
    const api = await scripted((_req, res) =>
      json(res, 429, error('RATE_LIMITED', 429), { 'retry-after': '0' }),
    );
    const c = client(api.url, { maxRefusalsPerMinute: 3, maxAttempts: 10, budgetMs: 2_000 });
    // Skip the last seconds of a minute, where the count would start again.
    if (Date.now() % 60_000 > 55_000) await new Promise((r) => setTimeout(r, 6_000));
    const e = await rejection(c.cancelOrder(1n));
    expect(e).toMatchObject({ code: 'RATE_LIMITED', sent: false });
    expect(api.requests).toHaveLength(3);
  });
});

describe('abort and timeout', () => {
  it('aborts a call waiting for its answer', async () => {
    const api = await scripted(() => undefined); // never answers
    const controller = new AbortController();
    const call = client(api.url).cancelOrder(1n, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const e = await rejection(call);
    expect(e).toBeInstanceOf(DOMException);
    expect((e as DOMException).name).toBe('AbortError');
  });

  it('aborts a call waiting out a Retry-After, at once', async () => {
    const api = await scripted((_req, res) =>
      json(res, 503, error('SERVICE_UNAVAILABLE', 503), { 'retry-after': '5' }),
    );
    const controller = new AbortController();
    const started = Date.now();
    const call = client(api.url).cancelOrder(1n, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 200);
    await expect(call).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('times out when the server does not answer (TimeoutError, not retried)', async () => {
    const api = await scripted(() => undefined);
    const e = await rejection(
      client(api.url, { timeoutMs: 5_000 }).listAllOrders({ timeoutMs: 100 }),
    );
    expect((e as DOMException).name).toBe('TimeoutError');
    expect(api.requests).toHaveLength(1);
  });

  it('times out when the list stalls, after yielding the orders already read', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[{"id":1},');
    });
    const seen: bigint[] = [];
    const c = client(api.url, { timeoutMs: 150 });
    const e = await rejection(
      (async () => {
        for await (const order of c.listOrders()) {
          seen.push(order.id);
          // A slow consumer is not the server's silence.
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      })(),
    );
    expect(seen).toEqual([1n]);
    expect((e as DOMException).name).toBe('TimeoutError');
  });

  it('stops the download when the caller breaks out of the loop', async () => {
    let closed = false;
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[{"id":1},{"id":2},');
      res.on('close', () => (closed = true));
    });
    for await (const order of client(api.url).listOrders()) {
      expect(order.id).toBe(1n);
      break;
    }
    await expect.poll(() => closed).toBe(true);
  });

  it.each([
    ['reset', (socket: Socket) => socket.resetAndDestroy()],
    ['destroyed', (socket: Socket) => socket.destroy()],
  ])(
    'reports a list whose connection was %s mid-body as a list cut short (OrderListParseError)',
    async (_, cut) => {
      const api = await scripted((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[{"id":1},{"id":2},');
        setTimeout(() => cut(res.socket!), 50);
      });
      const seen: bigint[] = [];
      const e = await rejection(
        (async () => {
          for await (const order of client(api.url).listOrders()) seen.push(order.id);
        })(),
      );
      expect(seen).toEqual([1n, 2n]);
      expect(e).toBeInstanceOf(OrderListParseError);
      expect((e as Error).message).toMatch(/connection was cut after 2 orders/);
      expect((e as Error).cause).toBeInstanceOf(Error);
    },
  );

  it('reports a list cut short', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[{"id":1},{"id":2');
    });
    const e = await rejection(client(api.url).listAllOrders());
    expect(e).toBeInstanceOf(OrderListParseError);
    expect((e as Error).message).toMatch(/ended early, after 1 order/);
  });
});

describe('compressed lists', () => {
  const encoders: Record<string, (body: Buffer) => Buffer> = {
    gzip: gzipSync,
    br: brotliCompressSync,
    zstd: zstdCompressSync,
  };
  it.each(Object.keys(encoders))('reads a %s-encoded list', async (encoding) => {
    const body = encoders[encoding]!(Buffer.from(LIST));
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
      // In small pieces, as a stream would send them.
      for (let i = 0; i < body.length; i += 7) res.write(body.subarray(i, i + 7));
      res.end();
    });
    const c = client(api.url, { headers: { 'Accept-Encoding': encoding } });
    expect(await c.listAllOrders()).toEqual(ORDERS);
  });
});

describe('pacing of concurrent calls', () => {
  /**
   * A server with a fixed-window limit of `limit`, that records the most requests in flight;
   * each request is answered `answerMs` after it arrived.
   */
  async function limited(limit: number, windowSeconds = 30, answerMs = 20) {
    let admitted = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    let windowEnd = Date.now() + windowSeconds * 1000;
    const refusals: number[] = [];
    const api = await scripted((_req, res, n) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        const now = Date.now();
        if (now >= windowEnd) {
          admitted = 0;
          windowEnd = now + windowSeconds * 1000;
        }
        const ok = admitted < limit;
        if (ok) admitted++;
        else refusals.push(n);
        const resetIn = Math.ceil((windowEnd - now) / 1000);
        const headers = {
          'x-ratelimit-limit': String(limit),
          'x-ratelimit-remaining': String(limit - admitted),
          'x-ratelimit-reset': String(Math.ceil(windowEnd / 1000)),
          ratelimit: `"minute";r=${limit - admitted};t=${resetIn}`,
          ...(ok ? {} : { 'retry-after': String(resetIn) }),
        };
        if (ok) res.writeHead(204, headers).end();
        else json(res, 429, error('RATE_LIMITED', 429), headers);
      }, answerMs);
    });
    return { api, stats: () => ({ admitted, maxInFlight, refusals: refusals.length }) };
  }

  it('sends one request first, then no more than remaining, and refuses the rest unsent', async () => {
    // Answers that take 250 ms: the concurrent requests all arrive while the first of them is
    // held, also when a busy machine delays some by tens of milliseconds (with 20 ms, a CPU hog
    // beside the run made them overlap 4 at a time instead of 7).
    const { api, stats } = await limited(8, 30, 250);
    const c = client(api.url, { budgetMs: 2_000 });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => c.cancelOrder(BigInt(i))),
    );
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    const notSent = results.flatMap((r) =>
      r.status === 'rejected' && isApiError(r.reason, 'RATE_LIMITED') && !r.reason.sent
        ? [r.reason]
        : [],
    );
    expect(fulfilled).toHaveLength(8);
    expect(notSent).toHaveLength(12);
    expect(notSent[0]?.retryAfterSeconds).toBeGreaterThan(20);
    expect(stats()).toEqual({ admitted: 8, maxInFlight: 7, refusals: 0 });
    expect(api.requests).toHaveLength(8);
    expect(c.rateLimit?.remaining).toBe(0);
    expect(c.pacing).toMatchObject({ inFlight: 0, available: 0 });
  });

  it('lets waiting calls through when the window resets within their budget', async () => {
    const { api, stats } = await limited(3, 1);
    const c = client(api.url, { budgetMs: 5_000 });
    const results = await Promise.allSettled(
      Array.from({ length: 7 }, (_, i) => c.cancelOrder(BigInt(i))),
    );
    // 3 at once, 3 after the reset, the last after the next one: none refused.
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(stats()).toMatchObject({ refusals: 0 });
    expect(api.requests).toHaveLength(7);
  });
});

describe('the kept list', () => {
  const TAG = 'W/"tag-one"';

  it('keeps nothing from a list without an ETag (a change was being written), and asks in full next time', async () => {
    const api = await scripted((req, res, n) => {
      expect(req.headers['if-none-match']).toBeUndefined();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(n === 0 ? LIST : '[]');
    });
    const c = client(api.url);
    expect(await c.getOrders()).toEqual({ orders: ORDERS, notModified: false, etag: undefined });
    expect(await c.getOrders()).toEqual({ orders: [], notModified: false, etag: undefined });
  });

  it('sends the kept tag, takes a 304 as the kept list, and replaces it on the next 200', async () => {
    const api = await scripted((req, res, n) => {
      if (n === 1) {
        expect(req.headers['if-none-match']).toBe(TAG);
        res.writeHead(304, { etag: TAG });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', etag: n === 0 ? TAG : 'W/"two"' });
      res.end(n === 0 ? LIST : '[]');
    });
    const c = client(api.url);
    const first = await c.getOrders();
    const second = await c.getOrders();
    expect(second).toEqual({ orders: ORDERS, notModified: true, etag: TAG });
    expect(second.orders).toBe(first.orders);
    expect(Object.isFrozen(second.orders)).toBe(true);
    expect(Object.isFrozen(second.orders[0])).toBe(true);
    const third = await c.getOrders();
    expect(third).toEqual({ orders: [], notModified: false, etag: 'W/"two"' });
  });

  it('reports a 304 it did not ask for (the caller gave If-None-Match, nothing kept) as UNEXPECTED_RESPONSE', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(304, { etag: TAG });
      res.end();
    });
    const failure = await rejection(
      client(api.url).getOrders({ headers: { 'If-None-Match': TAG } }),
    );
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ code: 'UNEXPECTED_RESPONSE', status: 304 });
  });

  it('hands out copies from listAllOrders, so the kept list cannot be changed by a caller', async () => {
    const api = await scripted((_req, res, n) => {
      if (n > 0) {
        res.writeHead(304, { etag: TAG });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', etag: TAG });
      res.end(LIST);
    });
    const c = client(api.url);
    const mine = await c.listAllOrders();
    mine.pop();
    expect(await c.listAllOrders()).toEqual(ORDERS);
  });
});

describe("v2's filtered pages", () => {
  /** Pages of the scripted store: `{"orders": [...], "nextPageToken"?, "pageSize"}`. */
  const page = (ids: string[], next?: string) =>
    `{"orders":[${ids.map((id) => `{"id":${id},"status":"pending"}`).join(',')}]${next ? `,"nextPageToken":"${next}"` : ''},"pageSize":2}`;

  it('walks a filter page by page at v2’s address, the query exact, ids exact', async () => {
    const api = await scripted((req, res) => {
      const url = new URL(req.url!, 'http://x');
      const token = url.searchParams.get('pageToken');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        token === null
          ? page(['1', '9007199254740993'], 'tok1')
          : token === 'tok1'
            ? page([], 'tok2')
            : page(['9223372036854775807']),
      );
    });
    const ids: bigint[] = [];
    for await (const order of client(api.url).orders(
      { status: ['pending', 'cancelled'], petId: 9007199254740995n, complete: false },
      { pageSize: 2 },
    )) {
      ids.push(order.id);
    }
    expect(ids).toEqual([1n, 9007199254740993n, 9223372036854775807n]);
    const query =
      'status=pending&status=cancelled&petId=9007199254740995&complete=false&pageSize=2';
    expect(api.requests).toEqual([
      `GET /v2/store/orders?${query}`,
      `GET /v2/store/orders?${query}&pageToken=tok1`,
      `GET /v2/store/orders?${query}&pageToken=tok2`,
    ]);
  });

  it('sends each page’s kept tag, and takes a 304 as the kept page', async () => {
    const api = await scripted((req, res) => {
      if (req.headers['if-none-match'] === 'W/"p1"') {
        res.writeHead(304, { etag: 'W/"p1"' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', etag: 'W/"p1"' });
      res.end(page(['1', '2']));
    });
    const c = client(api.url);
    const first = await c.getOrderPage({ status: 'pending' });
    const again = await c.getOrderPage({ status: 'pending' });
    expect(first).toMatchObject({ notModified: false, etag: 'W/"p1"', pageSize: 2 });
    expect(again).toMatchObject({ notModified: true, etag: 'W/"p1"' });
    expect(again.orders).toBe(first.orders);
    // Another filter is another page: asked in full.
    await c.getOrderPage({ status: 'shipped' });
    expect(api.requests.at(-1)).toBe('GET /v2/store/orders?status=shipped');
  });

  it('keeps the 1,000 pages asked most recently: a 304 counts as asked', async () => {
    // Each page's tag is its pet's; a request with the tag gets 304.
    const api = await scripted((req, res) => {
      const pet = new URL(req.url!, 'http://x').searchParams.get('petId');
      const tag = `W/"${pet}"`;
      if (req.headers['if-none-match'] === tag) {
        res.writeHead(304, { etag: tag });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', etag: tag });
      res.end(page(['1']));
    });
    const c = client(api.url);
    const ask = (pet: number) => c.getOrderPage({ petId: BigInt(pet) });
    for (let pet = 0; pet < 1_000; pet++) expect((await ask(pet)).notModified).toBe(false);
    // Pet 0's page, the oldest kept, is asked again (304), then a 1,001st page is kept: the
    // least recently asked, pet 1's, goes, not pet 0's.
    expect((await ask(0)).notModified).toBe(true);
    expect((await ask(1_000)).notModified).toBe(false);
    expect((await ask(0)).notModified).toBe(true);
    expect((await ask(1)).notModified).toBe(false);
  });

  it('refuses a filter the API would refuse for its type, before sending anything', async () => {
    const api = await scripted((_req, res) => json(res, 500, error('INTERNAL_ERROR', 500)));
    const c = client(api.url);
    for (const call of [
      () => c.getOrderPage({ status: 'lost' as 'pending' }),
      () => c.getOrderPage({ petId: '9223372036854775808' }),
      () => c.getOrderPage({}, { pageSize: 0 }),
      () => c.getOrderPage({ shipDateFrom: new Date(Number.NaN) }),
    ]) {
      expect(await rejection(call())).toBeInstanceOf(TypeError);
    }
    expect(api.requests).toEqual([]);
  });

  it('sends a page size above the most as asked (the API serves it as the most), and says so refusing 0', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(page([]));
    });
    const c = client(api.url);
    await c.getOrderPage({}, { pageSize: 500 });
    expect(api.requests).toEqual(['GET /v2/store/orders?pageSize=500']);
    const refusal = await rejection(c.getOrderPage({}, { pageSize: 0 }));
    expect(refusal).toBeInstanceOf(TypeError);
    expect((refusal as TypeError).message).toBe(
      'pageSize must be a whole number from 1 (one above 100 is served as 100)',
    );
  });

  it('types the API’s refusal of a query by its code', async () => {
    const api = await scripted((_req, res) => json(res, 400, error('INVALID_DATE_RANGE', 400)));
    const failure = await rejection(
      client(api.url).getOrderPage({
        shipDateFrom: '2026-12-05T00:00:00Z',
        shipDateTo: '2026-12-01T00:00:00Z',
      }),
    );
    expect(isApiError(failure, 'INVALID_DATE_RANGE')).toBe(true);
  });

  it('takes a v2BaseUrl as given, whatever its path, and refuses one that is not http(s) at once', async () => {
    const api = await scripted((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(page([]));
    });
    const origin = api.url.replace(/\/v1$/, '');
    const c = client(api.url, { v2BaseUrl: `${origin}/orders-beta/` });
    await c.getOrderPage({ status: 'pending' });
    expect(api.requests).toEqual(['GET /orders-beta/store/orders?status=pending']);
    expect(() => client(api.url, { v2BaseUrl: 'ftp://127.0.0.1/v2' })).toThrow(
      'v2BaseUrl must be an http(s) URL',
    );
  });

  it('needs v2’s address when the base address does not end in /v1', async () => {
    const c = new StoreOrdersClient({ baseUrl: 'http://127.0.0.1:1/api', apiKey: 'sok_test' });
    expect(await rejection(c.getOrderPage())).toBeInstanceOf(TypeError);
  });
});

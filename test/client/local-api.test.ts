/**
 * The client against `npm start` (local/start.ts): exact int64 ids, cancel and its typed
 * errors, abort and timeout, and a burst of 120 concurrent calls on a fresh free key that must
 * not get the key banned, where a naive burst does.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiError,
  isApiError,
  StoreOrdersClient,
  type Order,
  type StoreOrdersClientOptions,
} from '../../client/src/index.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { earlyInAMinute } from '../support/minute-window.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

const SEED = [
  { id: INT64_MIN, petId: 7, quantity: 1, status: 'pending' },
  { id: 1, petId: 101, quantity: 1, shipDate: '2026-11-20T09:00:00Z', complete: false },
  { id: 3, petId: 103, quantity: 1, complete: true, status: 'shipped' },
  { id: 9007199254740992n, petId: 9007199254740992n, quantity: 1, status: 'pending' },
  { id: 9007199254740993n, petId: 9007199254740995n, quantity: 1, status: 'pending' },
  { id: INT64_MAX, petId: INT64_MAX - 1n, quantity: 2, status: 'pending' },
];
/** The seed as the API lists it: status defaults to pending. */
const EXPECTED: Order[] = SEED.map((o) => ({
  ...o,
  id: BigInt(o.id),
  petId: BigInt(o.petId),
  status: o.status ?? 'pending',
}));

const keys = {
  pro: generateApiKey(),
  burst: generateApiKey(),
  naive: generateApiKey(),
};

let api: LocalApi;

function writeFile(name: string, text: string): string {
  const path = join(tempStateFile(), '..', name);
  writeFileSync(path, text);
  return path;
}

/** The seed file's JSON, int64 digits exact (bigints written as JSON numbers). */
function seedJson(): string {
  const value = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : String(v));
  const orders = SEED.map(
    (o) =>
      `{${Object.entries(o)
        .map(([k, v]) => `"${k}":${value(v)}`)
        .join(',')}}`,
  );
  return `[${orders.join(',\n')}]`;
}

beforeAll(async () => {
  api = await startLocalApi({
    args: [
      '--seed',
      writeFile('seed.json', seedJson()),
      '--keys',
      writeFile(
        'keys.json',
        JSON.stringify([
          { key: keys.pro, plan: 'pro' },
          { key: keys.burst, plan: 'free' },
          { key: keys.naive, plan: 'free' },
        ]),
      ),
    ],
  });
});
afterAll(async () => {
  await api?.stop();
});

function client(options: Partial<StoreOrdersClientOptions> = {}): StoreOrdersClient {
  return new StoreOrdersClient({ baseUrl: api.url, apiKey: keys.pro, ...options });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('listOrders', () => {
  it('lists every order, sorted, ids and petIds exact as bigint (2^53 + 1, int64 max and min)', async () => {
    const c = client();
    const seen: Order[] = [];
    for await (const order of c.listOrders()) seen.push(order);
    expect(seen).toEqual(EXPECTED);
    expect(seen.map((o) => o.id)).toContain(9007199254740993n);
    expect(seen.map((o) => o.id)).toContain(9223372036854775807n);
    expect(c.rateLimit).toMatchObject({ status: 200, limit: 300 });
    expect(c.rateLimit?.remaining).toBeLessThan(300);
    expect(c.rateLimit?.policy).toEqual([
      { name: 'minute', quota: 300, windowSeconds: 60 },
      { name: 'day', quota: 10000, windowSeconds: 86400 },
    ]);
  });

  it('reads the list when asked for gzip, br or zstd (whatever the API chooses)', async () => {
    const encodings: (string | null)[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      encodings.push(response.headers.get('content-encoding'));
      return response;
    };
    for (const encoding of ['gzip', 'br', 'zstd', 'zstd, br, gzip']) {
      const c = client({ fetch: recording, headers: { 'Accept-Encoding': encoding } });
      expect(await c.listAllOrders()).toEqual(EXPECTED);
    }
    // Until the API compresses, it answers identity (null); then one of the encodings asked.
    for (const encoding of encodings) expect([null, 'gzip', 'br', 'zstd']).toContain(encoding);
  });

  it('fails with the TimeoutError of its timeout, or the reason of its signal', async () => {
    const c = client();
    const timedOut = await rejection(c.listAllOrders({ timeoutMs: 1 }));
    expect((timedOut as DOMException).name).toBe('TimeoutError');
    const aborted = await rejection(c.listAllOrders({ signal: AbortSignal.abort() }));
    expect((aborted as DOMException).name).toBe('AbortError');
  });
});

describe("orders(filter): v2's filtered pages", () => {
  it('walks the pending orders page by page, in id order, ids exact', async () => {
    const listed: Order[] = [];
    for await (const order of client().orders({ status: 'pending' }, { pageSize: 2 })) {
      listed.push(order);
    }
    expect(listed).toEqual(EXPECTED.filter((o) => o.status === 'pending'));
  });

  it('finds a pet’s order by its exact int64 id, above 2^53', async () => {
    const listed: Order[] = [];
    for await (const order of client().orders({ petId: 9007199254740995n })) listed.push(order);
    expect(listed.map((o) => o.id)).toEqual([9007199254740993n]);
  });
});

describe('the kept list (If-None-Match)', () => {
  it('answers the second call from a 304: the flag set, the data identical, nothing downloaded, nothing counted', async () => {
    const sent: (string | null)[] = [];
    const statuses: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      sent.push(new Headers(init?.headers).get('if-none-match'));
      const response = await fetch(input, init);
      statuses.push(response.status);
      return response;
    };
    const c = client({ fetch: recording });
    const first = await c.getOrders();
    expect(first).toMatchObject({ notModified: false, orders: EXPECTED });
    expect(first.etag).toMatch(/^W\/"/);
    const remaining = c.rateLimit?.remaining;

    const second = await c.getOrders();
    expect(second.notModified).toBe(true);
    expect(second.orders).toEqual(first.orders);
    expect(second.orders).toBe(first.orders);
    expect(second.etag).toBe(first.etag);
    expect(sent).toEqual([null, first.etag]);
    expect(statuses).toEqual([200, 304]);
    // The 304 took nothing from the plan: the remaining count did not go down (it may go up by
    // one as the sliding window moves on between the two calls: the file's earlier requests on
    // this key weigh a little less each second, and a clean-clone CI run saw 293 → 294).
    expect(c.rateLimit?.status).toBe(304);
    expect(c.rateLimit?.remaining).toBeGreaterThanOrEqual(remaining ?? Infinity);
    // listAllOrders is conditional too, and hands out a copy of the kept list.
    const all = await c.listAllOrders();
    expect(all).toEqual(EXPECTED);
    expect(statuses.at(-1)).toBe(304);
  });

  it('gets the whole list again after a change, with a new tag', async () => {
    const c = client();
    const first = await c.getOrders();
    await c.cancelOrder(1n);
    const after = await c.getOrders();
    expect(after.notModified).toBe(false);
    expect(after.etag).not.toBe(first.etag);
    expect(after.orders.find((o) => o.id === 1n)?.status).toBe('cancelled');
    expect((await c.getOrders()).notModified).toBe(true);
  });

  it('sends no If-None-Match when told not to (per client, or per call)', async () => {
    const sent: (string | null)[] = [];
    const recording: typeof fetch = (input, init) => {
      sent.push(new Headers(init?.headers).get('if-none-match'));
      return fetch(input, init);
    };
    const off = client({ fetch: recording, conditional: false });
    await off.getOrders();
    expect((await off.getOrders()).notModified).toBe(false);
    const on = client({ fetch: recording });
    await on.getOrders();
    expect((await on.getOrders({ conditional: false })).notModified).toBe(false);
    expect(sent).toEqual([null, null, null, null]);
  });
});

describe('cancelOrder', () => {
  it('cancels the order whose id is above 2^53 — that one, not its neighbour — and again (idempotent)', async () => {
    const c = client();
    await c.cancelOrder('9007199254740993');
    await c.cancelOrder(9007199254740993n);
    await c.cancelOrder(INT64_MAX);
    const status = new Map((await c.listAllOrders()).map((o) => [o.id, o.status]));
    expect(status.get(9007199254740993n)).toBe('cancelled');
    expect(status.get(9007199254740992n)).toBe('pending');
    expect(status.get(INT64_MAX)).toBe('cancelled');
  });

  it.each([
    [424242n, 'ORDER_NOT_FOUND', 404],
    [3n, 'ORDER_ALREADY_SHIPPED', 409],
  ] as const)('%s: %s', async (id, code, status) => {
    const e = await rejection(client().cancelOrder(id));
    expect(isApiError(e, code)).toBe(true);
    expect(e).toMatchObject({ status, sent: true, attempts: 1 });
    expect((e as ApiError).rateLimit?.limit).toBe(300);
  });

  it('refuses a malformed id before sending, with the code the API gives it', async () => {
    const direct = await fetch(`${api.url}/store/orders/1e3`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${keys.pro}` },
    });
    expect(direct.status).toBe(400);
    expect(await direct.json()).toMatchObject({ code: 'INVALID_ORDER_ID' });
    const e = await rejection(client().cancelOrder('1e3'));
    expect(e).toMatchObject({ code: 'INVALID_ORDER_ID', status: 400, sent: false });
  });

  it('types a refused key as UNAUTHORIZED', async () => {
    const e = await rejection(client({ apiKey: generateApiKey() }).cancelOrder(1n));
    expect(e).toMatchObject({ code: 'UNAUTHORIZED', status: 401, sent: true });
  });
});

describe('a burst of 120 concurrent calls on a fresh free key (60 a minute)', () => {
  async function lastWord(key: string): Promise<{ status: number; code?: string }> {
    const response = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    const body = (await response.json()) as { code?: string };
    return { status: response.status, code: Array.isArray(body) ? undefined : body.code };
  }

  it(
    'does not get the client banned, and gets a naive burst banned',
    { timeout: 90_000 },
    async () => {
      await earlyInAMinute(15_000);

      // The client: one instance, a small budget so that calls that would have to wait for the
      // next minute fail at once, unsent.
      const statuses: number[] = [];
      const remainingOn503: (string | null)[] = [];
      const counting: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        if (response.status === 503)
          remainingOn503.push(response.headers.get('x-ratelimit-remaining'));
        return response;
      };
      const c = new StoreOrdersClient({
        baseUrl: api.url,
        apiKey: keys.burst,
        fetch: counting,
        budgetMs: 5_000,
      });
      const started = Date.now();
      const results = await Promise.allSettled(
        Array.from({ length: 120 }, () => c.listAllOrders()),
      );
      const clientMs = Date.now() - started;
      const listed = results.filter((r) => r.status === 'fulfilled').length;
      const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      const notSent = errors.filter((e) => isApiError(e, 'RATE_LIMITED') && !e.sent).length;
      const banned = errors.filter((e) => isApiError(e, 'API_KEY_TEMPORARILY_BANNED')).length;
      const unavailable = errors.filter((e) => isApiError(e, 'SERVICE_UNAVAILABLE')).length;
      const count = (status: number) => statuses.filter((s) => s === status).length;
      const clientAfter = await lastWord(keys.burst);

      // The naive client: 120 fetches at once, on a key of its own, inside one minute window
      // too (the client's part may have used up the first window's margin on a slow machine).
      await earlyInAMinute(15_000);
      const naive = await Promise.all(
        Array.from({ length: 120 }, async () => {
          const response = await fetch(`${api.url}/store/orders`, {
            headers: { Authorization: `Bearer ${keys.naive}` },
          });
          const body = (await response.json()) as { code?: string };
          return Array.isArray(body) ? String(response.status) : `${response.status} ${body.code}`;
        }),
      );
      const naiveAfter = await lastWord(keys.naive);
      const tally = (items: string[]) =>
        Object.fromEntries(
          [...new Set(items)].map((k) => [k, items.filter((i) => i === k).length]),
        );

      console.log(
        JSON.stringify(
          {
            client: {
              calls: 120,
              requestsSent: statuses.length,
              answers: tally(statuses.map(String)),
              '429s': count(429),
              listed,
              failedUnsent: notSent,
              failed503: unavailable,
              remainingOn503,
              otherErrors: errors.length - notSent - unavailable,
              ms: clientMs,
              afterwards: clientAfter,
            },
            naive: {
              requestsSent: naive.length,
              answers: tally(naive),
              afterwards: naiveAfter,
            },
          },
          null,
          2,
        ),
      );

      // The client: no refusals it could have avoided, no ban, every call accounted for. Under
      // load the local API may answer 503 (its limiter store timed out): such requests are not
      // counted, and a retry that the key's remaining count cannot cover fails unsent.
      expect(banned).toBe(0);
      expect(clientAfter.code).not.toBe('API_KEY_TEMPORARILY_BANNED');
      expect(count(429)).toBeLessThanOrEqual(2);
      expect(listed + notSent + unavailable).toBe(120);
      expect(listed).toBeGreaterThanOrEqual(60 - count(503));
      expect(statuses.length).toBeLessThanOrEqual(60 + count(503) + count(429));
      // The naive burst: 60 served, then refusals until the ban.
      expect(naive.filter((a) => a === '200')).toHaveLength(60);
      expect(naive).toContain('429 API_KEY_TEMPORARILY_BANNED');
      expect(naiveAfter).toEqual({ status: 429, code: 'API_KEY_TEMPORARILY_BANNED' });
    },
  );
});

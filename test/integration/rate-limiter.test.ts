/** The rate limiter on DynamoDB Local: exactness under concurrency, isolation, bans, failures. */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import type { Caller } from '../../lib/keys/key-record.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { DEFAULT_LIMITER_SETTINGS } from '../../lib/limits/limiter.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import {
  countDynamoDbCalls,
  failDynamoDbCalls,
  invokeHttp,
  proxyEvent,
} from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
let sequence = 0;
/**
 * The tests' clock: tomorrow (UTC), never a fixed date. Counter items expire by TTL two days
 * after their day window starts, and DynamoDB Local deletes expired items: with a fixed date the
 * counters of these tests vanished as they were written once that date was two days past.
 */
const DAY_MS = 86_400_000;
const DAY_START = (Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS;
const MINUTE_START = DAY_START + 15 * 60 * 60_000;

const freeCaller = (): Caller => ({
  keyId: `key_free${++sequence}`,
  plan: 'free',
  limits: PLAN_LIMITS.free,
  permissions: ALL_PERMISSIONS,
});
const limiter = (settings = DEFAULT_LIMITER_SETTINGS, onStoreFailure?: (e: unknown) => void) =>
  new DynamoDbRateLimiter(t.client, t.tables.rateLimits, {
    settings,
    ...(onStoreFailure ? { onStoreFailure } : {}),
  });

async function stored(keyId: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.rateLimits, Key: { pk: counterKey(keyId) } }),
  );
  return Item;
}

beforeAll(async () => {
  t = await createTestTables('limiter');
});
afterAll(() => t.drop());

describe('admission is exact under concurrency', () => {
  it('1,000 concurrent requests on one free key inside one minute window admit exactly 60', async () => {
    const caller = freeCaller();
    // Ten containers, each with its own cache, all hitting the same counter.
    const containers = Array.from({ length: 10 }, () => limiter());
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        containers[i % 10]!.consume(caller, MINUTE_START + 1_000 + (i % 50_000)),
      ),
    );
    expect(results.filter((r) => r.degraded)).toEqual([]);
    const admitted = results.filter((r) => r.decision.outcome === 'admitted').length;
    expect(admitted).toBe(60);
    expect(Number((await stored(caller.keyId))?.mc)).toBe(60);
    // Thousands of conditional writes on one item (each request retries on the state its lost
    // race returned): DynamoDB Local on a busy 2-core machine took 18-30 s for them (measured
    // with a CPU hog beside the run). Their time is no part of the claim: a generous timeout.
  }, 120_000);

  it('never lets two keys interfere', async () => {
    const [a, b] = [freeCaller(), freeCaller()];
    const shared = limiter();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        shared
          .consume(i % 2 ? a : b, MINUTE_START + 2_000)
          .then((r) => [i % 2, r.decision.outcome] as const),
      ),
    );
    for (const side of [0, 1]) {
      expect(results.filter(([s, o]) => s === side && o === 'admitted')).toHaveLength(60);
    }
  });

  it('does not lose or double-count across a minute rollover', async () => {
    const caller = freeCaller();
    const containers = [limiter(), limiter(), limiter()];
    // 40 admitted late in minute 0, then a concurrent burst straddling the boundary.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        containers[i % 3]!.consume(caller, MINUTE_START + 59_000),
      ),
    );
    // Some of the burst is stamped just before the boundary but arrives with the rest.
    const burst = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        containers[i % 3]!.consume(caller, MINUTE_START + (i % 10 === 0 ? 59_999 : 90_000)),
      ),
    );
    // Late-stamped requests that arrive before the roll count in minute 0 (room for 20 more),
    // the others in minute 1. Whatever the interleaving, every admission is in exactly one
    // window and minute 1 fills exactly to what minute 0 leaves: 60 − floor(previous × 0.5).
    expect(burst.filter((r) => r.degraded)).toEqual([]);
    const admitted = burst.filter((r) => r.decision.outcome === 'admitted').length;
    const item = await stored(caller.keyId);
    const [mw, mp, mc] = [item?.mw, item?.mp, item?.mc].map(Number);
    expect(mw).toBe(MINUTE_START + 60_000);
    expect(mp).toBeGreaterThanOrEqual(40);
    expect(mp).toBeLessThanOrEqual(60);
    expect(admitted).toBe(mp! - 40 + mc!);
    expect(mc).toBe(60 - Math.floor(mp! / 2));
  });
});

describe('requests that reach the store out of order', () => {
  it('count a request stamped before a boundary, written after the roll, in the new window', async () => {
    const caller = freeCaller();
    const warm = limiter();
    for (let i = 0; i < 60; i++) await warm.consume(caller, MINUTE_START + 59_000 + i);
    // Container A rolls the minute over; container B's request was stamped 2 ms earlier.
    const a = await limiter().consume(caller, MINUTE_START + 60_001);
    const b = await limiter().consume(caller, MINUTE_START + 59_999);
    expect(a.decision.outcome).toBe('admitted');
    // In the new minute the 60 of the old one weigh 60: B is refused, not counted in the past.
    expect(b.decision.outcome).toBe('limited');
    const item = await stored(caller.keyId);
    expect([item?.mw, item?.mp, item?.mc].map(Number)).toEqual([MINUTE_START + 60_000, 60, 1]);
    // And the next second admits what the formula allows, no more.
    const burst = await Promise.all(
      Array.from({ length: 100 }, () => warm.consume(caller, MINUTE_START + 61_000)),
    );
    // floor(60 × 59 000 / 60 000) = 59, plus the 1 counted: nothing left at 61 s.
    expect(burst.filter((r) => r.decision.outcome === 'admitted')).toHaveLength(0);
  });

  it('never move the day window back across UTC midnight', async () => {
    const caller = {
      keyId: `key_day${++sequence}`,
      plan: 'enterprise' as const,
      limits: { perMinute: 1000, perDay: 10 },
    };
    const midnight = DAY_START + DAY_MS;
    const warm = limiter();
    for (let i = 0; i < 10; i++) await warm.consume(caller, midnight - 5_000 + i);
    await limiter().consume(caller, midnight + 1);
    const late = await limiter().consume(caller, midnight - 1);
    expect(late.decision.outcome).toBe('limited');
    const item = await stored(caller.keyId);
    expect(Number(item?.dw)).toBe(midnight);
    expect(Number(item?.dp)).toBe(10);
  });
});

describe('one round trip in the steady state', () => {
  it('costs 1 call per admitted request, 1 per refused, 0 per banned once known, 2 on a cold cache', async () => {
    const caller = freeCaller();
    const warm = limiter();
    const counter = countDynamoDbCalls(t.client, t.tables.rateLimits);
    const callsFor = async (at: number) => {
      counter.reset();
      const result = await warm.consume(caller, at);
      return [result.decision.outcome, counter.calls.length] as const;
    };
    // First request ever: no item, the write creates it.
    expect(await callsFor(MINUTE_START + 1)).toEqual(['admitted', 1]);
    for (let i = 2; i <= 60; i++) expect(await callsFor(MINUTE_START + i)).toEqual(['admitted', 1]);
    for (let i = 1; i <= 11; i++)
      expect(await callsFor(MINUTE_START + 100 + i)).toEqual(['limited', 1]);
    // The refusal after the threshold writes the ban in the same write.
    expect(await callsFor(MINUTE_START + 200)).toEqual(['banned', 1]);
    expect(await callsFor(MINUTE_START + 300)).toEqual(['banned', 0]);
    // A conditional request's free allowance answers the cached ban the same way: no write.
    counter.reset();
    expect((await warm.takeFree(caller, MINUTE_START + 400)).outcome).toBe('banned');
    expect(counter.calls).toEqual([]);

    // Another container (cold cache) learns the state from its first, failed write.
    const other = freeCaller();
    await limiter().consume(other, MINUTE_START);
    counter.reset();
    await limiter().consume(other, MINUTE_START + 10);
    expect(counter.calls).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
  });
});

describe('temporary ban', () => {
  it('bans after more than 10 early refusals in a minute window, for 15 minutes, without counting or extending', async () => {
    const caller = freeCaller();
    const container = limiter();
    for (let i = 0; i < 60; i++) await container.consume(caller, MINUTE_START + i);
    const refusals = [];
    for (let i = 0; i < 12; i++)
      refusals.push(await container.consume(caller, MINUTE_START + 1_000 + i));
    // The first refusal came after no wait it was told: it does not count; the next 10 came
    // before the Retry-After they were given and do; the 12th goes over and is banned at once.
    expect(refusals.map((r) => r.decision.outcome)).toEqual([
      ...Array(11).fill('limited'),
      'banned',
    ]);
    expect(refusals.at(-1)!.decision).toMatchObject({ retryAfterMs: 15 * 60_000 });
    const banStart = MINUTE_START + 1_011;
    expect(Number((await stored(caller.keyId))?.bu)).toBe(banStart + 15 * 60_000);

    // Another container sees the ban at once (the authorizer cache plays no part).
    const elsewhere = await limiter().consume(caller, MINUTE_START + 5 * 60_000);
    expect(elsewhere.decision).toMatchObject({
      outcome: 'banned',
      retryAfterMs: banStart + 15 * 60_000 - (MINUTE_START + 5 * 60_000),
    });
    for (let i = 0; i < 30; i++) await container.consume(caller, MINUTE_START + 6 * 60_000 + i);
    const item = await stored(caller.keyId);
    expect(Number(item?.bu)).toBe(banStart + 15 * 60_000);
    expect(Number(item?.mc)).toBe(60);

    // When the ban ends, requests are admitted again.
    expect((await container.consume(caller, banStart + 15 * 60_000)).decision.outcome).toBe(
      'admitted',
    );
  });

  it('takes its numbers from the settings', async () => {
    const caller = {
      keyId: `key_tiny${++sequence}`,
      plan: 'enterprise' as const,
      limits: { perMinute: 1, perDay: 100 },
    };
    const container = limiter({
      ...DEFAULT_LIMITER_SETTINGS,
      maxRefusalsPerMinute: 2,
      banMs: 5_000,
    });
    const outcomes = [];
    for (let i = 0; i < 5; i++)
      outcomes.push((await container.consume(caller, MINUTE_START + i)).decision.outcome);
    expect(outcomes).toEqual(['admitted', 'limited', 'limited', 'limited', 'banned']);
  });

  it('does not re-trigger a ban shorter than the window: counting starts again after it', async () => {
    const caller = {
      keyId: `key_short${++sequence}`,
      plan: 'enterprise' as const,
      limits: { perMinute: 1, perDay: 100 },
    };
    const container = limiter({
      ...DEFAULT_LIMITER_SETTINGS,
      maxRefusalsPerMinute: 2,
      banMs: 5_000,
    });
    const at = (ms: number) => container.consume(caller, MINUTE_START + ms);
    await at(0);
    for (let i = 1; i <= 3; i++) expect((await at(i)).decision.outcome).toBe('limited');
    expect((await at(10)).decision.outcome).toBe('banned');
    // The ban (set at 10 ms) ends at 5,010 ms, inside the same minute window.
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await at(5_010 + i)).decision.outcome);
    // The first refusal after the ban waited as told; two count; the next goes over the line
    // again and bans. The count does not carry over from before the ban.
    expect(after).toEqual(['limited', 'limited', 'limited', 'banned']);
  });
});

describe('bans under concurrency', () => {
  it('200 concurrent requests on one free key: 60 admitted, at most 11 RATE_LIMITED, the rest banned', async () => {
    const caller = freeCaller();
    const containers = Array.from({ length: 10 }, () => limiter());
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        containers[i % containers.length]!.consume(caller, MINUTE_START + 7 * 60_000 + i),
      ),
    );
    const outcomes = results.map((r) => r.decision.outcome);
    const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
    console.log(
      `[ban-burst] 200 concurrent: ${count('admitted')} admitted, ${count('limited')} RATE_LIMITED, ${count('banned')} banned`,
    );
    expect(results.every((r) => !r.degraded)).toBe(true);
    expect(count('admitted')).toBe(60);
    expect(count('limited')).toBe(DEFAULT_LIMITER_SETTINGS.maxRefusalsPerMinute + 1);
    expect(count('banned')).toBe(200 - 60 - 11);
    // The ban is stored at once; the refusal count starts again after it.
    const item = await stored(caller.keyId);
    expect(Number(item?.bu)).toBeGreaterThan(MINUTE_START + 7 * 60_000);
    expect(Number(item?.rc)).toBe(0);
  });
});

describe('counter items', () => {
  it('expire by TTL two days after their day window starts', async () => {
    const caller = freeCaller();
    await limiter().consume(caller, MINUTE_START);
    expect(Number((await stored(caller.keyId))?.expiresAt)).toBe((DAY_START + 2 * DAY_MS) / 1000);
  });
});

describe('when the counter store fails', () => {
  const throttled = () =>
    Object.assign(new Error('throttled'), { name: 'ThrottlingException', $metadata: {} });

  it('fails open when so configured: admitted, reported, counted as a store failure', async () => {
    const failures: unknown[] = [];
    const container = limiter({ ...DEFAULT_LIMITER_SETTINGS, failureMode: 'open' }, (e) =>
      failures.push(e),
    );
    const restore = failDynamoDbCalls(t.client, throttled);
    try {
      const result = await container.consume(freeCaller(), MINUTE_START);
      expect(result).toMatchObject({ degraded: true, decision: { outcome: 'admitted' } });
      expect(result.unavailable).toBeUndefined();
    } finally {
      restore();
    }
    expect(failures).toHaveLength(1);
  });

  it('fails closed by default: unavailable', async () => {
    const container = limiter();
    const restore = failDynamoDbCalls(t.client, throttled);
    try {
      const result = await container.consume(freeCaller(), MINUTE_START);
      expect(result.degraded).toBe(true);
      // The store's own failure, to be answered 503.
      expect(result.unavailable).toMatchObject({ kind: 'transient', reason: 'throttled' });
    } finally {
      restore();
    }
  });

  it('keeps refusing a key known to be over its limit, even failing open', async () => {
    const caller = freeCaller();
    const container = limiter({ ...DEFAULT_LIMITER_SETTINGS, failureMode: 'open' });
    for (let i = 0; i < 61; i++) await container.consume(caller, MINUTE_START + i);
    const restore = failDynamoDbCalls(t.client, throttled);
    try {
      expect((await container.consume(caller, MINUTE_START + 100)).decision.outcome).toBe(
        'limited',
      );
    } finally {
      restore();
    }
  });
});

describe('through the functions', () => {
  const context = (caller: Caller) => ({ principalId: caller.keyId, ...callerToContext(caller) });

  it('a mixed list/cancel burst counts on the same key: 60 served, the rest 429', async () => {
    const caller = freeCaller();
    const store = new DynamoDbOrderStore(t.client, t.tables.orders);
    await store.putOrders([{ id: 1n, status: 'pending' }]);
    const deps = {
      orders: () => store,
      limiter: (() => {
        const l = limiter();
        return () => l;
      })(),
      now: () => MINUTE_START + 5_000,
      // What this proves is exact counting under concurrency, not time: 80 invocations in one
      // process against DynamoDB Local on a busy 2-core machine take seconds, where 80 Lambda
      // containers on DynamoDB take milliseconds, and a request abandoned at its deadline may or
      // may not have counted. So the requests get a budget no busy machine exhausts; the time
      // budget itself is proven in faults.test.ts and budget-from-arrival.test.ts.
      requestBudgetMs: 25_000,
    };
    const list = createListOrdersHandler(deps);
    const cancel = createCancelOrderHandler(deps);
    const responses = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        i % 2
          ? invokeHttp(
              list,
              proxyEvent({
                method: 'GET',
                resource: '/store/orders',
                path: '/store/orders',
                authorizer: context(caller),
              }),
            )
          : invokeHttp(
              cancel,
              proxyEvent({
                method: 'DELETE',
                resource: '/store/orders/{orderId}',
                path: '/store/orders/1',
                pathParameters: { orderId: '1' },
                authorizer: context(caller),
              }),
            ),
      ),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.filter((s) => s !== 429)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    for (const response of responses) {
      const { code } = JSON.parse(response.body || '{}') as { code?: string };
      // A banned key has nothing left in either window: on that tie the day (later reset) binds.
      expect(response.headers['X-RateLimit-Limit']).toBe(
        code === 'API_KEY_TEMPORARILY_BANNED' ? '1000' : '60',
      );
      if (response.statusCode === 429) {
        expect(JSON.parse(response.body)).toMatchObject({ status: 429 });
        expect(Number(response.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it('an enterprise key whose day limit is below its minute limit reports the day window, reset at the next UTC midnight', async () => {
    const caller: Caller = {
      keyId: `key_ent${++sequence}`,
      plan: 'enterprise',
      limits: { perMinute: 100, perDay: 5 },
      permissions: ALL_PERMISSIONS,
    };
    const store = new DynamoDbOrderStore(t.client, t.tables.orders);
    const l = limiter();
    const list = createListOrdersHandler({
      orders: () => store,
      limiter: () => l,
      now: () => MINUTE_START + 5_000,
    });
    const event = proxyEvent({
      method: 'GET',
      resource: '/store/orders',
      path: '/store/orders',
      authorizer: context(caller),
    });
    const first = await invokeHttp(list, event);
    expect(first.headers).toMatchObject({
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '4',
      'X-RateLimit-Reset': String((DAY_START + DAY_MS) / 1000),
      'RateLimit-Policy': '"minute";q=100;w=60, "day";q=5;w=86400',
    });
    for (let i = 0; i < 4; i++) await invokeHttp(list, event);
    const refused = await invokeHttp(list, event);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers).toMatchObject({
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '0',
    });
    // 5 requests today: the next is admitted once floor(5 × (W − e) / W) < 5, just after midnight.
    expect(Number(refused.headers['Retry-After'])).toBe(
      (DAY_START + DAY_MS - (MINUTE_START + 5_000)) / 1000 + 1,
    );
  });
});

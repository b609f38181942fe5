import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_SHARDS } from '../../lib/dynamodb/tables.ts';
import { compareIds, INT64_MAX, INT64_MIN, type Order } from '../../lib/orders/order.ts';
import {
  countDynamoDbCalls,
  failDynamoDbCalls,
  invokeHttp,
  proxyEvent,
} from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { captureObservations } from '../support/faults.ts';
import { createContext, invokeStreaming } from '../../local/lambda-runtime.ts';
import { setTimeout as sleep } from 'node:timers/promises';

let t: TestTables;
let store: DynamoDbOrderStore;
let limiter: DynamoDbRateLimiter;
const event = proxyEvent({ method: 'GET', resource: '/store/orders', path: '/store/orders' });

/** The id digits of a JSON array of orders, read from the text so no precision is lost. */
function idsOf(body: string): string[] {
  return [...body.matchAll(/\{"id":(-?\d+)/g)].map((m) => m[1] as string);
}

beforeAll(async () => {
  t = await createTestTables('list');
  limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
});
afterAll(() => t.drop());

describe('listOrders against DynamoDB', () => {
  it('answers [] for an empty store', async () => {
    store = new DynamoDbOrderStore(t.client, t.tables.orders);
    const response = await invokeHttp(
      createListOrdersHandler({ orders: () => store, limiter: () => limiter }),
      event,
    );
    expect(response).toMatchObject({
      statusCode: 200,
      headers: { 'Content-Type': 'application/json' },
      body: '[]',
    });
  });

  it('answers every order, sorted by id, across shards and pages, with exact int64 digits', async () => {
    // A small page size forces many pages per shard.
    store = new DynamoDbOrderStore(t.client, t.tables.orders, { pageSize: 7 });
    const ids = new Set<bigint>([
      INT64_MAX,
      INT64_MIN,
      0n,
      -1n,
      9007199254740993n,
      9007199254740992n,
    ]);
    for (let i = 0; ids.size < 300; i++) ids.add(BigInt(i * 7919) * 1_000_000_007n - 3n ** 33n);
    const orders: Order[] = [...ids].map((id, i) => ({
      id,
      petId: id === INT64_MAX ? INT64_MAX - 1n : BigInt(i),
      status: (['pending', 'shipped', 'cancelled'] as const)[i % 3],
      ...(i % 2 === 0
        ? { quantity: i, shipDate: '2026-11-22T10:00:00Z', complete: i % 4 === 0 }
        : {}),
    }));
    await store.putOrders(orders);
    const response = await invokeHttp(
      createListOrdersHandler({ orders: () => store, limiter: () => limiter }),
      event,
    );
    expect(response.statusCode).toBe(200);
    const expected = [...ids].sort(compareIds).map(String);
    expect(idsOf(response.body)).toEqual(expected);
    expect(response.body).toContain('{"id":9223372036854775807,"petId":9223372036854775806,');
    const parsed = JSON.parse(response.body) as Record<string, unknown>[];
    expect(parsed).toHaveLength(300);
    expect(parsed.filter((o) => o.status === 'cancelled')).toHaveLength(100);
    expect(parsed.find((o) => o.quantity === undefined)).not.toHaveProperty('shipDate');
  });

  it('queries every shard at once, one page each when it fits', async () => {
    store = new DynamoDbOrderStore(t.client, t.tables.orders, { pageSize: 1000 });
    const counter = countDynamoDbCalls(t.client, t.tables.orders);
    // How many Queries are out at the same time.
    let inFlight = 0;
    let mostInFlight = 0;
    const name = `inFlight${Math.random()}`;
    t.client.middlewareStack.add(
      (next) => async (args) => {
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          return await next(args);
        } finally {
          inFlight--;
        }
      },
      { step: 'finalizeRequest', name },
    );
    try {
      await invokeHttp(
        createListOrdersHandler({ orders: () => store, limiter: () => limiter }),
        event,
      );
    } finally {
      t.client.middlewareStack.remove(name);
    }
    // 300 orders over 8 shards fit one page each; a last page is read only when one is full.
    expect(counter.calls).toEqual(Array(ORDER_SHARDS).fill('QueryCommand'));
    expect(mostInFlight).toBe(ORDER_SHARDS);
  });

  it('answers 503 with Retry-After, before any byte of the list, when DynamoDB fails', async () => {
    store = new DynamoDbOrderStore(t.client, t.tables.orders);
    const restore = failDynamoDbCalls(
      t.client,
      () =>
        Object.assign(new Error('throughput exceeded'), {
          name: 'ProvisionedThroughputExceededException',
          $metadata: {},
        }),
      t.tables.orders,
    );
    try {
      const response = await invokeHttp(
        createListOrdersHandler({ orders: () => store, limiter: () => limiter }),
        event,
      );
      expect(response.statusCode).toBe(503);
      expect(response.headers).toMatchObject({
        'Content-Type': 'application/json',
        'Retry-After': '1',
      });
      expect(JSON.parse(response.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    } finally {
      restore();
    }
  });
});

describe('what a list reports', () => {
  const observations = captureObservations();
  afterAll(() => observations.restore());

  it('publishes the orders and bytes it sent, per list', async () => {
    store = new DynamoDbOrderStore(t.client, t.tables.orders);
    await store.putOrders(
      Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i + 1), status: 'pending' as const })),
    );
    observations.reset();
    const started = await invokeStreaming(
      createListOrdersHandler({ orders: () => store, limiter: () => limiter }),
      { ...event, headers: { 'Accept-Encoding': 'gzip' } },
      createContext('listOrders'),
    );
    expect(started.prelude?.headers).toMatchObject({
      'Content-Encoding': 'gzip',
      Vary: 'Accept-Encoding',
    });
    const chunks: Buffer[] = [];
    for await (const chunk of started.body as AsyncIterable<Buffer>) chunks.push(chunk);
    await started.done;
    const body = Buffer.concat(chunks);
    const listed = (JSON.parse(gunzipSync(body).toString()) as unknown[]).length;
    expect(listed).toBeGreaterThanOrEqual(50);
    await sleep(50);
    expect(observations.values('ListOrdersSent')).toEqual([listed]);
    expect(observations.values('ListResponseBytes')).toEqual([body.length]);
  });

  it('cuts a response at the streamed-response ceiling itself: logged and counted, never complete', async () => {
    store = new DynamoDbOrderStore(t.client, t.tables.orders);
    await store.putOrders(
      Array.from({ length: 300 }, (_, i) => ({ id: BigInt(i + 1), status: 'pending' as const })),
    );
    observations.reset();
    const handler = createListOrdersHandler({
      orders: () => store,
      limiter: () => limiter,
      ceilingBytes: 2_000,
    });
    const started = await invokeStreaming(handler, event, createContext('listOrders'));
    const chunks: Buffer[] = [];
    expect(started.prelude?.statusCode).toBe(200);
    await expect(
      (async () => {
        for await (const chunk of started.body as AsyncIterable<Buffer>) chunks.push(chunk);
        await started.done;
      })(),
    ).rejects.toThrow(/ceiling of a streamed response/);
    const sent = Buffer.concat(chunks);
    expect(() => JSON.parse(sent.toString()) as unknown).toThrow();
    await sleep(50);
    expect(observations.metrics()).toContain('ListStreamFailures');
    // Never past the ceiling: what passed the meter (and what the client got of it) fits.
    const [metered] = observations.values('ListResponseBytes');
    expect(metered).toBeLessThanOrEqual(2_000);
    expect(sent.length).toBeLessThanOrEqual(metered!);
  });
});

/**
 * 60,000 orders through the real listOrders function in a container of the local API's pool, on
 * DynamoDB Local (reached through a proxy that counts the function's Queries):
 * - the whole list streams sorted, digit-exact, in bounded memory (what the containers hold
 *   stays at the pages read ahead, whatever the table's size);
 * - a client that stops reading a compressed list mid-stream holds the function back: back-
 *   pressure reaches the database through every buffer — the gateway's, the container's stream
 *   window, the compressor — so the Queries stop while the client does not read, and what the
 *   server holds does not grow; when the client reads on, the list completes intact.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchOrders } from '../../bench/list.ts';
import { loadOrders } from '../../bench/raw-orders.ts';
import { ORDER_PAGE_SIZE } from '../../lib/dynamodb/orders-table.ts';
import { ORDER_SHARDS } from '../../lib/dynamodb/tables.ts';
import { ContainerPool } from '../../local/container-pool.ts';
import type { Invocation } from '../../local/invoker.ts';
import { functionEnvironment } from '../../local/local-stack.ts';
import { proxyEvent, TEST_CALLER_CONTEXT } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

const ORDERS = 60_000;
const MiB = 1024 * 1024;
const orders = benchOrders(ORDERS);
let t: TestTables;
let pool: ContainerPool;
let proxy: Server;
let queries = 0;

/** Forwards every request to DynamoDB Local, counting the Queries. */
function countingProxy(target: string): Promise<string> {
  proxy = createServer((request, response) => {
    if (request.headers['x-amz-target'] === 'DynamoDB_20120810.Query') queries++;
    const forwarded = httpRequest(
      new URL(request.url ?? '/', target),
      { method: request.method, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  return new Promise((resolve) =>
    proxy.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(proxy.address() as { port: number }).port}`),
    ),
  );
}

beforeAll(async () => {
  t = await createTestTables('large-list');
  // Written in reverse: the list must sort, not the insertion.
  await loadOrders(t.client, t.tables.orders, [...orders].reverse());
  const endpoint = await countingProxy(t.endpoint);
  pool = new ContainerPool({
    env: { ...functionEnvironment({ endpoint, tables: t.tables }), LOG_LEVEL: 'ERROR' },
    maxContainers: 1,
    // A 16 KiB window (1 MiB by default, which holds a whole compressed list of this size):
    // the list is then far larger than everything between the function and its client.
    streamWindowBytes: 16 * 1024,
  });
  await pool.prewarm();
}, 180_000);
afterAll(async () => {
  await pool?.close();
  proxy?.closeAllConnections();
  proxy?.close();
  await t?.drop();
});

function listEvent(acceptEncoding?: string) {
  const event = proxyEvent({ method: 'GET', resource: '/store/orders', path: '/store/orders' });
  const headers = acceptEncoding ? { 'Accept-Encoding': acceptEncoding } : {};
  return {
    ...event,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    requestContext: {
      ...event.requestContext,
      authorizer: TEST_CALLER_CONTEXT,
      requestTimeEpoch: Date.now(),
    },
  };
}

async function streamed(acceptEncoding?: string) {
  const invocation: Invocation = await pool.invoke('listOrders', listEvent(acceptEncoding), {
    timeoutMs: 120_000,
  });
  if (invocation.kind !== 'streaming') throw new Error(`not streamed: ${invocation.kind}`);
  return invocation;
}

describe(`a list of ${ORDERS.toLocaleString('en')} orders`, () => {
  it('streams them all, sorted, digit-exact, holding only the pages it reads ahead', async () => {
    const idle = await pool.memory();
    const started = performance.now();
    const invocation = await streamed();
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await pool.memory());
        await sleep(50);
      }
    })();
    const expected = orders.map((order) => order.id).sort((a, b) => (a < b ? -1 : 1));
    const idPattern = /\{"id":(-?\d+),"petId":(\d+)/g;
    let carry = '';
    let count = 0;
    let wrong = 0;
    let bytes = 0;
    const check = (text: string) => {
      for (const match of text.matchAll(idPattern)) {
        if (BigInt(match[1]!) !== expected[count]) wrong++;
        count++;
      }
    };
    for await (const chunk of invocation.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      const text = carry + chunk.toString();
      const cut = text.lastIndexOf('{');
      check(text.slice(0, cut));
      carry = text.slice(cut);
    }
    check(carry);
    await invocation.done;
    sampling = false;
    await sampler;
    const seconds = (performance.now() - started) / 1000;
    const growth = (peak - idle) / MiB;
    console.log(
      `[large-list] ${ORDERS} orders, ${(bytes / MiB).toFixed(1)} MiB in ${seconds.toFixed(2)} s (containers sampled every 50 ms with a collection); live memory of the containers grew ${growth.toFixed(1)} MiB`,
    );
    expect(carry.endsWith('}]')).toBe(true);
    expect(count).toBe(ORDERS);
    expect(wrong).toBe(0);
    expect(carry).toContain('"id":9223372036854775807,');
    // More than a buffered Lambda response may carry.
    expect(bytes).toBeGreaterThan(6 * MiB);
    // What is held is the pages read ahead — at most two per partition and one merged batch,
    // under 1 KiB per order in flight — not the list.
    expect(growth).toBeLessThan(((ORDER_SHARDS * 2 + 1) * ORDER_PAGE_SIZE * 1024) / MiB);
  }, 120_000);

  it('is held back by a client that stops reading it compressed, and completes when it reads on', async () => {
    const before = queries;
    const invocation = await streamed('gzip');
    expect(invocation.prelude?.headers?.['Content-Encoding']).toBe('gzip');
    let done = false;
    void invocation.done.then(
      () => (done = true),
      () => (done = true),
    );
    // Until the function has filled what lies between it and the client, and stopped: no page
    // read for 2 s (on a loaded machine a working function can go 500 ms without one).
    let stalledAt = -1;
    for (let still = 0, waited = 0; still < 4 && waited < 30_000; waited += 500) {
      still = queries === stalledAt ? still + 1 : 0;
      stalledAt = queries;
      await sleep(500);
    }
    const settled = await pool.memory();
    await sleep(1_500);
    const later = await pool.memory();
    expect(done).toBe(false);
    // Not one more page read while the client reads nothing.
    expect(queries).toBe(stalledAt);
    console.log(
      `[backpressure] live memory while the client reads nothing: ${((later - settled) / MiB).toFixed(2)} MiB change over 1.5 s`,
    );
    expect(later - settled).toBeLessThan(1 * MiB); // it does not grow (a collection may shrink it)

    const chunks: Buffer[] = [];
    for await (const chunk of invocation.body as AsyncIterable<Buffer>) chunks.push(chunk);
    await invocation.done;
    const listed = JSON.parse(zlib.gunzipSync(Buffer.concat(chunks)).toString()) as unknown[];
    expect(listed).toHaveLength(ORDERS);
    // The whole list took many more pages than were read before the client stopped reading.
    const whole = queries - before;
    const beforeStall = stalledAt - before;
    console.log(
      `[backpressure] gzip list: ${beforeStall} of ${whole} Queries read before the stalled client held it back`,
    );
    // At least two more pages of every partition were still to be read when it stopped.
    expect(whole - beforeStall).toBeGreaterThanOrEqual(2 * ORDER_SHARDS);
  }, 120_000);
});

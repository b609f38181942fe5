/**
 * Decide, then act, from the outside (`npm start`): a request the rate limiter refuses, and a
 * cancel that changes no order, leave other clients their 304s. A poller sends its list's ETag
 * every 50 ms while another key floods the API with cancels:
 *  - a banned key's cancels of pending, shipped and unknown orders from 8 connections: every one
 *    is answered 429, and afterwards the list still has the poller's tag and the pending orders
 *    are still pending;
 *  - a key within its limit cancelling shipped, cancelled and unknown orders about 12 times a
 *    second: answered 409, 204 and 404, and the list keeps the poller's tag.
 * Either way at least 99% of the poller's requests are answered 304: a cancel that marked the
 * list's version while a poll read it would have the poll answered 200 in full.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import type { Order } from '../../lib/orders/order.ts';
import { earlyInAMinute } from '../support/minute-window.ts';
import { keysAndSeedArgs, startLocalApi, type LocalApi } from '../support/local-api.ts';

const pollerKey = generateApiKey();
const freeKey = generateApiKey();
const businessKey = generateApiKey();
let api: LocalApi;

/**
 * Each run lasts until the poller has sent POLLS conditional requests and the flood its share of
 * cancels, however slow the machine: a count, not a time, decides (at most RUN_CAP_MS).
 */
const POLLS = 60;
const RUN_CAP_MS = 60_000;
const POLL_EVERY_MS = 50;
const ORDERS: Order[] = [
  { id: 1n, status: 'pending' },
  { id: 2n, status: 'pending' },
  { id: 3n, status: 'shipped', complete: true },
  { id: 4n, status: 'cancelled' },
];

beforeAll(async () => {
  const keys = [
    { key: pollerKey, plan: 'enterprise', limits: { perMinute: 100_000, perDay: 10_000_000 } },
    { key: freeKey, plan: 'free' },
    { key: businessKey, plan: 'business' },
  ];
  api = await startLocalApi({ args: keysAndSeedArgs(keys, ORDERS) });
});
afterAll(async () => {
  await api?.stop();
});

function send(method: 'GET' | 'DELETE', path: string, key: string, headers = {}) {
  return fetch(`${api.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...headers },
  }).then(async (response) => ({
    status: response.status,
    etag: response.headers.get('etag'),
    body: await response.text(),
  }));
}

/**
 * A poller sending the list's tag every POLL_EVERY_MS beside a flood of `request`s from
 * `connections` loops (each pausing `pauseMs`), until the poller has made POLLS requests and the
 * flood `cancels`: the statuses each got.
 */
async function pollBesideFlood(
  tag: string,
  flood: { connections: number; cancels: number; pauseMs?: number },
  request: (i: number) => Promise<{ status: number }>,
) {
  const polled: number[] = [];
  const flooded: number[] = [];
  const cap = Date.now() + RUN_CAP_MS;
  const done = () =>
    Date.now() > cap || (polled.length >= POLLS && flooded.length >= flood.cancels);
  const poller = async () => {
    while (!done()) {
      const started = Date.now();
      polled.push((await send('GET', '/store/orders', pollerKey, { 'If-None-Match': tag })).status);
      await sleep(Math.max(0, POLL_EVERY_MS - (Date.now() - started)));
    }
  };
  const loops = Array.from({ length: flood.connections }, async (_, loop) => {
    for (let i = loop; !done(); i += flood.connections) {
      flooded.push((await request(i)).status);
      if (flood.pauseMs) await sleep(flood.pauseMs);
    }
  });
  await Promise.all([poller(), ...loops]);
  expect(polled.length).toBeGreaterThanOrEqual(POLLS);
  expect(flooded.length).toBeGreaterThanOrEqual(flood.cancels);
  return { polled, flooded };
}

const share = (statuses: number[], status: number) =>
  statuses.filter((s) => s === status).length / statuses.length;

it('leaves a poller its 304s while a banned key floods the API with cancels', async () => {
  // The free key banned: its plan's 60 a minute used on unknown orders, then early refusals,
  // all in one minute window (refusals toward a ban are counted per window).
  await earlyInAMinute(20_000);
  let last = 0;
  for (let i = 0; i < 200 && last !== 429; i++)
    last = (await send('DELETE', '/store/orders/99', freeKey)).status;
  for (let i = 0; i < 15; i++) await send('DELETE', '/store/orders/99', freeKey);
  const banned = await send('DELETE', '/store/orders/99', freeKey);
  expect(JSON.parse(banned.body)).toMatchObject({ code: 'API_KEY_TEMPORARILY_BANNED' });

  const { etag } = await send('GET', '/store/orders', pollerKey);
  const ids = [1, 2, 3, 99];
  const { polled: statuses, flooded: refused } = await pollBesideFlood(
    etag!,
    { connections: 8, cancels: 400 },
    (i) => send('DELETE', `/store/orders/${ids[i % ids.length]}`, freeKey),
  );

  console.log(
    `[refusals] banned key: ${refused.length} cancels (${share(refused, 429) * 100}% 429); poller: ${statuses.filter((s) => s === 304).length} 304s of ${statuses.length}`,
  );
  expect(share(refused, 429)).toBe(1);
  expect(share(statuses, 304)).toBeGreaterThanOrEqual(0.99);
  // No order changed: the poller's tag still matches, and orders 1 and 2 are pending.
  const list = await send('GET', '/store/orders', pollerKey);
  expect(list.etag).toBe(etag);
  expect(JSON.parse(list.body)).toMatchObject([
    { status: 'pending' },
    { status: 'pending' },
    {},
    {},
  ]);
});

it('leaves a poller its 304s while a key within its limit repeats cancels that change nothing', async () => {
  const { etag } = await send('GET', '/store/orders', pollerKey);
  const ids = [3, 4, 99];
  // About 12 a second from one connection: well within the business plan's 1,000 a minute.
  const { polled: statuses, flooded: answered } = await pollBesideFlood(
    etag!,
    { connections: 1, cancels: 40, pauseMs: 80 },
    (i) => send('DELETE', `/store/orders/${ids[i % ids.length]}`, businessKey),
  );

  console.log(
    `[refusals] no-op cancels: ${answered.length} (409 ${share(answered, 409) * 100}%, 204 ${share(answered, 204) * 100}%, 404 ${share(answered, 404) * 100}%); poller: ${statuses.filter((s) => s === 304).length} 304s of ${statuses.length}`,
  );
  expect(new Set(answered)).toEqual(new Set([409, 204, 404]));
  expect(share(statuses, 304)).toBeGreaterThanOrEqual(0.99);
  expect((await send('GET', '/store/orders', pollerKey)).etag).toBe(etag);
});

/**
 * v2's conditional pages end to end through `npm start`, while the store changes: every 200 page
 * has a tag (by its content while the store has changed in the last INDEX_SETTLE_MS, by the
 * list's version once it has settled), and a race of pages, cancels and conditional requests in
 * which no 304 ever hides a cancel that was acknowledged before the request was sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import type { Order } from '../../lib/orders/order.ts';
import { keysAndSeedArgs, startLocalApi, type LocalApi } from '../support/local-api.ts';
import { raceConditional, type RaceAnswer } from '../support/conditional-race.ts';

const key = generateApiKey();
let api: LocalApi;
const ORDERS: Order[] = Array.from({ length: 400 }, (_, i) => ({
  id: BigInt(i + 1),
  petId: 7n,
  status: 'pending' as const,
}));
const PAGE = '/store/orders?status=pending&pageSize=50';

beforeAll(async () => {
  const keys = [{ key, plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } }];
  api = await startLocalApi({ args: keysAndSeedArgs(keys, ORDERS) });
});
afterAll(async () => {
  await api?.stop();
});

const v2 = () => api.url.replace(/\/v1$/, '/v2');

async function page(headers: Record<string, string> = {}): Promise<RaceAnswer> {
  const response = await fetch(`${v2()}${PAGE}`, {
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

async function cancel(id: number): Promise<RaceAnswer> {
  const response = await fetch(`${v2()}/store/orders/${id}`, {
    method: 'DELETE',
    headers: { Authorization: `Bearer ${key}` },
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

const idsOf = (body: string) => [...body.matchAll(/"id":(\d+)/g)].map((m) => Number(m[1]));

describe('a race of v2 pages, cancels and conditional requests, through npm start', () => {
  it('tags every 200 page, and never answers 304 to a client whose page lists an order whose cancel was acknowledged before it asked', async () => {
    const ROUNDS = Number(process.env.STORE_ORDERS_RACE_ROUNDS ?? 200) / 2;
    const { wrong, counts, sent } = await raceConditional({
      rounds: ROUNDS,
      seed: 20261128,
      read: () => page(),
      readIf: (tag) => page({ 'If-None-Match': tag }),
      // An order the latest page lists: the cancel changes the page.
      pickId: (latest, random) => {
        const listed = idsOf(latest ?? '');
        return listed.length === 0 ? undefined : listed[random(listed.length)];
      },
      cancel,
      cancelsIn: (round) => (round % 3 === 0 ? 0 : 1),
      // Every 304: the client's page lists no order whose cancel was acknowledged before it asked.
      stale: (body, id) => idsOf(body).includes(id),
    });
    console.log(
      `[race v2] ${ROUNDS} rounds: ${counts.reads} pages (${counts.untagged} without a tag), ${counts.cancels} cancels, ${counts.conditional} conditional requests: ${counts.notModified} × 304, ${counts.modified} × 200; wrong 304s: ${wrong.length}; sent again after a 503: ${counts.retried}`,
    );
    expect(wrong).toEqual([]);
    // Every 200 page has a validator, the store changing or not.
    expect(counts.untagged).toBe(0);
    expect(counts.retried, 'requests answered 503 and sent again').toBeLessThan(sent / 10);
    expect(counts.notModified).toBeGreaterThan(10);
    expect(counts.modified).toBeGreaterThan(10);
  }, 180_000);
});

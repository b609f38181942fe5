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
import { sendPolitely, type Answered } from '../support/polite-client.ts';
import { seededRandom } from '../support/seeded-random.ts';

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

interface Answer extends Answered {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

const v2 = () => api.url.replace(/\/v1$/, '/v2');

async function page(headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${v2()}${PAGE}`, {
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

async function cancel(id: number): Promise<Answer> {
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
    const held: { tag: string; body: string }[] = [];
    const acknowledged: { id: number; at: number }[] = [];
    const checks: { body: string; sent: number; status: number }[] = [];
    const counts = { pages: 0, untagged: 0, cancels: 0, notModified: 0, modified: 0, retried: 0 };
    const random = seededRandom(20261128);
    const after = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // A 503 (DynamoDB Local slow on a busy machine) is sent again after its Retry-After.
    const politely = <A extends Answered>(send: () => Promise<A>) =>
      sendPolitely(send, { onRetry: () => counts.retried++ });

    const list = async (delay: number) => {
      await after(delay);
      const { answer } = await politely(() => page());
      expect(answer.status).toBe(200);
      counts.pages++;
      const tag = answer.headers.get('etag');
      if (tag) held.push({ tag, body: answer.body });
      else counts.untagged++;
    };
    const cancelOne = async (delay: number) => {
      await after(delay);
      // An order the latest page lists: the cancel changes the page.
      const listed = idsOf(held.at(-1)?.body ?? '');
      if (listed.length === 0) return;
      const id = listed[random(listed.length)]!;
      const { answer } = await politely(() => cancel(id));
      expect(answer.status).toBe(204);
      acknowledged.push({ id, at: performance.now() });
      counts.cancels++;
    };
    const poll = async (delay: number) => {
      await after(delay);
      if (held.length === 0) return;
      const pair = held[held.length - 1 - random(Math.min(held.length, 6))]!;
      const { answer, sent } = await politely(() => page({ 'If-None-Match': pair.tag }));
      expect([200, 304]).toContain(answer.status);
      checks.push({ body: pair.body, sent, status: answer.status });
      if (answer.status === 304) counts.notModified++;
      else counts.modified++;
    };

    for (let round = 0; round < ROUNDS; round++) {
      const work = [list(random(4)), poll(random(6)), poll(random(6)), list(random(8))];
      if (round % 3 !== 0) work.push(cancelOne(random(6)));
      await Promise.all(work);
    }

    // Every 304: the client's page lists no order whose cancel was acknowledged before it asked.
    const wrong = checks.filter(
      (check) =>
        check.status === 304 &&
        acknowledged.some(({ id, at }) => at < check.sent && idsOf(check.body).includes(id)),
    );
    console.log(
      `[race v2] ${ROUNDS} rounds: ${counts.pages} pages (${counts.untagged} without a tag), ${counts.cancels} cancels, ${checks.length} conditional requests: ${counts.notModified} × 304, ${counts.modified} × 200; wrong 304s: ${wrong.length}; sent again after a 503: ${counts.retried}`,
    );
    expect(wrong).toEqual([]);
    // Every 200 page has a validator, the store changing or not.
    expect(counts.untagged).toBe(0);
    const sentInAll = counts.pages + counts.cancels + checks.length;
    expect(counts.retried, 'requests answered 503 and sent again').toBeLessThan(sentInAll / 10);
    expect(counts.notModified).toBeGreaterThan(10);
    expect(counts.modified).toBeGreaterThan(10);
  }, 180_000);
});

/**
 * Rate limits as clients that follow the README live them, through `npm start`, side by side on
 * one run, each on a fresh free key (60 a minute):
 *  - the polite loop: send at once after a 200, sleep exactly Retry-After after a 429. It must
 *    never be banned and get the plan's rate, across minute boundaries;
 *  - the rude loop: the same, but it does not wait after a 429. It is banned as before;
 *  - `@store-orders/client`, asked for lists as fast as three callers can: it must sustain the
 *    plan's rate with no 429 and no ban, pacing by the sliding window.
 * Three minutes of wall time, mostly sleeping: the loops cost a few hundred requests.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isApiError, StoreOrdersClient } from '../../client/src/index.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';

const RUN_MS = 180_000;
const PER_SECOND = PLAN_LIMITS.free.perMinute / 60;
const keys = { polite: generateApiKey(), rude: generateApiKey(), client: generateApiKey() };

let api: LocalApi;
beforeAll(async () => {
  const file = join(tempStateFile(), '..', 'keys.json');
  writeFileSync(file, JSON.stringify(Object.values(keys).map((key) => ({ key, plan: 'free' }))));
  api = await startLocalApi({ args: ['--keys', file] });
});
afterAll(() => api?.stop('SIGKILL'));

interface Tally {
  admitted: number;
  limited: number;
  banned: number;
  /** Seconds into the run of the first ban, if any. */
  bannedAt?: number;
  minutesCrossed: number;
}

/**
 * The loop of the README's curl example: send; after a 429 RATE_LIMITED sleep Retry-After
 * seconds (the polite loop) or not at all (the rude one); stop at a ban.
 */
async function loop(key: string, obey: boolean, until: number): Promise<Tally> {
  const started = Date.now();
  const tally: Tally = { admitted: 0, limited: 0, banned: 0, minutesCrossed: 0 };
  while (Date.now() < until) {
    const response = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    const body = await response.text();
    if (response.status === 200) {
      tally.admitted++;
      continue;
    }
    expect(response.status).toBe(429);
    const { code } = JSON.parse(body) as { code: string };
    if (code === 'API_KEY_TEMPORARILY_BANNED') {
      tally.banned++;
      tally.bannedAt = Math.round((Date.now() - started) / 1000);
      break;
    }
    expect(code).toBe('RATE_LIMITED');
    tally.limited++;
    if (obey) await sleep(Number(response.headers.get('retry-after')) * 1000);
  }
  tally.minutesCrossed = Math.floor(Date.now() / 60_000) - Math.floor(started / 60_000);
  return tally;
}

/** Three callers asking the client for the list as fast as it answers, as its README loops. */
async function clientRun(until: number) {
  const statuses = new Map<number, number>();
  const client = new StoreOrdersClient({
    baseUrl: api.url,
    apiKey: keys.client,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      return response;
    },
  });
  let lists = 0;
  let notSent = 0;
  const caller = async () => {
    while (Date.now() < until) {
      try {
        await client.listAllOrders({ budgetMs: Math.max(1, until - Date.now()) });
        if (Date.now() <= until) lists++;
      } catch (error) {
        if (!isApiError(error) || error.sent) throw error;
        notSent++;
        // The README's loop: sleep until the moment the error names.
        const retryAt = error.retryAt ?? Date.now() + (error.retryAfterSeconds ?? 1) * 1000;
        await sleep(Math.max(0, Math.min(retryAt, until) - Date.now()));
      }
    }
  };
  await Promise.all([caller(), caller(), caller()]);
  return { lists, notSent, statuses: Object.fromEntries(statuses) };
}

it(
  'polite loop never banned at the plan rate, rude loop banned, the client sustains the plan',
  async () => {
    const until = Date.now() + RUN_MS;
    const [polite, rude, client] = await Promise.all([
      loop(keys.polite, true, until),
      loop(keys.rude, false, until),
      clientRun(until),
    ]);
    const plan = (RUN_MS / 1000) * PER_SECOND;
    console.log(
      `[polite] ${RUN_MS / 1000} s on free keys (plan: ${plan}): polite loop ${JSON.stringify(polite)}; ` +
        `rude loop ${JSON.stringify(rude)}; client ${JSON.stringify(client)}`,
    );
    // The polite loop crosses at least 2 minute boundaries, is never banned, gets ≥ 85% of
    // the plan, and is refused about once for each request admitted after the first burst.
    expect(polite.minutesCrossed).toBeGreaterThanOrEqual(2);
    expect(polite.banned).toBe(0);
    expect(polite.admitted).toBeGreaterThanOrEqual(0.85 * plan);
    expect(polite.admitted).toBeLessThanOrEqual(plan + PLAN_LIMITS.free.perMinute);
    // The rude loop: 60 admitted, then 11 RATE_LIMITED, banned on the 12th refusal.
    expect(rude).toMatchObject({ admitted: PLAN_LIMITS.free.perMinute, limited: 11, banned: 1 });
    // The client: ≥ 90% of the plan's rate, never a 429 (so never banned).
    expect(client.lists).toBeGreaterThanOrEqual(0.9 * plan);
    expect(client.statuses).toEqual({ 200: expect.any(Number) });
  },
  RUN_MS + 60_000,
);

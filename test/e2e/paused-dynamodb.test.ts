/**
 * The real DynamoDB Local under `npm start`, paused (SIGSTOP) for longer than the time budget and
 * resumed: every request is answered within the budget (v1's and v2's), a list already streaming is cut (not
 * held), nothing is applied after it was answered as failed except the documented cancel case,
 * and the API recovers without a restart.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { CUT_SHORT_MESSAGES } from '../../local/access-log-context.ts';
import type { LocalState } from '../../local/local-stack.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';

const LIST_SIZE = 20_000;
const keys = { cached: generateApiKey(), fresh: generateApiKey() };
let api: LocalApi;
let javaPid: number;

function seedFile(): string {
  const dir = join(tempStateFile(), '..');
  const orders = Array.from({ length: LIST_SIZE }, (_, i) => ({
    id: i + 1,
    petId: 1_000 + i,
    quantity: 1,
    status: 'pending',
  }));
  writeFileSync(join(dir, 'seed.json'), JSON.stringify(orders));
  writeFileSync(
    join(dir, 'keys.json'),
    JSON.stringify([
      { key: keys.cached, plan: 'enterprise', limits: { perMinute: 1000, perDay: 10000 } },
      { key: keys.fresh, plan: 'enterprise', limits: { perMinute: 1000, perDay: 10000 } },
    ]),
  );
  return dir;
}

async function timed(
  method: string,
  path: string,
  key: string,
  headers: Record<string, string> = {},
) {
  const started = performance.now();
  // A path of v2 is given with its stage (`/v2/…`), v1's without.
  const url = path.startsWith('/v2/')
    ? `${api.url.replace(/\/v1$/, '')}${path}`
    : `${api.url}${path}`;
  const response = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });
  const ms = performance.now() - started;
  return { status: response.status, headers: response.headers, ms, body: await response.text() };
}

/**
 * A whole list, retried as the README tells clients to when its stream is cut: a page that does
 * not come within its 3 s (DynamoDB Local just resumed, on a busy machine) cuts a list, which
 * is a failed request, not a broken service.
 */
async function wholeList(key: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await timed('GET', '/store/orders', key);
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}

beforeAll(async () => {
  const dir = seedFile();
  api = await startLocalApi({
    ownDynamoDb: true,
    args: ['--seed', join(dir, 'seed.json'), '--keys', join(dir, 'keys.json')],
  });
  javaPid = (JSON.parse(readFileSync(api.stateFile, 'utf8')) as LocalState).dynamoDbPid!;
}, 120_000);
afterAll(async () => {
  try {
    process.kill(javaPid, 'SIGCONT');
  } catch {
    // already gone
  }
  await api.stop();
});

describe('DynamoDB Local paused for longer than the budget', () => {
  it('answers within the budget, cuts a stalled list, applies nothing late but the documented cancel, and recovers', async () => {
    // The cached key's authorizer answer is in the gateway's cache before the pause, and there
    // are warm containers for what comes (a cold start is not charged to a budget locally).
    expect((await timed('DELETE', '/store/orders/2', keys.cached)).status).toBe(204);
    const warm = await Promise.all([
      wholeList(keys.cached),
      wholeList(keys.cached),
      wholeList(keys.cached),
    ]);
    expect(warm.map((answer) => answer.status)).toEqual([200, 200, 200]);
    const V2_PAGE = '/v2/store/orders?status=pending&pageSize=10';
    expect((await timed('GET', V2_PAGE, keys.cached)).status).toBe(200);

    // A list starts streaming; its reader takes one chunk, then stops reading for a while.
    const listing = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${keys.cached}` },
    });
    expect(listing.status).toBe(200);
    const reader = listing.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);

    process.kill(javaPid, 'SIGSTOP');
    try {
      const tag = { 'If-None-Match': warm[0].headers.get('etag')! };
      const [cancel, list, conditional, unknownToCache, v2Page] = await Promise.all([
        timed('DELETE', '/store/orders/1', keys.cached),
        timed('GET', '/store/orders', keys.cached),
        timed('GET', '/store/orders', keys.cached, tag),
        timed('GET', '/store/orders', keys.fresh),
        timed('GET', V2_PAGE, keys.cached),
      ]);
      for (const answer of [cancel, list, conditional, unknownToCache, v2Page]) {
        expect(answer.status).toBe(503);
        expect(answer.headers.get('retry-after')).toBe('1');
        expect(answer.ms).toBeLessThan(TIME_BUDGETS.answerMs);
        expect(JSON.parse(answer.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      }
      // The limiter could not count: the answers claim no counts, only the key's limits, which
      // its plan says (docs/rate-limits.md), with If-None-Match or without.
      for (const answer of [cancel, list, conditional, v2Page]) {
        expect(answer.headers.get('ratelimit-policy')).toBe(
          '"minute";q=1000;w=60, "day";q=10000;w=86400',
        );
      }
      expect(cancel.headers.get('x-ratelimit-remaining')).toBeNull();

      // The list already streaming: once its reader reads on, the stalled page ends the stream.
      const cutStarted = performance.now();
      let cut = false;
      try {
        for (;;) {
          const { done } = await reader.read();
          if (done) break;
        }
      } catch {
        cut = true;
      }
      expect(cut).toBe(true);
      expect(performance.now() - cutStarted).toBeLessThan(TIME_BUDGETS.listPageMs + 2_000);
      // Its access log line names the cut as the service's: the client was reading.
      const requestId = listing.headers.get('x-amzn-requestid');
      const accessLogLine = () =>
        api
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{"requestId"'))
          .map((line) => JSON.parse(line) as Record<string, string>)
          .find((line) => line.requestId === requestId);
      await expect
        .poll(accessLogLine, { timeout: 10_000 })
        .toMatchObject({ status: '200', errorMessage: CUT_SHORT_MESSAGES.service });
    } finally {
      process.kill(javaPid, 'SIGCONT');
    }

    // Recovery without a restart.
    const after = await wholeList(keys.cached);
    expect(after.status).toBe(200);
    expect((JSON.parse(after.body) as unknown[]).length).toBe(LIST_SIZE);
    // The cancel answered 503 never reached its write (its limiter call stalled first): the
    // order is still pending, and a retry converges.
    expect(after.body).toContain('{"id":1,"petId":1000,"quantity":1,"status":"pending"}');
    expect((await timed('DELETE', '/store/orders/1', keys.cached)).status).toBe(204);
    const listed = await wholeList(keys.cached);
    expect(listed.body).toContain('{"id":1,"petId":1000,"quantity":1,"status":"cancelled"}');
    const v2After = await timed('GET', V2_PAGE, keys.cached);
    expect(v2After.status).toBe(200);
    expect(JSON.parse(v2After.body)).toMatchObject({ pageSize: 10 });
  }, 60_000);
});

/**
 * The local API runs functions as Lambda does — one invocation at a time per container, module
 * state, SDK clients and logger per container — so that under load, faults and hostile input it
 * behaves like AWS: bursts on one key are counted exactly and never answered 503 on a healthy
 * database, every log line carries its own request id, a client that leaves stops its
 * invocation, and no key reaches the log.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { generateApiKey, keyHint } from '../../lib/keys/api-key.ts';
import { localTableNames } from '../../local/local-stack.ts';
import { earlyInAMinute } from '../support/minute-window.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';
import { sendPolitely } from '../support/polite-client.ts';
import { rawRequest } from '../support/raw-http.ts';
import { dynamodbEndpoint } from '../support/tables.ts';

const BURSTS = 3;
const BURST_SIZE = 120;
const freeKeys = Array.from({ length: BURSTS }, () => generateApiKey());
const unlimited = generateApiKey();
const apis: LocalApi[] = [];

function keysFile(): string {
  const path = join(tempStateFile(), '..', 'keys.json');
  writeFileSync(
    path,
    JSON.stringify([
      ...freeKeys.map((key) => ({ key, plan: 'free' })),
      {
        key: unlimited,
        plan: 'enterprise',
        limits: { perMinute: 1_000_000, perDay: 1_000_000_000 },
      },
    ]),
  );
  return path;
}

function seedFile(count: number): string {
  const path = join(tempStateFile(), '..', 'seed.json');
  writeFileSync(
    path,
    JSON.stringify(
      Array.from({ length: count }, (_, i) => ({ id: i + 1, petId: i, status: 'pending' })),
    ),
  );
  return path;
}

async function start(args: string[] = []): Promise<LocalApi> {
  const api = await startLocalApi({ args: ['--keys', keysFile(), ...args] });
  apis.push(api);
  return api;
}
afterAll(() => Promise.all(apis.map((api) => api.stop())));

async function burst(api: LocalApi, key: string, size: number): Promise<Map<string, number>> {
  const outcomes = await Promise.all(
    Array.from({ length: size }, async () => {
      const response = await fetch(`${api.url}/store/orders`, {
        headers: { Authorization: `Bearer ${key}` },
      });
      const body = await response.text();
      return response.status === 200
        ? '200'
        : `${response.status} ${(JSON.parse(body) as { code: string }).code}`;
    }),
  );
  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  return counts;
}

const coldStarts = (api: LocalApi, fn: string) =>
  api
    .output()
    .split('\n')
    .filter((line) => line.startsWith(`${fn}#`) && line.includes('cold start')).length;

describe('bursts on one key', () => {
  let api: LocalApi;
  beforeAll(async () => {
    api = await start();
  });

  it(`${BURSTS} bursts of ${BURST_SIZE} concurrent lists on fresh free keys: exactly 60 × 200 and 60 × 429 each, never a 503`, async () => {
    const report: string[] = [];
    for (const key of freeKeys) {
      await earlyInAMinute(25_000);
      const coldBefore = coldStarts(api, 'listOrders');
      const counts = await burst(api, key, BURST_SIZE);
      const cold = coldStarts(api, 'listOrders') - coldBefore;
      const refused =
        (counts.get('429 RATE_LIMITED') ?? 0) + (counts.get('429 API_KEY_TEMPORARILY_BANNED') ?? 0);
      report.push(
        `${[...counts].map(([o, n]) => `${n} × ${o}`).join(', ')}; listOrders containers: ${cold} cold, ${BURST_SIZE - cold} warm`,
      );
      expect(counts.get('200')).toBe(60);
      expect(refused).toBe(60);
      expect(counts.get('429 RATE_LIMITED')).toBe(11);
    }
    console.log(`[bursts]\n  ${report.join('\n  ')}`);
  }, 120_000);

  it(`${BURST_SIZE} concurrent lists with an unlimited key: all 200`, async () => {
    const counts = await burst(api, unlimited, BURST_SIZE);
    expect([...counts]).toEqual([['200', BURST_SIZE]]);
  });
});

describe('a client that leaves', () => {
  it('stops its invocation at any moment: 250 early leavers leave the next list as fast as before', async () => {
    const api = await start(['--seed', seedFile(20_000)]);
    const port = Number(new URL(api.url).port);
    const list = async (): Promise<number> => {
      // A 503 is the contract's answer when DynamoDB Local is slow (a loaded 2-core CI
      // machine): sent again as a client would, after Retry-After.
      const { answer, sent } = await sendPolitely(async () => {
        const response = await fetch(`${api.url}/store/orders`, {
          headers: { Authorization: `Bearer ${unlimited}` },
        });
        return { status: response.status, headers: response.headers, text: await response.text() };
      });
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.text) as unknown[]).length).toBe(20_000);
      return performance.now() - sent;
    };
    await list();
    const before = Math.min(await list(), await list());
    // Clients that send a list request and leave 0 to 40 ms later: before the status line.
    const leaveAfter = (ms: number) =>
      new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write(
            `GET /v1/store/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${unlimited}\r\n\r\n`,
            () =>
              setTimeout(() => {
                socket.destroy();
                resolve();
              }, ms),
          );
        });
      });
    for (let round = 0; round < 25; round++) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => leaveAfter((i * 4 + round) % 40)));
    }
    // Every one of them was stopped: the gateway logs a request only once its invocation ended.
    const stopped = () => api.output().split('The client went away').length - 1;
    const waitedFrom = performance.now();
    // (Typically within a second; the cap leaves room for a loaded machine.)
    while (stopped() < 250 && performance.now() - waitedFrom < 15_000) await sleep(50);
    const stoppedWithin = performance.now() - waitedFrom;
    const after = Math.min(await list(), await list());
    console.log(
      `[early-abort] list of 20,000 orders: ${before.toFixed(0)} ms before 250 early leavers, ${after.toFixed(0)} ms after; all ${stopped()} stopped within ${stoppedWithin.toFixed(0)} ms of the last one leaving`,
    );
    expect(stopped()).toBe(250);
    expect(after).toBeLessThan(Math.max(before * 3, before + 3_000));
  }, 120_000);
});

describe('logs', () => {
  it('carry their own request id: 20 list and 20 cancel failures at once are attributed 20/20', async () => {
    const api = await start();
    // The key is checked once before the burst (its answer cached, as for any busy key): what
    // this proves is the attribution of the functions' log lines, not 40 simultaneous key
    // checks on a cold authorizer.
    const checked = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${unlimited}` },
    });
    await checked.arrayBuffer();
    expect(checked.status).toBe(200);
    // The orders table goes away: every list and cancel fails (500), and says so in the log.
    const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
    await client.send(
      new DeleteTableCommand({ TableName: localTableNames(api.tablePrefix).orders }),
    );
    client.destroy();
    // Each request until it gets its 500: a 503 (a rate-limit write that ran out of its budget
    // among 40 at once on a busy machine) is retried after Retry-After, as a client does; it
    // logs a warning, never the 'Request failed' line counted below.
    const call = async (method: string, path: string) => {
      for (let attempt = 1; ; attempt++) {
        const response = await fetch(`${api.url}${path}`, {
          method,
          headers: { Authorization: `Bearer ${unlimited}` },
        });
        await response.arrayBuffer();
        if (response.status === 503 && attempt < 5) {
          await sleep(1_000);
          continue;
        }
        expect(response.status).toBe(500);
        return response.headers.get('x-amzn-requestid')!;
      }
    };
    const [lists, cancels] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => call('GET', '/store/orders'))),
      Promise.all(Array.from({ length: 20 }, (_, i) => call('DELETE', `/store/orders/${i + 1}`))),
    ]);
    // Each function writes its line after the client has the answer: wait for all of them.
    const failed = () =>
      api
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{') && line.includes('Request failed'));
    await expect.poll(() => failed().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(40);
    const lines = failed().map(
      (line) => JSON.parse(line) as { correlation_id: string; function_name: string },
    );
    const byFunction = (name: string) =>
      new Set(lines.filter((l) => l.function_name === name).map((l) => l.correlation_id));
    expect(lines).toHaveLength(40);
    expect(byFunction('listOrders')).toEqual(new Set(lists));
    expect(byFunction('cancelOrder')).toEqual(new Set(cancels));
  });

  it('never carry a key: not from the Authorization header, the path, the query or another header', async () => {
    const api = await start();
    const port = Number(new URL(api.url).port);
    const pasted = generateApiKey();
    for (const target of [
      `/v1/store/orders/${pasted}`,
      `/v1/store/orders?api_key=${pasted}`,
      `/v1/${pasted}`,
      `/v1/store/orders/${pasted.replace('_', '%5F')}`,
      `/${encodeURIComponent(`x ${pasted}`)}`,
    ]) {
      await rawRequest(
        port,
        `DELETE ${target} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${unlimited}\r\n` +
          `User-Agent: ${pasted}\r\nConnection: close\r\n\r\n`,
      );
    }
    await fetch(`${api.url}/store/orders`, { headers: { Authorization: `Bearer ${pasted}` } });
    // Every request's access-log line is written once its connection is done: wait for all six.
    const accessLines = () =>
      api
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{"requestId"'));
    await expect.poll(() => accessLines().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(6);
    const log = api.output();
    expect(log).not.toContain(pasted);
    expect(log).not.toContain(pasted.slice(4, 24));
    expect(log).not.toContain(keyHint(pasted));
    expect(log).not.toContain(unlimited);
    // Each request has its access-log line, which names the route by its template.
    expect(accessLines().join('\n')).toContain('"resourcePath":"/store/orders/{orderId}"');
  });
});

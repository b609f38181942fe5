/**
 * Rate limits end to end through `npm start`: the 61st request of a free key, the ban of a key
 * that does not wait as told, and the rate-limit headers on every status a function answers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { localTableNames } from '../../local/local-stack.ts';
import { earlyInAMinute } from '../support/minute-window.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';
import { expectValidAgainstOpenApi } from '../support/openapi.ts';
import { dynamodbEndpoint } from '../support/tables.ts';

const RATE_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
];
const freeKey = generateApiKey();
const proKey = generateApiKey();
const apis: LocalApi[] = [];

function keysFile(): string {
  const path = join(tempStateFile(), '..', 'keys.json');
  writeFileSync(
    path,
    JSON.stringify([
      { key: freeKey, plan: 'free' },
      { key: proKey, plan: 'pro' },
    ]),
  );
  return path;
}

async function start(options: Parameters<typeof startLocalApi>[0] = {}): Promise<LocalApi> {
  const api = await startLocalApi({
    ...options,
    args: ['--keys', keysFile(), ...(options.args ?? [])],
  });
  apis.push(api);
  return api;
}

async function call(api: LocalApi, method: string, path: string, key: string) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}` },
  });
  const body = await response.text();
  await expectValidAgainstOpenApi(response, body, method, path);
  return {
    response,
    body,
    status: response.status,
    header: (name: string) => response.headers.get(name),
  };
}

function expectRateHeaders(headers: Headers): void {
  for (const name of RATE_HEADERS) expect(headers.get(name), name).not.toBeNull();
}

let api: LocalApi;
beforeAll(async () => {
  api = await start();
});
afterAll(async () => {
  await Promise.all(apis.map((a) => a.stop('SIGKILL')));
});

describe('a free key', () => {
  it('is served 60 times in a minute, refused with 429 and Retry-After the 61st, banned when it goes on sending before Retry-After', async () => {
    await earlyInAMinute(20_000);
    const served = [];
    for (let i = 0; i < 60; i++) served.push(await call(api, 'GET', '/store/orders', freeKey));
    expect(served.map((r) => r.status)).toEqual(Array(60).fill(200));
    expect(served.map((r) => Number(r.header('x-ratelimit-remaining')))).toEqual(
      Array.from({ length: 60 }, (_, i) => 59 - i),
    );
    expect(served.every((r) => r.header('x-ratelimit-limit') === '60')).toBe(true);
    const reset = Number(served[0]!.header('x-ratelimit-reset'));
    expect(reset % 60).toBe(0);
    expect(reset * 1000 - Date.now()).toBeLessThanOrEqual(60_000);

    const first = await call(api, 'GET', '/store/orders', freeKey);
    expect(first.status).toBe(429);
    expect(JSON.parse(first.body)).toMatchObject({ code: 'RATE_LIMITED', status: 429 });
    const retryAfter = Number(first.header('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(61);
    expectRateHeaders(first.response.headers);
    expect(first.header('x-ratelimit-remaining')).toBe('0');

    // Refusals 2 to 11 (cancel counts on the same key), each sent before the Retry-After of the
    // one before: they count towards the ban; the 12th goes over the threshold and is banned.
    const refusals = [];
    for (let i = 0; i < 10; i++)
      refusals.push(await call(api, 'DELETE', '/store/orders/1', freeKey));
    expect(refusals.map((r) => (JSON.parse(r.body) as { code: string }).code)).toEqual(
      Array(10).fill('RATE_LIMITED'),
    );
    expect(Number(refusals.at(-1)!.header('retry-after'))).toBeLessThanOrEqual(61);

    const banned = await call(api, 'GET', '/store/orders', freeKey);
    expect(banned.status).toBe(429);
    expect(JSON.parse(banned.body)).toMatchObject({
      code: 'API_KEY_TEMPORARILY_BANNED',
      status: 429,
    });
    expect(Number(banned.header('retry-after'))).toBeGreaterThan(890);
    expect(Number(banned.header('retry-after'))).toBeLessThanOrEqual(900);
    expectRateHeaders(banned.response.headers);

    // Another key is not affected.
    expect((await call(api, 'GET', '/store/orders', proKey)).status).toBe(200);
  });
});

describe('rate-limit headers on every status a function answers', () => {
  it.each([
    [200, 'GET', '/store/orders'],
    [204, 'DELETE', '/store/orders/1'],
    [400, 'DELETE', '/store/orders/abc'],
    [404, 'DELETE', '/store/orders/424242'],
    [409, 'DELETE', '/store/orders/3'],
  ])('%i', async (status, method, path) => {
    const result = await call(api, method, path, proKey);
    expect(result.status).toBe(status);
    expectRateHeaders(result.response.headers);
    expect(result.header('x-ratelimit-limit')).toBe('300');
    expect(result.header('ratelimit-policy')).toBe('"minute";q=300;w=60, "day";q=10000;w=86400');
  });

  it('500, when a table the function needs is gone', async () => {
    const broken = await start();
    const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
    await client.send(
      new DeleteTableCommand({ TableName: localTableNames(broken.tablePrefix).orders }),
    );
    client.destroy();
    const result = await call(broken, 'DELETE', '/store/orders/1', proKey);
    expect(result.status).toBe(500);
    expect(JSON.parse(result.body)).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'An internal error occurred.',
      status: 500,
    });
    expectRateHeaders(result.response.headers);
  });

  it('never on answers the gateway gives before a function runs', async () => {
    const unauthorized = await fetch(`${api.url}/store/orders`);
    expect(unauthorized.status).toBe(401);
    for (const name of RATE_HEADERS) expect(unauthorized.headers.get(name)).toBeNull();
  });
});

/**
 * Keys that may only read, and who cancelled what, from the outside: through `npm start`, an
 * operator issues keys with the CLI; a key that may only read lists (v1) and pages (v2), is
 * refused a cancel with 403 on both versions (counted, with the rate-limit headers), and its
 * 403s leave the list's tag as it was (304 again); a key that may cancel does, no client sees
 * the cancel's trail, and the runbook's step "who cancelled an order" (docs/runbooks.md), run
 * as written against the local API, names when, that key and that request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyFromBody } from '../../lib/keys/api-key.ts';
import type { Order } from '../../lib/orders/order.ts';
import { runCli } from '../admin/support.ts';
import { keysAndSeedArgs, startLocalApi, type LocalApi } from '../support/local-api.ts';
import { expectValidAgainstOpenApi } from '../support/openapi.ts';
import { shellBlocks } from '../support/runbook.ts';

/** The runbook's step: one command line of the operator CLI. */
const RUNBOOK = shellBlocks('runbooks.md', '## Who cancelled an order').trim().split('\n');
/** The order the runbook asks about. */
const ORDER_ID = /^npm run admin -- orders show (\d+) /.exec(RUNBOOK[0] ?? '')?.[1] ?? '';

const ORDERS: Order[] = [
  { id: 1n, petId: 10n, status: 'pending' },
  { id: 2n, petId: 10n, status: 'shipped', complete: true },
  { id: 3n, petId: 11n, status: 'pending' },
  { id: BigInt(ORDER_ID || '0'), petId: 12n, quantity: 1, status: 'pending' },
];

let api: LocalApi;
beforeAll(async () => {
  api = await startLocalApi({
    // The keys come from the CLI; the file's key is not used.
    args: keysAndSeedArgs(
      [{ key: apiKeyFromBody('PermissionsE2eUnusedKey000000000'), plan: 'free' }],
      ORDERS,
    ),
  });
});
afterAll(() => api.stop());

/** The operator CLI against the running local API. */
const admin = (...args: string[]) =>
  runCli(args, { env: { STORE_ORDERS_LOCAL_STATE: api.stateFile } });

async function issue(...flags: string[]): Promise<{ key: string; keyId: string }> {
  const created = await admin('keys', 'create', '--plan', 'pro', '--json', '--local', ...flags);
  expect(created.code, created.stderr).toBe(0);
  return JSON.parse(created.stdout) as { key: string; keyId: string };
}

/** A request to a version's path, checked against that version's document. */
async function call(
  version: 'v1' | 'v2',
  method: string,
  target: string,
  key: string,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${api.url.replace(/\/v1$/, `/${version}`)}${target}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...headers },
  });
  const body = await response.text();
  await expectValidAgainstOpenApi(response, body, method, target.split('?')[0]!, version);
  return { status: response.status, body, headers: response.headers };
}

describe('a key that may only read, through npm start', () => {
  it('lists and pages, is refused a cancel with 403 on both versions, and its 403s change no ETag', async () => {
    const reader = await issue('--read-only');
    const list = await call('v1', 'GET', '/store/orders', reader.key);
    expect(list.status).toBe(200);
    expect(list.body).toContain(`{"id":${ORDER_ID},"petId":12,"quantity":1,"status":"pending"}`);
    const etag = list.headers.get('etag')!;
    expect(etag).toMatch(/^W\//);
    const first = await call('v2', 'GET', '/store/orders?pageSize=2', reader.key);
    expect(first.status).toBe(200);
    const next = /^<\/v2([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')![1]!;
    expect((await call('v2', 'GET', next, reader.key)).status).toBe(200);
    const pageTag = first.headers.get('etag')!;

    for (const version of ['v1', 'v2'] as const) {
      const refused = await call(version, 'DELETE', `/store/orders/${ORDER_ID}`, reader.key);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'PERMISSION_DENIED', status: 403 });
      expect(refused.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    }
    // Nothing changed: both tags still hold, for this key and for any other.
    const writer = await issue();
    for (const key of [reader.key, writer.key]) {
      const again = await call('v1', 'GET', '/store/orders', key, { 'If-None-Match': etag });
      expect(again.status).toBe(304);
      const page = await call('v2', 'GET', '/store/orders?pageSize=2', key, {
        'If-None-Match': pageTag,
      });
      expect(page.status).toBe(304);
    }
  });
});

describe('who cancelled an order: the runbook step, against npm start', () => {
  it('is one command of the operator CLI', () => {
    expect(RUNBOOK).toHaveLength(1);
    expect(RUNBOOK[0]).toMatch(/^npm run admin -- orders show \d+ --stage production$/);
  });

  it('names when, the key and the request of the cancel, which no client sees', async () => {
    const writer = await issue('--label', 'the warehouse screen that should not cancel');
    const before = Date.now();
    const cancel = await fetch(`${api.url}/store/orders/${ORDER_ID}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${writer.key}` },
    });
    expect(cancel.status).toBe(204);
    const requestId = cancel.headers.get('x-amzn-requestid')!;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    const after = Date.now();
    const page = await call('v2', 'GET', '/store/orders', writer.key);
    expect(page.body).toContain(`{"id":${ORDER_ID},"petId":12,"quantity":1,"status":"cancelled"}`);
    expect(page.body).not.toMatch(/cancelledAt|cancelledBy|cancelRequestId|key_/);

    // The runbook's line as written, its stage the local API.
    const argv = RUNBOOK[0]!.replace(/^npm run admin -- /, '').split(' ');
    argv.splice(argv.indexOf('--stage'), 2, '--local');
    const shown = await admin(...argv);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^ {2}status {8}cancelled$/m);
    const cancelledAt = /^ {2}cancelled at {2}(\S+)$/m.exec(shown.stdout)?.[1];
    expect(Date.parse(cancelledAt!)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(cancelledAt!)).toBeLessThanOrEqual(after);
    expect(cancelledAt).toBe(new Date(Date.parse(cancelledAt!)).toISOString());
    expect(shown.stdout).toContain(`  by key        ${writer.keyId}\n`);
    expect(shown.stdout).toContain(`  request id    ${requestId}\n`);
    // A key id, never a key.
    expect(shown.stdout).not.toContain('sok_');
    // The key id leads to the key: its label says who holds it.
    const key = await admin('keys', 'show', writer.keyId, '--local');
    expect(key.stdout).toContain('the warehouse screen that should not cancel');
  });
});

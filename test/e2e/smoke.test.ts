/**
 * The smoke suite (`npm run smoke`) as a program, against `npm start`'s API: it passes read-only
 * and with a real cancel, and fails (non-zero) with a key the API does not know.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { DEMO_KEYS, DEMO_ORDERS } from '../../local/demo-data.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { runCli } from '../admin/support.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';

const SMOKE = join(PROJECT_ROOT, 'smoke', 'smoke.ts');
// The free demo key (60 a minute): the suite must fit in the smallest plan. The other runs take
// the pro key: four runs of the suite in a minute would not fit in one free key's.
const freeKey = DEMO_KEYS.find((k) => k.plan === 'free')!.key;
const proKey = DEMO_KEYS.find((k) => k.plan === 'pro')!.key;
const pending = DEMO_ORDERS.find((o) => o.status === 'pending')!.id.toString();

interface Run {
  readonly code: number;
  readonly lines: string[];
  readonly stderr: string;
}

function smoke(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SMOKE, ...args],
      { cwd: PROJECT_ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, lines: stdout.trimEnd().split('\n'), stderr });
      },
    );
  });
}

/** The pet of the first listed order that has one: the suite's pet pages. */
const PET = [...DEMO_ORDERS]
  .sort((a, b) => (a.id < b.id ? -1 : 1))
  .find((o) => o.petId !== undefined)!.petId!;

const READ_ONLY_CHECKS = [
  'ok   401 without Authorization',
  'ok   401 with a well-formed unknown key',
  'ok   401 with a malformed Authorization header',
  'ok   404 ROUTE_NOT_FOUND for an unknown path',
  'ok   405 METHOD_NOT_ALLOWED for POST /store/orders, Allow: GET',
  'ok   405 METHOD_NOT_ALLOWED for GET /store/orders/1, Allow: DELETE',
  'ok   200 list: a JSON array sorted by id, int64 ids exact',
  'ok   rate-limit headers on the list',
  "ok   304 Not Modified for the list's ETag (or 200 if the list changed since)",
  'ok   404 ORDER_NOT_FOUND cancelling an order that does not exist',
  'ok   400 INVALID_ORDER_ID for a malformed order id',
  'ok   v2: 200 a page of two orders, sorted, int64 ids exact',
  "ok   v2: the next page, at the Link header's address, after the first",
  'ok   v2: 200 a page of status=pending, every order matching',
  'ok   v2: 200 a page of a ship-date range, every order matching',
  'ok   v2: 200 a page of status=pending with a ship-date range, every order matching',
  `ok   v2: 200 a page of petId=${PET}, every order matching`,
  `ok   v2: 200 a page of petId=${PET} with a ship-date range, every order matching`,
  'ok   v2: 400 INVALID_PARAMETER for an unknown status',
  "ok   v2: 304 Not Modified for a page's ETag (or 200 if the store changed since)",
];

let api: LocalApi;
beforeAll(async () => {
  api = await startLocalApi();
});
afterAll(async () => {
  await api?.stop();
});

describe('npm run smoke against npm start', () => {
  it('passes read-only, one line per check, and changes nothing', async () => {
    const run = await smoke(['--base-url', api.url, '--api-key', freeKey]);
    expect(run.code, run.lines.join('\n') + run.stderr).toBe(0);
    expect(run.lines).toEqual([
      `smoke: ${api.url} (read-only)`,
      ...READ_ONLY_CHECKS,
      `smoke: ${READ_ONLY_CHECKS.length} passed, 0 failed, 0 skipped`,
    ]);
    expect(run.lines.join('\n')).not.toContain(freeKey);
    const listed = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${freeKey}` },
    });
    expect(await listed.text()).toMatch(new RegExp(`"id":${pending},[^}]*"status":"pending"`));
  });

  it('cancels a pending order twice (204, then 204 again) when given --pending-order', async () => {
    const run = await smoke([
      '--base-url',
      api.url,
      '--api-key',
      proKey,
      '--pending-order',
      pending,
    ]);
    expect(run.code, run.lines.join('\n') + run.stderr).toBe(0);
    expect(run.lines).toEqual([
      `smoke: ${api.url} (cancels order ${pending})`,
      ...READ_ONLY_CHECKS,
      `ok   204 cancelling pending order ${pending}`,
      `ok   204 cancelling order ${pending} again (idempotent)`,
      `smoke: ${READ_ONLY_CHECKS.length + 2} passed, 0 failed, 0 skipped`,
    ]);
  });

  it('checks a key that may only read when given --read-only-key: it reads, and is refused a cancel', async () => {
    const created = await runCli(
      ['keys', 'create', '--plan', 'free', '--read-only', '--json', '--local'],
      { env: { STORE_ORDERS_LOCAL_STATE: api.stateFile } },
    );
    expect(created.code, created.stderr).toBe(0);
    const readOnly = (JSON.parse(created.stdout) as { key: string }).key;
    const run = await smoke([
      '--base-url',
      api.url,
      '--api-key',
      proKey,
      '--read-only-key',
      readOnly,
    ]);
    expect(run.code, run.lines.join('\n') + run.stderr).toBe(0);
    const readOnlyChecks = [
      'ok   read-only key: 200 list',
      'ok   read-only key: 403 PERMISSION_DENIED cancelling, in v1 and v2, with the rate-limit headers',
      "ok   read-only key: 304 for its list's ETag after its 403s (or 200 if the list changed since)",
      'ok   read-only key: v2: 200 a page',
    ];
    expect(run.lines).toEqual([
      `smoke: ${api.url} (read-only)`,
      ...READ_ONLY_CHECKS,
      ...readOnlyChecks,
      `smoke: ${READ_ONLY_CHECKS.length + readOnlyChecks.length} passed, 0 failed, 0 skipped`,
    ]);
    expect(run.lines.join('\n')).not.toContain(readOnly);
    expect(run.lines.join('\n')).not.toContain(proKey);
    // Given a key that may cancel as the read-only one, the suite fails: the check has teeth.
    const wrong = await smoke([
      '--base-url',
      api.url,
      '--api-key',
      proKey,
      '--read-only-key',
      proKey,
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.lines).toContain(
      'FAIL read-only key: 403 PERMISSION_DENIED cancelling, in v1 and v2, with the rate-limit headers: status 404, expected 403',
    );
  });

  it('fails, naming the failed checks, with a key the API does not know', async () => {
    const run = await smoke(['--base-url', api.url, '--api-key', generateApiKey()]);
    expect(run.code).toBe(1);
    expect(run.lines).toContain('ok   401 without Authorization');
    expect(run.lines.some((l) => l.startsWith('FAIL 200 list') && l.includes('status 401'))).toBe(
      true,
    );
    expect(run.lines.at(-1)).toMatch(/^smoke: \d+ passed, [1-9]\d* failed/);
  });

  it('exits 2 with the usage on a bad command line', async () => {
    const run = await smoke(['--base-url', 'ftp://example.com', '--api-key', freeKey]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: --base-url must be an http\(s\) URL/);
    expect(run.stderr).toContain('usage: npm run smoke --');
  });
});

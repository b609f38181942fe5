/**
 * An on-call engineer's commands on a banned key, run as they run them (`npm run admin -- …
 * --local` against `npm start -- --ban-after 2 --ban-seconds 120`): `keys show` sees the
 * counts, refusals and ban the limiter sees; `keys unban` lifts the ban through the real API;
 * and the limits the service cannot honour are refused by `keys create` and `keys set-plan`.
 * The CLI runs as a process here (runCliProcess), as the operator's shell runs it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAN_RECHECK_MS } from '../../lib/dynamodb/rate-limit-items.ts';
import { ITEM_PER_MINUTE_CEILING } from '../../lib/limits/capacity.ts';
import { STAGE_THROTTLES, STACK_OUTPUTS, stackNames } from '../../lib/deployment.ts';
import { earlyInAMinute } from '../support/minute-window.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import {
  expectOneLineError,
  printedKey,
  printedKeyId,
  runCliProcess,
  tempFile,
} from './support.ts';

let api: LocalApi;
beforeAll(async () => {
  api = await startLocalApi({ args: ['--ban-after', '2', '--ban-seconds', '120'] });
});
afterAll(() => api.stop());

const local = (...args: string[]) =>
  runCliProcess([...args, '--local'], { env: { STORE_ORDERS_LOCAL_STATE: api.stateFile } });
const get = (key: string) =>
  fetch(`${api.url}/store/orders`, { headers: { Authorization: `Bearer ${key}` } });

describe('keys show and keys unban, against npm start', () => {
  it('shows a burst that got its key banned, lifts the ban, and the API sees it lifted', async () => {
    const created = await local(
      'keys',
      'create',
      '--plan',
      'enterprise',
      '--per-minute',
      '5',
      '--per-day',
      '100',
    );
    expect(created.code, created.stderr).toBe(0);
    const [key, keyId] = [printedKey(created.stdout), printedKeyId(created.stdout)];

    const fresh = await local('keys', 'show', keyId);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toMatch(/^ {2}plan {9}enterprise: 5\/min, 100\/day$/m);
    expect(fresh.stdout).toMatch(/^ {2}minute {7}0 of 5 /m);
    expect(fresh.stdout).toMatch(/^ {2}ban {10}none$/m);
    expect(fresh.stdout).toMatch(/^ {2}next request admitted$/m);

    // A burst, one at a time: 5 admitted, then 429s until the ban (threshold 2), all in one
    // minute window (refusals are counted per window), and what follows in it too (the
    // minute's 5 still used after the unban): not in a window's last 25 s (about 5 s needed
    // on a quiet machine, four CLI processes among them).
    await earlyInAMinute(25_000);
    const codes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const response = await get(key);
      codes.push(
        response.status === 200 ? '200' : ((await response.json()) as { code: string }).code,
      );
    }
    expect(codes.slice(0, 5)).toEqual(Array(5).fill('200'));
    expect(codes.slice(5, 8)).toEqual(Array(3).fill('RATE_LIMITED'));
    expect(codes.slice(8)).toEqual(Array(2).fill('API_KEY_TEMPORARILY_BANNED'));

    const banned = await local('keys', 'show', keyId, '--json');
    expect(banned.code, banned.stderr).toBe(0);
    const view = JSON.parse(banned.stdout) as {
      key: { status: string };
      counter: {
        minute: { used: number };
        refusals: number;
        banAfterRefusals: number;
        bannedUntil: string;
        next: { outcome: string; retryAfterSeconds: number };
      };
    };
    expect(view.key.status).toBe('active');
    expect(view.counter).toMatchObject({
      minute: { used: 5, limit: 5 },
      day: { used: 5, limit: 100 },
      refusals: 0,
      banAfterRefusals: 2,
    });
    expect(Date.parse(view.counter.bannedUntil) - Date.now()).toBeGreaterThan(100_000);
    expect(view.counter.next).toMatchObject({ outcome: 'banned' });
    expect(view.counter.next.retryAfterSeconds).toBeGreaterThan(100);
    const text = await local('keys', 'show', keyId);
    expect(text.stdout).toMatch(/^ {2}state {8}active, BANNED$/m);
    expect(text.stdout).toMatch(
      new RegExp(
        `^ {2}ban {10}until \\S+Z \\(1\\d\\d s left\\): keys unban ${keyId} lifts it$`,
        'm',
      ),
    );

    const unbanned = await local('keys', 'unban', keyId);
    expect(unbanned.code, unbanned.stderr).toBe(0);
    expect(unbanned.stdout).toMatch(
      new RegExp(
        `^Unbanned key ${keyId} on the local API \\(http\\S+\\): ban until \\S+Z lifted, refusals counted 0 → 0; a request now is refused 429 RATE_LIMITED for \\d+ s \\(its limits\\) \\(within 1 s everywhere\\)\\.\\n$`,
      ),
    );
    const after = JSON.parse((await local('keys', 'show', keyId, '--json')).stdout) as typeof view;
    expect(after.counter.bannedUntil).toBeUndefined();
    expect(after.counter.next.outcome).toBe('limited');
    // Through the API: no longer banned (the minute's 5 are still used: RATE_LIMITED).
    await sleep(BAN_RECHECK_MS + 200);
    const response = await get(key);
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ code: 'RATE_LIMITED' });

    const again = await local('keys', 'unban', keyId);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^Key ${keyId} is not banned on the local API .*; nothing changed\\.\\n$`),
    );
  });

  it('refuses an unknown key id in one line', async () => {
    for (const command of ['show', 'unban']) {
      expectOneLineError(
        await local('keys', command, 'key_NoSuchKey'),
        1,
        /^error: key key_NoSuchKey was not found$/,
      );
    }
  });
});

describe('limits the service cannot honour', () => {
  it('keys create refuses a per-minute limit above what one counter item sustains, with the ceiling', async () => {
    const result = await local(
      'keys',
      'create',
      '--plan',
      'enterprise',
      '--per-minute',
      '1000000000',
      '--per-day',
      '1000000000',
    );
    expectOneLineError(
      result,
      1,
      new RegExp(
        `^error: refused, nothing changed: a per-minute limit of 1000000000 cannot be honoured: the ceiling is ${ITEM_PER_MINUTE_CEILING}/min \\(one key's counter item takes 1000 writes/s \\(DynamoDB's per-item limit\\), a request costs it up to 3 writes, 80% of it planned\\)$`,
      ),
    );
    expect(result.stdout).toBe('');
    const atCeiling = await local(
      'keys',
      'create',
      '--plan',
      'enterprise',
      '--per-minute',
      String(ITEM_PER_MINUTE_CEILING),
      '--per-day',
      String(ITEM_PER_MINUTE_CEILING * 1440),
    );
    expect(atCeiling.code, atCeiling.stderr).toBe(0);
    expectOneLineError(
      await local(
        'keys',
        'create',
        '--plan',
        'enterprise',
        '--per-minute',
        '100',
        '--per-day',
        String(ITEM_PER_MINUTE_CEILING * 1440 + 1),
      ),
      1,
      /per-day limit of 23040001 cannot be honoured: the ceiling is 23040000\/day/,
    );
  });

  describe('on a stage, the stage throttle binds first where it is lower', () => {
    let t: TestTables;
    let outputs: string;
    beforeAll(async () => {
      t = await createTestTables('admin-ceiling');
      outputs = tempFile(
        'cdk-outputs.json',
        JSON.stringify({
          [stackNames('staging').data]: {
            [STACK_OUTPUTS.region]: 'local',
            [STACK_OUTPUTS.apiKeysTable]: t.tables.apiKeys,
          },
        }),
      );
    });
    afterAll(() => t.drop());

    it("keys set-plan refuses a limit above staging's throttle and leaves the key as it was", async () => {
      const onStaging = (...args: string[]) =>
        runCliProcess([
          ...args,
          '--stage',
          'staging',
          '--outputs',
          outputs,
          '--endpoint',
          t.endpoint,
        ]);
      const created = await onStaging('keys', 'create', '--plan', 'pro');
      const keyId = printedKeyId(created.stdout);
      const throttle = STAGE_THROTTLES.staging.rateLimit;
      expect(throttle * 60).toBeLessThan(ITEM_PER_MINUTE_CEILING);
      expectOneLineError(
        await onStaging(
          'keys',
          'set-plan',
          keyId,
          '--plan',
          'enterprise',
          '--per-minute',
          String(throttle * 60 + 1),
          '--per-day',
          '20000000',
        ),
        1,
        new RegExp(
          `^error: refused, nothing changed: a per-minute limit of ${throttle * 60 + 1} cannot be honoured: the ceiling is ${throttle * 60}/min \\(the staging stage's API Gateway throttle is ${throttle} requests/s for all keys together\\)$`,
        ),
      );
      const listed = JSON.parse((await onStaging('keys', 'list', '--json')).stdout) as {
        keyId: string;
        plan: string;
      }[];
      expect(listed).toEqual([expect.objectContaining({ keyId, plan: 'pro' })]);
    });
  });
});

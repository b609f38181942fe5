/** `keys …` through the real CLI, on isolated tables of the run's DynamoDB Local. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { authenticate } from '../../lib/keys/authenticate.ts';
import { newKeyRecord } from '../../lib/keys/plaintext-keys.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import {
  expectOneLineError,
  printedKey,
  printedKeyId,
  runCli,
  scanAll,
  tableFlags,
} from './support.ts';

let t: TestTables;
let store: DynamoDbKeyStore;
/** Every plaintext key the CLI printed in this file: none may ever reach the table. */
const issued: string[] = [];

beforeAll(async () => {
  t = await createTestTables('admin-keys');
  store = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
});
afterAll(() => t.drop());

const keys = (...args: string[]) => runCli(['keys', ...args, ...tableFlags(t)]);
const bearer = (key: string) => `Bearer ${key}`;

async function createKey(...args: string[]): Promise<{ key: string; keyId: string }> {
  const result = await keys('create', ...args);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const key = printedKey(result.stdout);
  issued.push(key);
  return { key, keyId: printedKeyId(result.stdout) };
}

describe('keys create', () => {
  it('prints the key once with its public id, and the key works at once', async () => {
    const result = await keys('create', '--plan', 'pro', '--label', 'ci pipeline');
    expect(result.code).toBe(0);
    const key = printedKey(result.stdout);
    issued.push(key);
    expect(result.stdout).toMatch(
      /^Created key key_\w+ \(plan pro: 300\/min, 10000\/day; permissions read,cancel, label "ci pipeline"\) on http/,
    );
    expect(result.stdout).toContain('cannot be shown again');
    expect(result.stdout.split(key)).toHaveLength(2);
    const caller = await authenticate(store, bearer(key), new Date());
    expect(caller).toEqual({
      keyId: printedKeyId(result.stdout),
      plan: 'pro',
      limits: PLAN_LIMITS.pro,
      permissions: ['read', 'cancel'],
    });
  });

  it('issues a key that may only read with --read-only, or the permissions --permissions names', async () => {
    const readOnly = await keys('create', '--plan', 'free', '--read-only');
    expect(readOnly.code, readOnly.stderr).toBe(0);
    issued.push(printedKey(readOnly.stdout));
    expect(readOnly.stdout).toMatch(
      /^Created key key_\w+ \(plan free: [^;]+; permissions read\) on/,
    );
    expect(
      (await authenticate(store, bearer(printedKey(readOnly.stdout)), new Date()))?.permissions,
    ).toEqual(['read']);
    expect((await store.findById(printedKeyId(readOnly.stdout)))?.permissions).toEqual(['read']);

    // Any order, once each: stored in one order.
    for (const [flag, stored] of [
      ['cancel', ['cancel']],
      ['cancel, read', ['read', 'cancel']],
      ['read,read', ['read']],
    ] as const) {
      const { key, keyId } = await createKey('--plan', 'free', '--permissions', flag);
      expect((await store.findById(keyId))?.permissions).toEqual(stored);
      expect((await authenticate(store, bearer(key), new Date()))?.permissions).toEqual(stored);
    }
    const json = await keys('create', '--plan', 'free', '--read-only', '--json');
    const printed = JSON.parse(json.stdout) as { key: string; permissions: string[] };
    issued.push(printed.key);
    expect(printed.permissions).toEqual(['read']);
  });

  it('stores only the hash of the key, with its plan, label and status', async () => {
    const { key, keyId } = await createKey('--plan', 'free', '--label', 'hashed');
    const record = await store.findByHash(hashApiKey(key));
    expect(record).toMatchObject({ keyId, plan: 'free', label: 'hashed', status: 'active' });
  });

  it('issues an enterprise key with its own limits, and prints JSON with --json', async () => {
    const result = await keys(
      'create',
      '--plan',
      'enterprise',
      '--per-minute',
      '7',
      '--per-day',
      '500',
      '--json',
    );
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout) as { keyId: string; key: string };
    issued.push(printed.key);
    expect(printed).toEqual({
      keyId: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^sok_/),
      plan: 'enterprise',
      limits: { perMinute: 7, perDay: 500 },
      permissions: ['read', 'cancel'],
    });
    expect((await authenticate(store, bearer(printed.key), new Date()))?.limits).toEqual({
      perMinute: 7,
      perDay: 500,
    });
  });

  it.each([
    [
      ['--plan', 'gold'],
      /^error: plan must be one of free, pro, business, enterprise, got "gold"$/,
    ],
    [[], /^error: a plan is required: one of free, pro, business, enterprise$/],
    [
      ['--plan', 'enterprise', '--per-minute', '5'],
      /enterprise plan needs both a per-minute and a per-day limit/,
    ],
    [['--plan', 'enterprise', '--per-minute', '0', '--per-day', '5'], /enterprise plan needs both/],
    [
      ['--plan', 'enterprise', '--per-minute', '9', '--per-day', '5'],
      /^error: --per-minute \(9\) cannot be above --per-day \(5\)$/,
    ],
    [
      ['--plan', 'pro', '--per-minute', '5', '--per-day', '9'],
      /^error: plan pro has fixed limits \(300\/min, 10000\/day\)/,
    ],
    [
      ['--plan', 'enterprise', '--per-minute', 'lots', '--per-day', '5'],
      /^error: --per-minute must be a whole number, got "lots"$/,
    ],
    [['--plan', 'free', '--label', 'two\nlines'], /^error: label must be 1 to 200 characters/],
    [
      ['--plan', 'free', '--label', `for ${generateApiKey()}`],
      /^error: label must not hold an API key \(sok_\w{4}…\): a label is stored and listed as it is$/,
    ],
    [['--plan', 'free', '--colour', 'red'], /^error: Unknown option '--colour'$/],
    [
      ['--plan', 'free', '--permissions', 'write'],
      /^error: permissions must be read, cancel or both, comma-separated \(e\.g\. read,cancel\), got "write"$/,
    ],
    [['--plan', 'free', '--permissions', ''], /^error: permissions must be read, cancel or both/],
    [
      ['--plan', 'free', '--permissions', 'read', '--read-only'],
      /^error: give --permissions or --read-only, not both$/,
    ],
    [['--plan', 'free', 'extra'], /^error: unexpected argument "extra"/],
  ])('refuses %j with one line, exit 2, and stores nothing', async (args, message) => {
    const before = (await scanAll(t.client, t.tables.apiKeys)).length;
    expectOneLineError(await keys('create', ...args), 2, message);
    expect(await scanAll(t.client, t.tables.apiKeys)).toHaveLength(before);
  });
});

describe('keys list', () => {
  it('shows id, label, plan, limits, permissions, status, created and expiry, and never a key or hash', async () => {
    const { key, keyId } = await createKey(
      '--plan',
      'business',
      '--label',
      'listed',
      '--read-only',
    );
    const text = await keys('list');
    expect(text.code).toBe(0);
    const header = text.stdout.split('\n')[0];
    expect(header).toMatch(
      /^ID\s+LABEL\s+PLAN\s+PER MIN\s+PER DAY\s+PERMISSIONS\s+STATUS\s+CREATED\s+EXPIRES/,
    );
    const row = text.stdout.split('\n').find((line) => line.startsWith(keyId));
    expect(row).toMatch(
      new RegExp(`^${keyId}\\s+listed\\s+business\\s+1000\\s+100000\\s+read\\s+active\\s+\\d{4}-`),
    );

    const json = await keys('list', '--json');
    const views = JSON.parse(json.stdout) as { keyId: string }[];
    expect(views.find((view) => view.keyId === keyId)).toEqual({
      keyId,
      label: 'listed',
      plan: 'business',
      limits: PLAN_LIMITS.business,
      permissions: ['read'],
      status: 'active',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    for (const output of [text.stdout, json.stdout]) {
      expect(output).not.toContain(key);
      expect(output).not.toContain(hashApiKey(key));
      expect(output).not.toMatch(/sok_|[0-9a-f]{64}|keyHash/);
    }
  });
});

describe('keys revoke', () => {
  it('revokes a key: it is refused from then on; revoking again changes nothing', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    const result = await keys('revoke', keyId);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Revoked key ${keyId} \\(plan free`));
    expect(await authenticate(store, bearer(key), new Date())).toBeUndefined();
    const again = await keys('revoke', keyId);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^Key ${keyId} was already revoked \\(at .*\\); nothing changed\\.$`, 'm'),
    );
    expect(JSON.parse((await keys('list', '--json')).stdout)).toContainEqual(
      expect.objectContaining({ keyId, status: 'revoked', revokedAt: expect.any(String) }),
    );
  });

  it('refuses an unknown key id (exit 1) and a malformed one (exit 2)', async () => {
    expectOneLineError(
      await keys('revoke', 'key_DoesNotExist'),
      1,
      /^error: key key_DoesNotExist was not found$/,
    );
    expectOneLineError(await keys('revoke', 'key_a-b'), 2, /^error: key id must look like key_/);
    expectOneLineError(
      await keys('revoke', 'sok_notAnId'),
      2,
      /^error: that is an API key, not a key id \(key_…\): got sok_notA…;/,
    );
    expectOneLineError(await keys('revoke'), 2, /^error: missing <key-id>/);
  });
});

describe('keys rotate', () => {
  it('issues a successor that works at once while the old key works until the grace ends', async () => {
    const { key: oldKey, keyId: oldId } = await createKey(
      '--plan',
      'enterprise',
      '--per-minute',
      '9',
      '--per-day',
      '99',
      '--label',
      'rotating',
    );
    const before = Date.now();
    const result = await keys('rotate', oldId, '--grace', '2h');
    expect(result.code).toBe(0);
    const newKey = printedKey(result.stdout);
    issued.push(newKey);
    expect(newKey).not.toBe(oldKey);
    const now = new Date();
    const [oldCaller, newCaller] = await Promise.all([
      authenticate(store, bearer(oldKey), now),
      authenticate(store, bearer(newKey), now),
    ]);
    expect(oldCaller?.keyId).toBe(oldId);
    expect(newCaller).toEqual({
      keyId: expect.not.stringMatching(oldId),
      plan: 'enterprise',
      limits: { perMinute: 9, perDay: 99 },
      permissions: ['read', 'cancel'],
    });
    const old = await store.findById(oldId);
    const expiry = Date.parse(old?.expiresAt ?? '');
    expect(expiry).toBeGreaterThanOrEqual(before + 2 * 3_600_000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 2 * 3_600_000);
    expect(old?.replacedBy).toBe(newCaller?.keyId);
    expect((await store.findById(newCaller?.keyId ?? ''))?.label).toBe('rotating');
    expect(result.stdout).toContain(`Old key ${oldId} works until ${old?.expiresAt}`);
    // The old key cannot be rotated a second time: its successor can.
    expectOneLineError(
      await keys('rotate', oldId),
      1,
      new RegExp(`^error: key ${oldId} was already rotated to ${newCaller?.keyId}`),
    );
  });

  it("keeps the key's permissions: a read-only key's successor may only read", async () => {
    const { keyId } = await createKey('--plan', 'free', '--read-only');
    const result = await keys('rotate', keyId, '--json');
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as { key: string; keyId: string };
    issued.push(printed.key);
    expect((await store.findById(printed.keyId))?.permissions).toEqual(['read']);
    expect((await authenticate(store, bearer(printed.key), new Date()))?.permissions).toEqual([
      'read',
    ]);
  });

  it('defaults the grace to 24 hours', async () => {
    const { keyId } = await createKey('--plan', 'free');
    const result = await keys('rotate', keyId, '--json');
    const printed = JSON.parse(result.stdout) as { key: string; oldKeyExpiresAt: string };
    issued.push(printed.key);
    const hours = (Date.parse(printed.oldKeyExpiresAt) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
  });

  it('with --grace 0s the old key stops at once, and an expired key is not rotated', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    const result = await keys('rotate', keyId, '--grace', '0s');
    issued.push(printedKey(result.stdout));
    expect(await authenticate(store, bearer(key), new Date())).toBeUndefined();
    expectOneLineError(
      await keys('rotate', keyId),
      1,
      new RegExp(`^error: key ${keyId} expired at `),
    );
  });

  it('refuses a revoked key, an unknown key and a bad grace, changing nothing', async () => {
    const { keyId } = await createKey('--plan', 'pro');
    await keys('revoke', keyId);
    const before = await scanAll(t.client, t.tables.apiKeys);
    expectOneLineError(
      await keys('rotate', keyId),
      1,
      new RegExp(`^error: key ${keyId} is revoked; a revoked key cannot be rotated`),
    );
    expectOneLineError(
      await keys('rotate', 'key_Nobody'),
      1,
      /^error: key key_Nobody was not found$/,
    );
    for (const grace of ['2w', '24', '-1h', '1.5h', '91d']) {
      expectOneLineError(
        await keys('rotate', keyId, `--grace=${grace}`),
        2,
        /^error: grace must be/,
      );
    }
    expect(await scanAll(t.client, t.tables.apiKeys)).toEqual(before);
  });
});

describe('keys set-plan', () => {
  it('moves a key to another plan; enterprise takes its own limits', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    const result = await keys('set-plan', keyId, '--plan', 'business');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^Key ${keyId}: plan free \\(60/min, 1000/day\\) → business \\(1000/min, 100000/day\\)`,
      ),
    );
    expect((await authenticate(store, bearer(key), new Date()))?.plan).toBe('business');
    await keys('set-plan', keyId, '--plan', 'enterprise', '--per-minute', '3', '--per-day', '4');
    expect((await authenticate(store, bearer(key), new Date()))?.limits).toEqual({
      perMinute: 3,
      perDay: 4,
    });
    await keys('set-plan', keyId, '--plan', 'pro');
    expect(await store.findById(keyId)).not.toHaveProperty('limits');
    expect((await authenticate(store, bearer(key), new Date()))?.limits).toEqual(PLAN_LIMITS.pro);
  });

  it('refuses bad plans and limits (exit 2) and revoked or rotated keys (exit 1)', async () => {
    const { keyId } = await createKey('--plan', 'free');
    expectOneLineError(await keys('set-plan', keyId, '--plan', 'gold'), 2, /plan must be one of/);
    expectOneLineError(
      await keys('set-plan', keyId, '--plan', 'enterprise'),
      2,
      /enterprise plan needs/,
    );
    expectOneLineError(
      await keys('set-plan', keyId, '--plan', 'pro', '--per-day', '5'),
      2,
      /fixed limits/,
    );
    const rotated = await keys('rotate', keyId, '--json');
    issued.push((JSON.parse(rotated.stdout) as { key: string }).key);
    expectOneLineError(
      await keys('set-plan', keyId, '--plan', 'pro'),
      1,
      /was rotated to key_\w+ and expires at/,
    );
    const { keyId: revokedId } = await createKey('--plan', 'free');
    await keys('revoke', revokedId);
    expectOneLineError(
      await keys('set-plan', revokedId, '--plan', 'pro'),
      1,
      /is revoked; a revoked key cannot change plan/,
    );
    expect((await store.findById(revokedId))?.plan).toBe('free');
  });
});

describe('keys set-permissions', () => {
  it('changes what a key may do; the same permissions again change nothing', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    const result = await keys('set-permissions', keyId, '--read-only');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^Key ${keyId}: permissions read,cancel → read\\. It takes effect within`),
    );
    expect((await authenticate(store, bearer(key), new Date()))?.permissions).toEqual(['read']);
    const record = await store.findById(keyId);
    expect(record?.version).toBe(1);

    const again = await keys('set-permissions', keyId, '--permissions', 'read');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(`Key ${keyId} already has the permissions read; nothing changed.\n`);
    expect((await store.findById(keyId))?.version).toBe(1);

    const shown = await keys('show', keyId, '--table-rate-limits', t.tables.rateLimits);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^ {2}permissions {2}read$/m);
    const json = await keys('show', keyId, '--json', '--table-rate-limits', t.tables.rateLimits);
    expect((JSON.parse(json.stdout) as { key: object }).key).toMatchObject({
      permissions: ['read'],
    });

    await keys('set-permissions', keyId, '--permissions', 'cancel,read');
    expect((await authenticate(store, bearer(key), new Date()))?.permissions).toEqual([
      'read',
      'cancel',
    ]);
  });

  it('refuses no or bad permissions (exit 2) and revoked or rotated keys (exit 1), changing nothing', async () => {
    const { keyId } = await createKey('--plan', 'free');
    expectOneLineError(
      await keys('set-permissions', keyId),
      2,
      /^error: give the key's permissions: --permissions with read, cancel or both \(comma-separated\), or --read-only$/,
    );
    expectOneLineError(
      await keys('set-permissions', keyId, '--permissions', 'delete'),
      2,
      /^error: permissions must be read, cancel or both/,
    );
    const rotated = await keys('rotate', keyId, '--json');
    issued.push((JSON.parse(rotated.stdout) as { key: string }).key);
    expectOneLineError(
      await keys('set-permissions', keyId, '--read-only'),
      1,
      /was rotated to key_\w+ and expires at .*; change the permissions of key_\w+ instead$/,
    );
    const { keyId: revokedId } = await createKey('--plan', 'free');
    await keys('revoke', revokedId);
    const before = await scanAll(t.client, t.tables.apiKeys);
    expectOneLineError(
      await keys('set-permissions', revokedId, '--read-only'),
      1,
      /is revoked; a revoked key cannot change permissions/,
    );
    expect(await scanAll(t.client, t.tables.apiKeys)).toEqual(before);
  });
});

describe('a key stored before permissions existed', () => {
  /** A key as the CLI stored it before permissions: no permissions attribute. */
  async function legacyKey(): Promise<{ key: string; keyId: string }> {
    const key = generateApiKey();
    const { permissions, ...record } = newKeyRecord({ key, plan: 'pro' }, new Date());
    expect(permissions).toEqual(['read', 'cancel']);
    expect(await store.create(record)).toBe(true);
    issued.push(key);
    return { key, keyId: record.keyId };
  }

  it('may do everything, is listed so, and its successor is stored with both permissions', async () => {
    const { key, keyId } = await legacyKey();
    expect(await store.findById(keyId)).not.toHaveProperty('permissions');
    expect((await authenticate(store, bearer(key), new Date()))?.permissions).toEqual([
      'read',
      'cancel',
    ]);
    const views = JSON.parse((await keys('list', '--json')).stdout) as { keyId: string }[];
    expect(views.find((view) => view.keyId === keyId)).toMatchObject({
      permissions: ['read', 'cancel'],
    });
    const rotated = await keys('rotate', keyId, '--json');
    const printed = JSON.parse(rotated.stdout) as { key: string; keyId: string };
    issued.push(printed.key);
    expect((await store.findById(printed.keyId))?.permissions).toEqual(['read', 'cancel']);
  });

  it('can be made read-only', async () => {
    const { key, keyId } = await legacyKey();
    const result = await keys('set-permissions', keyId, '--read-only');
    expect(result.stdout).toMatch(/permissions read,cancel → read\./);
    expect((await authenticate(store, bearer(key), new Date()))?.permissions).toEqual(['read']);
  });
});

describe('storage failures', () => {
  it('names the table when it does not exist', async () => {
    const result = await runCli([
      'keys',
      'list',
      '--endpoint',
      t.endpoint,
      '--table-keys',
      'no-such-table',
    ]);
    expectOneLineError(
      result,
      1,
      /^error: table no-such-table on http:\/\/\S+: ResourceNotFoundException: /,
    );
  });

  it('says so when DynamoDB cannot be reached', async () => {
    const result = await runCli([
      'keys',
      'create',
      '--plan',
      'free',
      '--endpoint',
      'http://127.0.0.1:1',
      '--table-keys',
      'keys',
    ]);
    expectOneLineError(result, 1, /^error: table keys on http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
  });
});

describe('the key table', () => {
  it('holds no plaintext key: a scan finds none of the keys printed, nor any sok_ value', async () => {
    expect(issued.length).toBeGreaterThan(10);
    const dump = JSON.stringify(await scanAll(t.client, t.tables.apiKeys));
    for (const key of issued) {
      expect(dump).not.toContain(key);
      expect(dump).toContain(hashApiKey(key));
    }
    expect(dump).not.toContain('sok_');
  });
});

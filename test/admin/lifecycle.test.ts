/** The key lifecycle rules (lib/keys/lifecycle.ts) with an injected clock, on DynamoDB Local. */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { generateApiKey, keyHint } from '../../lib/keys/api-key.ts';
import { authenticate } from '../../lib/keys/authenticate.ts';
import { newKeyRecord } from '../../lib/keys/plaintext-keys.ts';
import {
  changePlan,
  choosePlan,
  InvalidKeyInput,
  issueKey,
  KeyRefused,
  parseGrace,
  parseKeyId,
  revokeKey,
  rotateKey,
} from '../../lib/keys/lifecycle.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { scanAll } from './support.ts';

let t: TestTables;
let store: DynamoDbKeyStore;
beforeAll(async () => {
  t = await createTestTables('admin-lifecycle');
  store = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
});
afterAll(() => t.drop());

const T0 = new Date('2026-11-22T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const bearer = (key: string) => `Bearer ${key}`;

describe('rotation with an injected clock', () => {
  it('keeps both keys valid until the grace ends, then only the new one', async () => {
    const { key: oldKey, record } = await issueKey(store, { plan: 'pro', label: 'app' }, T0);
    const rotation = await rotateKey(store, record.keyId, parseGrace('24h'), at(10 * MINUTE));
    expect(rotation.old.expiresAt).toBe(at(10 * MINUTE + 24 * HOUR).toISOString());
    expect(rotation.record).toMatchObject({ plan: 'pro', label: 'app', status: 'active' });

    for (const moment of [at(10 * MINUTE), at(12 * HOUR), at(10 * MINUTE + 24 * HOUR - 1)]) {
      expect((await authenticate(store, bearer(oldKey), moment))?.keyId).toBe(record.keyId);
      expect((await authenticate(store, bearer(rotation.key), moment))?.keyId).toBe(
        rotation.record.keyId,
      );
    }
    const graceOver = at(10 * MINUTE + 24 * HOUR);
    expect(await authenticate(store, bearer(oldKey), graceOver)).toBeUndefined();
    expect((await authenticate(store, bearer(rotation.key), graceOver))?.plan).toBe('pro');
    expect(await authenticate(store, bearer(rotation.key), at(400 * 24 * HOUR))).toBeDefined();
  });

  it('refuses to rotate a key after its grace ended, or a revoked key', async () => {
    const { record } = await issueKey(store, { plan: 'free' }, T0);
    await rotateKey(store, record.keyId, HOUR, T0);
    await expect(rotateKey(store, record.keyId, HOUR, at(2 * HOUR))).rejects.toMatchObject({
      reason: 'expired',
    });
    const { record: revoked } = await issueKey(store, { plan: 'free' }, T0);
    await revokeKey(store, revoked.keyId, T0);
    await expect(rotateKey(store, revoked.keyId, HOUR, T0)).rejects.toThrow(KeyRefused);
    await expect(rotateKey(store, revoked.keyId, HOUR, T0)).rejects.toMatchObject({
      reason: 'revoked',
    });
  });

  it('writes nothing when the key changed between reading and rotating (one transaction)', async () => {
    const { record: stale } = await issueKey(store, { plan: 'free' }, T0);
    const first = await rotateKey(store, stale.keyId, HOUR, T0);
    const successor = newKeyRecord({ key: generateApiKey(), plan: 'free' }, T0);
    const before = await scanAll(t.client, t.tables.apiKeys);

    expect(await store.rotate(stale, at(5 * HOUR).toISOString(), successor)).toBe(false);

    expect(await store.findById(successor.keyId)).toBeUndefined();
    expect(await store.findById(stale.keyId)).toEqual(first.old);
    expect(await scanAll(t.client, t.tables.apiKeys)).toHaveLength(before.length);
  });

  it('revokes idempotently: a revoked key stops at once, whatever its expiry', async () => {
    const { key, record } = await issueKey(store, { plan: 'business' }, T0);
    expect((await revokeKey(store, record.keyId, T0)).alreadyRevoked).toBe(false);
    expect((await revokeKey(store, record.keyId, at(MINUTE))).alreadyRevoked).toBe(true);
    expect((await store.findById(record.keyId))?.revokedAt).toBe(T0.toISOString());
    expect(await authenticate(store, bearer(key), T0)).toBeUndefined();
  });

  it('changes a plan only on an active key', async () => {
    const { key, record } = await issueKey(store, { plan: 'free' }, T0);
    const change = await changePlan(
      store,
      record.keyId,
      choosePlan('enterprise', { perMinute: 2, perDay: 3 }),
      T0,
    );
    expect(change.after).toMatchObject({ plan: 'enterprise', limits: { perMinute: 2, perDay: 3 } });
    expect((await authenticate(store, bearer(key), T0))?.limits).toEqual({
      perMinute: 2,
      perDay: 3,
    });
    await revokeKey(store, record.keyId, T0);
    await expect(changePlan(store, record.keyId, choosePlan('pro'), T0)).rejects.toMatchObject({
      reason: 'revoked',
    });
    await expect(changePlan(store, 'key_Missing', choosePlan('pro'), T0)).rejects.toMatchObject({
      reason: 'not-found',
    });
  });
});

/**
 * A store whose findById lets `meanwhile` run once, right after its read: another operator's
 * change landing between this command's read and its write.
 */
function interleaving(meanwhile: () => Promise<unknown>): DynamoDbKeyStore {
  let pending: (() => Promise<unknown>) | undefined = meanwhile;
  return new (class extends DynamoDbKeyStore {
    override async findById(keyId: string) {
      const record = await super.findById(keyId);
      const run = pending;
      pending = undefined;
      await run?.();
      return record;
    }
  })(t.client, t.tables.apiKeys);
}

/** Changes a stored key behind the version's back, as an older CLI or a console edit would. */
async function editWithoutVersion(keyHash: string, changes: Record<string, unknown>) {
  const names = Object.keys(changes);
  await t.client.send(
    new UpdateCommand({
      TableName: t.tables.apiKeys,
      Key: { keyHash },
      UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
      ExpressionAttributeValues: Object.fromEntries(
        names.map((name, i) => [`:v${i}`, changes[name]]),
      ),
    }),
  );
}

describe('changes that race', () => {
  it('refuses to rotate a record revoked after it was read, writing nothing', async () => {
    const { record: stale } = await issueKey(store, { plan: 'pro' }, T0);
    await revokeKey(store, stale.keyId, T0);
    const successor = newKeyRecord({ key: generateApiKey(), plan: 'pro' }, T0);

    expect(await store.rotate(stale, at(HOUR).toISOString(), successor)).toBe(false);

    expect(await store.findByHash(successor.keyHash)).toBeUndefined();
    expect(await store.findById(stale.keyId)).toMatchObject({ status: 'revoked', version: 1 });
  });

  it('refuses to rotate or re-plan a key revoked without a version (an older CLI, the console)', async () => {
    const { record: stale } = await issueKey(store, { plan: 'pro' }, T0);
    await editWithoutVersion(stale.keyHash, { status: 'revoked', revokedAt: T0.toISOString() });
    const successor = newKeyRecord({ key: generateApiKey(), plan: 'pro' }, T0);

    expect(await store.rotate(stale, at(HOUR).toISOString(), successor)).toBe(false);
    expect(await store.setPlan(stale, 'business', undefined)).toBe(false);

    expect(await store.findByHash(successor.keyHash)).toBeUndefined();
    expect(await store.findById(stale.keyId)).toMatchObject({ plan: 'pro', status: 'revoked' });
  });

  it('refuses to rotate from a read taken before a plan change, then copies the new plan', async () => {
    const { key, record } = await issueKey(store, { plan: 'free', label: 'app' }, T0);
    const racing = interleaving(() =>
      changePlan(store, record.keyId, choosePlan('enterprise', { perMinute: 7, perDay: 70 }), T0),
    );
    const before = await scanAll(t.client, t.tables.apiKeys);

    await expect(rotateKey(racing, record.keyId, HOUR, T0)).rejects.toMatchObject({
      reason: 'conflict',
      message: expect.stringMatching(/changed while this command ran.*nothing was changed/),
    });
    expect(await scanAll(t.client, t.tables.apiKeys)).toHaveLength(before.length);
    expect((await authenticate(store, bearer(key), T0))?.limits).toEqual({
      perMinute: 7,
      perDay: 70,
    });

    const rotation = await rotateKey(store, record.keyId, HOUR, T0);
    expect(rotation.record).toMatchObject({
      plan: 'enterprise',
      limits: { perMinute: 7, perDay: 70 },
      label: 'app',
    });
    expect((await authenticate(store, bearer(rotation.key), T0))?.limits).toEqual({
      perMinute: 7,
      perDay: 70,
    });
  });

  it('refuses a plan change from a read taken before another plan change', async () => {
    const { record } = await issueKey(store, { plan: 'free' }, T0);
    const racing = interleaving(() => changePlan(store, record.keyId, choosePlan('pro'), T0));
    await expect(
      changePlan(racing, record.keyId, choosePlan('business'), T0),
    ).rejects.toMatchObject({ reason: 'conflict' });
    expect(await store.findById(record.keyId)).toMatchObject({ plan: 'pro', version: 1 });
  });

  it('reports "already revoked" when another revocation lands first, keeping its time', async () => {
    const { record } = await issueKey(store, { plan: 'free' }, T0);
    const racing = interleaving(() => revokeKey(store, record.keyId, T0));

    const outcome = await revokeKey(racing, record.keyId, at(HOUR));

    expect(outcome.alreadyRevoked).toBe(true);
    expect(outcome.record.revokedAt).toBe(T0.toISOString());
    expect((await store.findById(record.keyId))?.revokedAt).toBe(T0.toISOString());
    expect(await store.revoke(record, at(2 * HOUR).toISOString())).toBe(false);
    expect((await store.findById(record.keyId))?.revokedAt).toBe(T0.toISOString());
  });

  it('counts every change in the version, starting from a key stored without one', async () => {
    const { record } = await issueKey(store, { plan: 'free' }, T0);
    expect(await store.findById(record.keyId)).not.toHaveProperty('version');
    const first = await changePlan(store, record.keyId, choosePlan('pro'), T0);
    expect(first.after.version).toBe(1);
    const second = await changePlan(store, record.keyId, choosePlan('business'), T0);
    expect(second.after.version).toBe(2);
    const rotation = await rotateKey(store, record.keyId, HOUR, T0);
    expect(rotation.old.version).toBe(3);
    expect(await store.findById(record.keyId)).toEqual(rotation.old);
    const revoked = await revokeKey(store, record.keyId, T0);
    expect(revoked.record.version).toBe(4);
    expect(await store.findById(record.keyId)).toEqual(revoked.record);

    const { record: zero } = await issueKey(store, { plan: 'free' }, T0);
    await editWithoutVersion(zero.keyHash, { version: 0 });
    expect((await changePlan(store, zero.keyId, choosePlan('pro'), T0)).after.version).toBe(1);
  });

  it('finds a key through the index, then reads it from the table, strongly consistent', async () => {
    const { record } = await issueKey(store, { plan: 'free' }, T0);
    const sent: { command: string; input: Record<string, unknown> }[] = [];
    const name = `observe${Math.random()}`;
    t.client.middlewareStack.add(
      (next, context) => (args) => {
        sent.push({
          command: context.commandName ?? '',
          input: args.input as Record<string, unknown>,
        });
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      expect(await store.findById(record.keyId)).toEqual(record);
    } finally {
      t.client.middlewareStack.remove(name);
    }
    expect(sent.map((call) => call.command)).toEqual(['QueryCommand', 'GetItemCommand']);
    expect(sent[0]?.input).toMatchObject({ IndexName: 'byKeyId' });
    expect(sent[1]?.input).toMatchObject({
      Key: { keyHash: record.keyHash },
      ConsistentRead: true,
    });
  });
});

describe('input rules', () => {
  it.each([
    ['24h', 24 * HOUR],
    ['30m', 30 * MINUTE],
    ['0s', 0],
    ['7d', 7 * 24 * HOUR],
    ['90d', 90 * 24 * HOUR],
  ])('reads the grace %s', (text, ms) => {
    expect(parseGrace(text)).toBe(ms);
  });

  it.each(['', '24', 'h', '1.5h', '-1h', '2w', '24 h', '91d', '99999999s'])(
    'refuses the grace %j',
    (text) => {
      expect(() => parseGrace(text)).toThrow(InvalidKeyInput);
    },
  );

  it('holds plans to their limits', () => {
    expect(choosePlan('pro')).toEqual({ plan: 'pro' });
    expect(choosePlan('enterprise', { perMinute: 1, perDay: 1_000_000_000 })).toEqual({
      plan: 'enterprise',
      limits: { perMinute: 1, perDay: 1_000_000_000 },
    });
    expect(() => choosePlan('gold')).toThrow(/plan must be one of/);
    expect(() => choosePlan(undefined)).toThrow(/a plan is required/);
    expect(() => choosePlan('enterprise', { perMinute: 5 })).toThrow(/needs both/);
    expect(() => choosePlan('enterprise', { perMinute: 5, perDay: 1.5 })).toThrow(/needs both/);
    expect(() => choosePlan('free', { perDay: 5 })).toThrow(/fixed limits/);
  });

  it('refuses a pasted API key as a key id, showing only its hint', () => {
    const key = generateApiKey();
    const refusal = (() => {
      try {
        parseKeyId(key);
      } catch (error) {
        return error as Error;
      }
    })();
    expect(refusal).toBeInstanceOf(InvalidKeyInput);
    expect(refusal?.message).toBe(
      `that is an API key, not a key id (key_…): got ${keyHint(key)}; keys list shows the ids`,
    );
    expect(refusal?.message).not.toContain(key.slice(8, 14));
    expect(() => parseKeyId(`Bearer ${key}`)).toThrow(/got "Bearer sok_\w{4}…"$/);
  });

  it('words the refusals of resolveLimits in the flags of the CLI, keeping the cause', () => {
    const refusal = (() => {
      try {
        choosePlan('enterprise', { perMinute: 5 });
      } catch (error) {
        return error as Error;
      }
    })();
    expect(refusal).toBeInstanceOf(InvalidKeyInput);
    expect(refusal?.cause).toBeInstanceOf(Error);
    expect((refusal?.cause as Error).message).toMatch(/limits\.perMinute and limits\.perDay/);
  });

  it('takes key ids of the key_ form only', () => {
    expect(parseKeyId('key_AbC123')).toBe('key_AbC123');
    for (const bad of ['AbC123', 'key_', 'key_a-b', 'sok_abc', `key_${'a'.repeat(65)}`]) {
      expect(() => parseKeyId(bad)).toThrow(InvalidKeyInput);
    }
  });
});

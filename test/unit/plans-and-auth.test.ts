import { describe, expect, it } from 'vitest';
import { apiKeyFromBody, generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { authenticate, callerFromContext, callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import type { ApiKeyRecord } from '../../lib/keys/key-record.ts';
import type { KeyStore } from '../../lib/keys/key-store.ts';
import { parseKeyEntries } from '../../lib/keys/key-input.ts';
import { PLAN_LIMITS, resolveLimits } from '../../lib/limits/plans.ts';

class MemoryKeyStore implements KeyStore {
  readonly lookups: string[] = [];
  private readonly records: ApiKeyRecord[];
  constructor(records: ApiKeyRecord[]) {
    this.records = records;
  }
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    this.lookups.push(keyHash);
    return Promise.resolve(this.records.find((r) => r.keyHash === keyHash));
  }
  create(): Promise<boolean> {
    return Promise.resolve(true);
  }
}

const key = apiKeyFromBody('K'.repeat(32));
const now = new Date('2026-11-22T12:00:00Z');
const record = (overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  keyId: 'key_1',
  keyHash: hashApiKey(key),
  plan: 'pro',
  status: 'active',
  createdAt: '2026-01-01T00:00:00Z',
  ...overrides,
});

describe('plans', () => {
  it('hold the contract numbers', () => {
    expect(PLAN_LIMITS).toEqual({
      free: { perMinute: 60, perDay: 1000 },
      pro: { perMinute: 300, perDay: 10000 },
      business: { perMinute: 1000, perDay: 100000 },
    });
  });

  it('enterprise needs its own numbers; the other plans refuse them', () => {
    expect(resolveLimits('enterprise', { perMinute: 5, perDay: 7 })).toEqual({
      perMinute: 5,
      perDay: 7,
    });
    expect(() => resolveLimits('enterprise')).toThrow(/needs limits/);
    expect(() => resolveLimits('enterprise', { perMinute: 0, perDay: 7 })).toThrow(/needs limits/);
    expect(() => resolveLimits('free', { perMinute: 5 })).toThrow(/only for the enterprise plan/);
  });

  it('refuses enterprise limits whose minute limit is above the day limit', () => {
    expect(() => resolveLimits('enterprise', { perMinute: 9, perDay: 3 })).toThrow(
      'limits.perMinute (9) cannot be above limits.perDay (3)',
    );
    expect(resolveLimits('enterprise', { perMinute: 3, perDay: 3 })).toEqual({
      perMinute: 3,
      perDay: 3,
    });
  });
});

describe('authenticate', () => {
  it('identifies an active key with its plan limits, and a key stored before permissions with every one', async () => {
    const caller = await authenticate(new MemoryKeyStore([record()]), `Bearer ${key}`, now);
    expect(caller).toEqual({
      keyId: 'key_1',
      plan: 'pro',
      limits: PLAN_LIMITS.pro,
      permissions: ['read', 'cancel'],
    });
  });

  it('gives the caller the permissions its key holds', async () => {
    const store = new MemoryKeyStore([record({ permissions: ['read'] })]);
    expect((await authenticate(store, `Bearer ${key}`, now))?.permissions).toEqual(['read']);
  });

  it('gives an enterprise key its own limits', async () => {
    const store = new MemoryKeyStore([
      record({ plan: 'enterprise', limits: { perMinute: 9, perDay: 3 } }),
    ]);
    expect((await authenticate(store, `bearer ${key}`, now))?.limits).toEqual({
      perMinute: 9,
      perDay: 3,
    });
  });

  it.each([
    ['a revoked key', record({ status: 'revoked' })],
    ['an expired key', record({ expiresAt: '2026-11-22T11:59:59Z' })],
    ['a key whose expiry does not parse (fails closed)', record({ expiresAt: 'next Tuesday' })],
  ])('refuses %s', async (_, stored) => {
    expect(await authenticate(new MemoryKeyStore([stored]), `Bearer ${key}`, now)).toBeUndefined();
  });

  it('keeps a rotated key working until its expiry', async () => {
    const stored = record({ expiresAt: '2026-11-22T12:00:01Z' });
    expect(await authenticate(new MemoryKeyStore([stored]), `Bearer ${key}`, now)).toBeDefined();
  });

  it('refuses a key with a wrong checksum without reading the store', async () => {
    const store = new MemoryKeyStore([record()]);
    expect(await authenticate(store, `Bearer ${key.slice(0, -1)}x`, now)).toBeUndefined();
    expect(store.lookups).toEqual([]);
  });

  it.each([undefined, '', 'Basic abc', 'Bearer ', key])(
    'refuses the header %j without reading the store',
    async (header) => {
      const store = new MemoryKeyStore([record()]);
      expect(await authenticate(store, header, now)).toBeUndefined();
      expect(store.lookups).toEqual([]);
    },
  );

  it('passes the caller through the authorizer context as strings and back', () => {
    const caller = {
      keyId: 'key_1',
      plan: 'enterprise' as const,
      limits: { perMinute: 5, perDay: 9 },
      permissions: ALL_PERMISSIONS,
    };
    const context = callerToContext(caller);
    expect(Object.values(context).every((v) => typeof v === 'string')).toBe(true);
    expect(callerFromContext(context)).toEqual(caller);
    expect(
      callerFromContext({ keyId: 'k', plan: 'gold', perMinute: '1', perDay: '1' }),
    ).toBeUndefined();
  });

  it("carries a key's permissions; a context from before permissions may do everything", () => {
    const readOnly = { keyId: 'key_r', plan: 'free' as const, limits: PLAN_LIMITS.free };
    const context = callerToContext({ ...readOnly, permissions: ['read'] });
    expect(context.permissions).toBe('read');
    expect(callerFromContext(context)?.permissions).toEqual(['read']);
    expect(callerFromContext({ ...context, permissions: 'cancel,read' })?.permissions).toEqual([
      'read',
      'cancel',
    ]);
    // An answer the authorizer gave before permissions existed, still in API Gateway's cache.
    const { permissions, ...before } = context;
    expect(permissions).toBeDefined();
    expect(callerFromContext(before)?.permissions).toEqual(['read', 'cancel']);
    // Permissions that cannot be read: no caller (the function answers 500), never everything.
    for (const unreadable of ['', 'write', 'read;cancel', 7]) {
      expect(callerFromContext({ ...context, permissions: unreadable })).toBeUndefined();
    }
  });
});

describe('parseKeyEntries', () => {
  const [a, b, c, d] = [generateApiKey(), generateApiKey(), generateApiKey(), generateApiKey()];

  it('reads keys with their plans, after a byte-order mark too', () => {
    const text = `[{"key":"${a}","plan":"free"},{"key":"${b}","plan":"enterprise","limits":{"perMinute":5,"perDay":9}}]`;
    const expected = {
      ok: true,
      entries: [
        { key: a, plan: 'free' },
        { key: b, plan: 'enterprise', limits: { perMinute: 5, perDay: 9 } },
      ],
    };
    expect(parseKeyEntries(text)).toEqual(expected);
    expect(parseKeyEntries(`\uFEFF${text}`)).toEqual(expected);
  });

  it('reports unknown plans, missing enterprise limits, keys not of the service and repeats', () => {
    const result = parseKeyEntries(
      `[{"key":"${a}","plan":"gold"},{"key":"${b}","plan":"enterprise"},{"key":"has space","plan":"free"},{"key":"${c}x","plan":"free"},{"key":"${d}","plan":"free"},{"key":"${d}","plan":"pro"}]`,
    );
    expect(result.ok ? [] : result.problems).toEqual([
      { index: 0, message: 'plan must be one of free, pro, business, enterprise, got "gold"' },
      {
        index: 1,
        message:
          'the enterprise plan needs limits.perMinute and limits.perDay as integers from 1 to 1000000000',
      },
      {
        index: 2,
        message:
          'key must be an API key of this service: sok_ + 32 letters and digits + a 6-character checksum (npm run admin -- keys create prints one)',
      },
      {
        index: 3,
        message: 'key starts with sok_ but is not a well-formed key (length or checksum)',
      },
      { index: 5, message: 'the same key appears twice' },
    ]);
  });

  it('reads the permissions a key may have, and refuses others', () => {
    const read = parseKeyEntries(
      `[{"key":"${a}","plan":"free","permissions":["read"]},{"key":"${b}","plan":"free","permissions":["cancel","read"]}]`,
    );
    expect(read).toEqual({
      ok: true,
      entries: [
        { key: a, plan: 'free', permissions: ['read'] },
        { key: b, plan: 'free', permissions: ['read', 'cancel'] },
      ],
    });
    for (const permissions of ['[]', '["write"]', '"read"', '[1]']) {
      const refused = parseKeyEntries(
        `[{"key":"${a}","plan":"free","permissions":${permissions}}]`,
      );
      expect(refused.ok ? [] : refused.problems).toEqual([
        { index: 0, message: 'permissions must be a non-empty array of "read", "cancel"' },
      ]);
    }
  });

  it('names a syntax error without echoing the text, and cuts long values', () => {
    const broken = parseKeyEntries(`[{"key": "${a}", "plan": free}]`);
    expect(broken.ok ? '' : broken.problems[0]?.message).toMatch(/^not valid JSON: /);
    expect(broken.ok ? '' : broken.problems[0]?.message).not.toContain(a);
    const long = parseKeyEntries(`[{"key":"${a}","plan":"${'p'.repeat(100_000)}"}]`);
    expect(long.ok ? '' : long.problems[0]?.message).toBe(
      `plan must be one of free, pro, business, enterprise, got "${'p'.repeat(40)}…"`,
    );
  });
});

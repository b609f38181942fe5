/**
 * Lifting a ban (`keys unban`, RateLimitAdmin.unban) on DynamoDB Local: one conditional write,
 * raced by requests decided on the state before it, which cannot ban the key again from that
 * stale state; and containers that cached the ban see it lifted within BAN_RECHECK_MS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CountedKey } from '../../lib/keys/key-record.ts';
import { RateLimitAdmin } from '../../lib/dynamodb/rate-limit-admin.ts';
import { BAN_RECHECK_MS } from '../../lib/dynamodb/rate-limit-items.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import type { LimiterSettings } from '../../lib/limits/limiter.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
let sequence = 0;
// Tomorrow (UTC), 15:00: counter items expire two days after their day starts (see rate-limiter.test.ts).
const DAY_MS = 86_400_000;
const MINUTE_START = (Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS + 15 * 60 * 60_000;
/** Two early refusals allowed in a minute: the third bans. */
const SETTINGS: LimiterSettings = {
  maxRefusalsPerMinute: 2,
  banMs: 15 * 60_000,
  failureMode: 'closed',
};

const caller = (): CountedKey => ({
  keyId: `key_unban${++sequence}`,
  plan: 'free',
  limits: { perMinute: 3, perDay: PLAN_LIMITS.free.perDay },
});
const limiter = () =>
  new DynamoDbRateLimiter(t.client, t.tables.rateLimits, { settings: SETTINGS });

beforeAll(async () => {
  t = await createTestTables('unban');
});
afterAll(() => t.drop());

/** Three admitted, then refusals 1 s apart (each early): the key holds 2 counted refusals. */
async function toTheBrink(container: DynamoDbRateLimiter, key: CountedKey, at: number) {
  for (let i = 0; i < 3; i++) await container.consume(key, at + i);
  const outcomes = [];
  for (let i = 0; i < 3; i++)
    outcomes.push((await container.consume(key, at + 100 + i)).decision.outcome);
  // The first refusal waited for nothing it was told (not counted); the next two count.
  expect(outcomes).toEqual(['limited', 'limited', 'limited']);
}

describe('keys unban', () => {
  it('cannot be undone by requests decided on the state before it (20 races)', async () => {
    const admin = new RateLimitAdmin(t.client, t.tables.rateLimits);
    for (let round = 0; round < 20; round++) {
      const key = caller();
      const at = MINUTE_START + round * 1000;
      // Container A knows the key at 2 counted refusals, not banned: its next refusal would ban.
      const stale = limiter();
      await toTheBrink(stale, key, at);
      // Container B bans it.
      expect((await limiter().consume(key, at + 200)).decision.outcome).toBe('banned');
      expect((await admin.read(key.keyId)).bannedUntil).toBe(at + 200 + SETTINGS.banMs);
      // The operator lifts the ban while A sends two requests from its stale state (each
      // of which, decided on that state, would be the ban's refusal).
      const [unban, ...results] = await Promise.all([
        admin.unban(key.keyId, at + 300),
        stale.consume(key, at + 300),
        stale.consume(key, at + 301),
      ]);
      expect(unban.lifted).toBe(true);
      expect(unban.before.bannedUntil).toBe(at + 200 + SETTINGS.banMs);
      const after = await admin.read(key.keyId);
      // Whatever the order: no ban is left, and at most the refusals made after it count.
      expect(after.bannedUntil, `round ${round}: ${JSON.stringify(results)}`).toBeUndefined();
      expect(after.refusals?.count ?? 0).toBeLessThanOrEqual(1);
    }
  });

  it('changes nothing on a key that is not banned, and says so', async () => {
    const admin = new RateLimitAdmin(t.client, t.tables.rateLimits);
    const key = caller();
    const container = limiter();
    await toTheBrink(container, key, MINUTE_START);
    const before = await admin.read(key.keyId);
    expect(await admin.unban(key.keyId, MINUTE_START + 500)).toEqual({ lifted: false, before });
    expect(await admin.read(key.keyId)).toEqual(before);
    expect(await admin.unban('key_neverSeen', MINUTE_START)).toEqual({ lifted: false, before: {} });
  });

  it('reaches a container that cached the ban within BAN_RECHECK_MS', async () => {
    const admin = new RateLimitAdmin(t.client, t.tables.rateLimits);
    const key = caller();
    const container = limiter();
    const at = MINUTE_START + 90_000;
    await toTheBrink(container, key, at);
    expect((await container.consume(key, at + 200)).decision.outcome).toBe('banned');
    expect((await admin.unban(key.keyId, at + 300)).lifted).toBe(true);
    // Still inside the recheck interval: answered from the cache.
    expect((await container.consume(key, at + 300)).decision.outcome).toBe('banned');
    // Later in the next minute window (the minute count has slid down): admitted again.
    const later = at + 200 + BAN_RECHECK_MS + 60_000;
    expect((await container.consume(key, later)).decision.outcome).toBe('admitted');
  });
});

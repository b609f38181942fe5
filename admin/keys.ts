/**
 * `keys …`: issue, list, revoke, rotate and re-plan API keys. Thin: parse the command line,
 * call lib/keys/lifecycle.ts, print. A plaintext key is printed once, by `create` and `rotate`;
 * nothing prints a stored hash.
 */
import { DynamoDbKeyStore } from '../lib/dynamodb/keys-table.ts';
import { RateLimitAdmin } from '../lib/dynamodb/rate-limit-admin.ts';
import { BAN_RECHECK_MS } from '../lib/dynamodb/rate-limit-items.ts';
import { STAGE_THROTTLES } from '../lib/deployment.ts';
import { perKeyCeiling, unhonourable } from '../lib/limits/capacity.ts';
import { standing } from '../lib/limits/free-allowance.ts';
import { refusalsIn } from '../lib/limits/ban.ts';
import {
  DAY_MS,
  estimate,
  MINUTE_MS,
  retryAfterSeconds,
  type CounterState,
} from '../lib/limits/sliding-window.ts';
import { isExpired, limitsOf, type ApiKeyRecord } from '../lib/keys/key-record.ts';
import {
  changePlan,
  choosePlan,
  DEFAULT_GRACE,
  findKey,
  issueKey,
  listKeys,
  parseGrace,
  parseKeyId,
  parseLabel,
  revokeKey,
  rotateKey,
} from '../lib/keys/lifecycle.ts';
import { PLAN_NAMES, type Limits } from '../lib/limits/plans.ts';
import { switchFlag, valueFlag } from '../lib/config/flags.ts';
import { Failure, integerFlag, print, UsageError, type Io } from './common.ts';
import { defineCommand, type Command } from './command.ts';
import { confirmChange } from './confirm.ts';
import { withTable, withTables, type Target, type TargetValues } from './target.ts';

const CACHE_NOTE =
  'within the authorizer cache TTL (60 s as deployed; npm start -- --authorizer-ttl locally)';

const PLAN_FLAGS = {
  plan: valueFlag(PLAN_NAMES.join('|'), "the key's plan", { required: true }),
  'per-minute': valueFlag(
    'N',
    'the per-minute limit of an enterprise key (required for enterprise, refused for the other plans, whose limits are fixed)',
  ),
  'per-day': valueFlag(
    'N',
    'the per-day limit of an enterprise key (as --per-minute), at least --per-minute',
  ),
};

function planChoice(values: { plan?: string; 'per-minute'?: string; 'per-day'?: string }) {
  return choosePlan(values.plan, {
    perMinute: integerFlag(values['per-minute'], 'per-minute'),
    perDay: integerFlag(values['per-day'], 'per-day'),
  });
}

/**
 * Refuses limits the target cannot honour: above what one counter item sustains, or above the
 * stage's throttle (lib/limits/capacity.ts). Fixed plans are within both.
 */
function refuseUnhonourable(choice: { limits?: Limits }, target: Target): void {
  if (!choice.limits) return;
  const ceiling = perKeyCeiling(
    target.stage
      ? { name: target.stage, throttleRps: STAGE_THROTTLES[target.stage].rateLimit }
      : undefined,
  );
  const reason = unhonourable(choice.limits, ceiling);
  if (reason) throw new Failure(`refused, nothing changed: ${reason}`);
}

function formatLimits(limits: Limits | undefined): string {
  return limits ? `${limits.perMinute}/min, ${limits.perDay}/day` : 'no limits stored';
}

function describeKey(record: ApiKeyRecord): string {
  const label = record.label === undefined ? '' : `, label ${JSON.stringify(record.label)}`;
  return `${record.keyId} (plan ${record.plan}: ${formatLimits(limitsOf(record))}${label})`;
}

/** Runs `action` with the key store of the target the flags name. */
function withKeyStore<T>(
  values: TargetValues,
  action: (store: DynamoDbKeyStore, target: Target) => Promise<T>,
): Promise<T> {
  return withTable(values, 'apiKeys', (client, table, target) =>
    action(new DynamoDbKeyStore(client, table), target),
  );
}

function printNewKey(io: Io, key: string): void {
  print(io.stdout, 'The API key is shown only this once: it cannot be shown again (only its hash');
  print(io.stdout, 'is stored). Hand it over now:');
  print(io.stdout, '');
  print(io.stdout, `  ${key}`);
  print(io.stdout, '');
}

const create = defineCommand(
  {
    name: 'keys create',
    summary: 'issue a key; it is printed once and only its hash is stored',
    description: `Issues a new API key and prints it once, with its public id (key_…). Only the key's SHA-256
hash is stored: the key cannot be shown again. It works at once.`,
    flags: {
      ...PLAN_FLAGS,
      label: valueFlag('TEXT', 'a note for people (who holds the key), shown by list'),
      json: switchFlag('print {"keyId", "key", "plan", "limits", "label"} instead'),
    },
  },
  async ({ values }, io) => {
    const choice = planChoice(values);
    const label = parseLabel(values.label);
    await withKeyStore(values, async (store, target) => {
      refuseUnhonourable(choice, target);
      await confirmChange(target, `create a ${choice.plan} key`, values.yes, io);
      const { key, record } = await issueKey(
        store,
        { ...choice, ...(label !== undefined ? { label } : {}) },
        io.now(),
      );
      if (values.json) {
        const limits = limitsOf(record);
        print(
          io.stdout,
          JSON.stringify({ keyId: record.keyId, key, plan: record.plan, limits, label }),
        );
        return;
      }
      print(io.stdout, `Created key ${describeKey(record)} on ${target.description}.`);
      printNewKey(io, key);
    });
  },
);

/** What a list shows of a key: never the key, never its hash. */
export interface KeyView {
  readonly keyId: string;
  readonly label?: string;
  readonly plan: string;
  readonly limits?: Limits;
  readonly status: 'active' | 'revoked' | 'expired';
  readonly createdAt: string;
  readonly expiresAt?: string;
  readonly revokedAt?: string;
  readonly replacedBy?: string;
}

function keyView(record: ApiKeyRecord, now: Date): KeyView {
  const limits = limitsOf(record);
  return {
    keyId: record.keyId,
    ...(record.label !== undefined ? { label: record.label } : {}),
    plan: record.plan,
    ...(limits ? { limits } : {}),
    status: record.status === 'revoked' ? 'revoked' : isExpired(record, now) ? 'expired' : 'active',
    createdAt: record.createdAt,
    ...(record.expiresAt !== undefined ? { expiresAt: record.expiresAt } : {}),
    ...(record.revokedAt !== undefined ? { revokedAt: record.revokedAt } : {}),
    ...(record.replacedBy !== undefined ? { replacedBy: record.replacedBy } : {}),
  };
}

function table(rows: readonly (readonly string[])[]): string[] {
  const widths = (rows[0] ?? []).map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  );
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

function shortTime(iso: string | undefined): string {
  return iso === undefined ? '-' : iso.replace(/\.\d{3}Z$/, 'Z');
}

const list = defineCommand(
  {
    name: 'keys list',
    summary: 'every key: id, label, plan, limits, status, created, expiry',
    description: `Lists every key, oldest first: id, label, plan, limits, status (active, revoked, expired),
created, expiry (set by a rotation) and successor. Never a key or a key hash.`,
    flags: { json: switchFlag('print a JSON array instead') },
  },
  async ({ values }, io) => {
    const records = await withKeyStore(values, (store) => listKeys(store));
    const now = io.now();
    const views = records.map((record) => keyView(record, now));
    if (values.json) {
      print(io.stdout, JSON.stringify(views, null, 2));
      return;
    }
    if (views.length === 0) {
      print(io.stdout, 'No keys.');
      return;
    }
    const rows = [
      ['ID', 'LABEL', 'PLAN', 'PER MIN', 'PER DAY', 'STATUS', 'CREATED', 'EXPIRES', 'REPLACED BY'],
      ...views.map((view) => [
        view.keyId,
        view.label ?? '-',
        view.plan,
        String(view.limits?.perMinute ?? '-'),
        String(view.limits?.perDay ?? '-'),
        view.status,
        shortTime(view.createdAt),
        shortTime(view.expiresAt),
        view.replacedBy ?? '-',
      ]),
    ];
    for (const line of table(rows)) print(io.stdout, line);
  },
);

function keyIdArgument(positionals: readonly string[]): string {
  const raw = positionals[0];
  if (raw === undefined) throw new UsageError('missing <key-id>');
  return parseKeyId(raw);
}

const revoke = defineCommand(
  {
    name: 'keys revoke',
    summary: `stop a key (${CACHE_NOTE.replace(/ \(.*/, '')})`,
    description: `Revokes a key: requests with it are refused ${CACHE_NOTE}.
Revoking a revoked key changes nothing.`,
    flags: {},
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const keyId = keyIdArgument(parsed.positionals);
    await withKeyStore(parsed.values, async (store, target) => {
      await confirmChange(target, `revoke key ${keyId}`, parsed.values.yes, io);
      const { record, alreadyRevoked } = await revokeKey(store, keyId, io.now());
      print(
        io.stdout,
        alreadyRevoked
          ? `Key ${keyId} was already revoked${record.revokedAt ? ` (at ${record.revokedAt})` : ''}; nothing changed.`
          : `Revoked key ${describeKey(record)}. Requests with it are refused ${CACHE_NOTE}.`,
      );
    });
  },
);

const rotate = defineCommand(
  {
    name: 'keys rotate',
    summary: 'issue a successor now; the old key works until the grace ends',
    description: `Issues a successor with the same plan, limits and label, printed once; it works at once. The
old key keeps working until the grace period ends, then is refused. A revoked, expired or
already rotated key is not rotated.`,
    flags: {
      grace: valueFlag(
        'DURATION',
        `how long the old key still works, e.g. 30m, 0s, 7d (default ${DEFAULT_GRACE}; at most 90d)`,
      ),
      json: switchFlag('print {"keyId", "key", "oldKeyId", "oldKeyExpiresAt"} instead'),
    },
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const keyId = keyIdArgument(parsed.positionals);
    const graceMs = parseGrace(values.grace ?? DEFAULT_GRACE);
    await withKeyStore(values, async (store, target) => {
      await confirmChange(target, `rotate key ${keyId}`, values.yes, io);
      const rotation = await rotateKey(store, keyId, graceMs, io.now());
      if (values.json) {
        print(
          io.stdout,
          JSON.stringify({
            keyId: rotation.record.keyId,
            key: rotation.key,
            oldKeyId: keyId,
            oldKeyExpiresAt: rotation.old.expiresAt,
          }),
        );
        return;
      }
      print(io.stdout, `Rotated key ${keyId} on ${target.description}.`);
      print(io.stdout, `New key ${describeKey(rotation.record)} works now.`);
      print(io.stdout, `Old key ${keyId} works until ${rotation.old.expiresAt}, then is refused.`);
      printNewKey(io, rotation.key);
    });
  },
);

const setPlan = defineCommand(
  {
    name: 'keys set-plan',
    summary: "change a key's plan (enterprise: with its own limits)",
    description: `Changes the plan of an active key; it takes effect ${CACHE_NOTE}.`,
    flags: PLAN_FLAGS,
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const keyId = keyIdArgument(parsed.positionals);
    const choice = planChoice(values);
    await withKeyStore(values, async (store, target) => {
      refuseUnhonourable(choice, target);
      await confirmChange(target, `move key ${keyId} to plan ${choice.plan}`, values.yes, io);
      const { before, after } = await changePlan(store, keyId, choice, io.now());
      print(
        io.stdout,
        `Key ${keyId}: plan ${before.plan} (${formatLimits(limitsOf(before))}) → ${after.plan} (${formatLimits(limitsOf(after))}). It takes effect ${CACHE_NOTE}.`,
      );
    });
  },
);

/** What `keys show` reports of a key's counter, as the limiter sees it at `now`. */
export interface CounterView {
  readonly minute: { readonly used: number; readonly limit: number; readonly windowStart: string };
  readonly day: { readonly used: number; readonly limit: number; readonly windowStart: string };
  /** Refusals counted toward a ban in the current minute window. */
  readonly refusals: number;
  /** The ban threshold, when the target says (the local API does). */
  readonly banAfterRefusals?: number;
  readonly bannedUntil?: string;
  /** What a request now would get: admitted, or refused (429) for so many seconds. */
  readonly next: {
    readonly outcome: 'admitted' | 'limited' | 'banned';
    readonly retryAfterSeconds?: number;
  };
}

function counterView(
  state: CounterState,
  now: number,
  limits: Limits,
  target: Target,
): CounterView {
  const decision = standing(state, now, limits);
  const iso = (ms: number) => new Date(ms).toISOString();
  const banned = state.bannedUntil !== undefined && state.bannedUntil > decision.at;
  return {
    minute: {
      used: estimate(decision.minute, decision.at, MINUTE_MS),
      limit: limits.perMinute,
      windowStart: iso(decision.minute.start),
    },
    day: {
      used: estimate(decision.day, decision.at, DAY_MS),
      limit: limits.perDay,
      windowStart: iso(decision.day.start),
    },
    refusals: refusalsIn(state, decision.at),
    ...(target.ban ? { banAfterRefusals: target.ban.afterRefusals } : {}),
    ...(banned ? { bannedUntil: iso(state.bannedUntil) } : {}),
    next:
      decision.outcome === 'admitted'
        ? { outcome: 'admitted' }
        : {
            outcome: decision.outcome,
            retryAfterSeconds: retryAfterSeconds(decision.retryAfterMs),
          },
  };
}

const show = defineCommand(
  {
    name: 'keys show',
    summary: "a key's plan, limits, state, current minute and day counts, refusals and ban",
    description: `Shows a key: plan, limits and state (active, revoked, expired), and its counter as the rate
limiter sees it now: the minute and day counts (the sliding-window estimate its limits are
checked against), the refusals counted toward a ban in this minute window, the ban's end, and
what a request now would get. Changes nothing.`,
    flags: { json: switchFlag('print {"key": …, "counter": …} as JSON instead') },
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const keyId = keyIdArgument(parsed.positionals);
    await withTables(parsed.values, ['apiKeys', 'rateLimits'], async (client, tables, target) => {
      const record = await findKey(new DynamoDbKeyStore(client, tables.apiKeys), keyId);
      const state = await new RateLimitAdmin(client, tables.rateLimits).read(keyId);
      const now = io.now();
      const key = keyView(record, now);
      const limits = limitsOf(record);
      const counter = limits ? counterView(state, now.getTime(), limits, target) : undefined;
      if (parsed.values.json) {
        print(io.stdout, JSON.stringify({ key, counter }, null, 2));
        return;
      }
      const label = key.label === undefined ? '' : ` (${JSON.stringify(key.label)})`;
      const lines: (string | readonly [string, string])[] = [
        `Key ${keyId}${label} on ${target.description}`,
        ['plan', `${key.plan}: ${formatLimits(limits)}`],
        ['state', `${key.status}${counter?.bannedUntil ? ', BANNED' : ''}`],
      ];
      if (counter) {
        const threshold =
          counter.banAfterRefusals === undefined
            ? ''
            : ` (banned at more than ${counter.banAfterRefusals})`;
        lines.push(
          [
            'minute',
            `${counter.minute.used} of ${counter.minute.limit} (window from ${shortTime(counter.minute.windowStart)}, sliding)`,
          ],
          [
            'day',
            `${counter.day.used} of ${counter.day.limit} (window from ${shortTime(counter.day.windowStart)}, sliding)`,
          ],
          [
            'refusals',
            `${counter.refusals} counted toward a ban in this minute window${threshold}`,
          ],
          [
            'ban',
            counter.bannedUntil
              ? `until ${shortTime(counter.bannedUntil)} (${Math.ceil((Date.parse(counter.bannedUntil) - now.getTime()) / 1000)} s left): keys unban ${keyId} lifts it`
              : 'none',
          ],
          [
            'next request',
            counter.next.outcome === 'admitted'
              ? 'admitted'
              : `refused (429 ${counter.next.outcome === 'banned' ? 'API_KEY_TEMPORARILY_BANNED' : 'RATE_LIMITED'}), Retry-After ${counter.next.retryAfterSeconds} s`,
          ],
        );
      }
      for (const line of lines) {
        print(io.stdout, typeof line === 'string' ? line : `  ${line[0].padEnd(13)}${line[1]}`);
      }
    });
  },
);

const unban = defineCommand(
  {
    name: 'keys unban',
    summary: "lift a key's ban now (one conditional write)",
    description: `Lifts a key's ban in one conditional write: the ban ends, its refusal count restarts, and its
next refusal is not counted as early. A request racing the unban cannot ban the key again from
the state before it. Containers that remember the ban see it lifted within ${BAN_RECHECK_MS / 1000} s. The key's
limits still apply: a request beyond them gets 429 RATE_LIMITED, as keys show says. A key that
is not banned is left as it is.`,
    flags: {},
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const keyId = keyIdArgument(parsed.positionals);
    await withTables(parsed.values, ['apiKeys', 'rateLimits'], async (client, tables, target) => {
      const record = await findKey(new DynamoDbKeyStore(client, tables.apiKeys), keyId);
      await confirmChange(target, `unban key ${keyId}`, parsed.values.yes, io);
      const now = io.now();
      const { lifted, before } = await new RateLimitAdmin(client, tables.rateLimits).unban(
        keyId,
        now.getTime(),
      );
      if (!lifted) {
        print(io.stdout, `Key ${keyId} is not banned on ${target.description}; nothing changed.`);
        return;
      }
      const until = new Date(before.bannedUntil as number).toISOString();
      const limits = limitsOf(record);
      const after = limits
        ? counterView(
            { ...before, bannedUntil: undefined, retryAt: undefined, refusals: undefined },
            now.getTime(),
            limits,
            target,
          ).next
        : undefined;
      print(
        io.stdout,
        `Unbanned key ${keyId} on ${target.description}: ban until ${shortTime(until)} lifted, refusals counted ${refusalsIn(before, now.getTime())} → 0; a request now is ${after?.outcome === 'admitted' ? 'admitted' : `refused 429 RATE_LIMITED for ${after?.retryAfterSeconds ?? '?'} s (its limits)`} (within ${BAN_RECHECK_MS / 1000} s everywhere).`,
      );
    });
  },
);

export const KEY_COMMANDS: readonly Command[] = [
  create,
  list,
  show,
  revoke,
  rotate,
  setPlan,
  unban,
];

/**
 * `keys …`: issue, list, revoke, rotate and re-plan API keys. Thin: parse the command line,
 * call lib/keys/lifecycle.ts, print. A plaintext key is printed once, by `create` and `rotate`;
 * nothing prints a stored hash.
 */
import { DynamoDbKeyStore } from '../lib/dynamodb/keys-table.ts';
import { isExpired, limitsOf, type ApiKeyRecord } from '../lib/keys/key-record.ts';
import {
  changePlan,
  choosePlan,
  DEFAULT_GRACE,
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
import { integerFlag, print, UsageError, type Io } from './common.ts';
import { defineCommand, type Command } from './command.ts';
import { confirmChange } from './confirm.ts';
import { withTable, type Target, type TargetValues } from './target.ts';

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
      await confirmChange(target, `move key ${keyId} to plan ${choice.plan}`, values.yes, io);
      const { before, after } = await changePlan(store, keyId, choice, io.now());
      print(
        io.stdout,
        `Key ${keyId}: plan ${before.plan} (${formatLimits(limitsOf(before))}) → ${after.plan} (${formatLimits(limitsOf(after))}). It takes effect ${CACHE_NOTE}.`,
      );
    });
  },
);

export const KEY_COMMANDS: readonly Command[] = [create, list, revoke, rotate, setPlan];

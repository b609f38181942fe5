/**
 * `keys list` and `keys show`: what the store holds of keys, and a key's counter as the rate
 * limiter sees it now. They change nothing, and print neither a key nor its hash.
 */
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { RateLimitAdmin } from '../../lib/dynamodb/rate-limit-admin.ts';
import { switchFlag } from '../../lib/config/flags.ts';
import {
  isExpired,
  limitsOf,
  permissionsOf,
  type ApiKeyRecord,
} from '../../lib/keys/key-record.ts';
import { formatPermissions, type Permission } from '../../lib/keys/permissions.ts';
import { findKey, listKeys } from '../../lib/keys/lifecycle.ts';
import { refusalsIn } from '../../lib/limits/ban.ts';
import { standing } from '../../lib/limits/free-allowance.ts';
import type { Limits } from '../../lib/limits/plans.ts';
import {
  DAY_MS,
  estimate,
  MINUTE_MS,
  retryAfterSeconds,
  type CounterState,
} from '../../lib/limits/sliding-window.ts';
import { defineCommand } from '../command.ts';
import { print } from '../common.ts';
import { withTables, type Target } from '../target.ts';
import { formatLimits, keyIdArgument, shortTime, withKeyStore } from './shared.ts';

/** What a list shows of a key: never the key, never its hash. */
export interface KeyView {
  readonly keyId: string;
  readonly label?: string;
  readonly plan: string;
  readonly limits?: Limits;
  /** What the key may do (every permission for a key stored before permissions). */
  readonly permissions: readonly Permission[];
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
    permissions: permissionsOf(record),
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

export const list = defineCommand(
  {
    name: 'keys list',
    summary: 'every key: id, label, plan, limits, permissions, status, created, expiry',
    description: `Lists every key, oldest first: id, label, plan, limits, permissions (read, cancel), status
(active, revoked, expired), created, expiry (set by a rotation) and successor. Never a key or a
key hash.`,
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
      [
        'ID',
        'LABEL',
        'PLAN',
        'PER MIN',
        'PER DAY',
        'PERMISSIONS',
        'STATUS',
        'CREATED',
        'EXPIRES',
        'REPLACED BY',
      ],
      ...views.map((view) => [
        view.keyId,
        view.label ?? '-',
        view.plan,
        String(view.limits?.perMinute ?? '-'),
        String(view.limits?.perDay ?? '-'),
        formatPermissions(view.permissions),
        view.status,
        shortTime(view.createdAt),
        shortTime(view.expiresAt),
        view.replacedBy ?? '-',
      ]),
    ];
    for (const line of table(rows)) print(io.stdout, line);
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

export function counterView(
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

export const show = defineCommand(
  {
    name: 'keys show',
    summary:
      "a key's plan, limits, permissions, state, current minute and day counts, refusals and ban",
    description: `Shows a key: plan, limits, permissions and state (active, revoked, expired), and its counter
as the rate limiter sees it now: the minute and day counts (the sliding-window estimate its limits are
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
        ['permissions', formatPermissions(key.permissions)],
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

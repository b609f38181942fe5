/**
 * What the `keys` commands share: the plan flags and the limits a target can honour, how a key
 * is named in their lines, the key store of a target, the <key-id> argument.
 */
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { STAGE_THROTTLES } from '../../lib/deployment.ts';
import { perKeyCeiling, unhonourable } from '../../lib/limits/capacity.ts';
import { limitsOf, permissionsOf, type ApiKeyRecord } from '../../lib/keys/key-record.ts';
import { choosePermissions, choosePlan, parseKeyId } from '../../lib/keys/lifecycle.ts';
import {
  formatPermissions,
  PERMISSION_ACTIONS,
  PERMISSIONS,
  type Permission,
} from '../../lib/keys/permissions.ts';
import { PLAN_NAMES, type Limits } from '../../lib/limits/plans.ts';
import { switchFlag, valueFlag } from '../../lib/config/flags.ts';
import { Failure, integerFlag, UsageError } from '../common.ts';
import { withTable, type Target, type TargetValues } from '../target.ts';

/**
 * When a key's change reaches requests: the TTL is a stage setting (`authorizerCacheTtlSeconds`,
 * infra/config.ts), so the note names the setting and its default, not one stage's value.
 */
export const CACHE_NOTE =
  "within the stage's authorizer cache TTL (authorizerCacheTtlSeconds, 60 s by default; npm start -- --authorizer-ttl locally)";

export const PLAN_FLAGS = {
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

export function planChoice(values: { plan?: string; 'per-minute'?: string; 'per-day'?: string }) {
  return choosePlan(values.plan, {
    perMinute: integerFlag(values['per-minute'], 'per-minute'),
    perDay: integerFlag(values['per-day'], 'per-day'),
  });
}

/**
 * Refuses limits the target cannot honour: above what one counter item sustains, or above the
 * stage's throttle (lib/limits/capacity.ts). Fixed plans are within both.
 */
export function refuseUnhonourable(choice: { limits?: Limits }, target: Target): void {
  if (!choice.limits) return;
  const ceiling = perKeyCeiling(
    target.stage
      ? { name: target.stage, throttleRps: STAGE_THROTTLES[target.stage].rateLimit }
      : undefined,
  );
  const reason = unhonourable(choice.limits, ceiling);
  if (reason) throw new Failure(`refused, nothing changed: ${reason}`);
}

/** The flags that say what a key may do. */
export const PERMISSION_FLAGS = {
  permissions: valueFlag(
    PERMISSIONS.join(','),
    `what the key may do, comma-separated: ${PERMISSIONS.map((p) => `${p} (${PERMISSION_ACTIONS[p]})`).join(', ')}; read covers v1's list and v2's pages`,
  ),
  'read-only': switchFlag('the key may only read orders (--permissions read)'),
};

/** The permissions the flags give; `fallback` when they give none (undefined: required). */
export function permissionChoice(
  values: { permissions?: string; 'read-only'?: boolean },
  fallback?: readonly Permission[],
): readonly Permission[] {
  return choosePermissions(values.permissions, values['read-only'], fallback);
}

export function formatLimits(limits: Limits | undefined): string {
  return limits ? `${limits.perMinute}/min, ${limits.perDay}/day` : 'no limits stored';
}

export function describeKey(record: ApiKeyRecord): string {
  const label = record.label === undefined ? '' : `, label ${JSON.stringify(record.label)}`;
  const permissions = formatPermissions(permissionsOf(record));
  return `${record.keyId} (plan ${record.plan}: ${formatLimits(limitsOf(record))}; permissions ${permissions}${label})`;
}

/** Runs `action` with the key store of the target the flags name. */
export function withKeyStore<T>(
  values: TargetValues,
  action: (store: DynamoDbKeyStore, target: Target) => Promise<T>,
): Promise<T> {
  return withTable(values, 'apiKeys', (client, table, target) =>
    action(new DynamoDbKeyStore(client, table), target),
  );
}

export function keyIdArgument(positionals: readonly string[]): string {
  const raw = positionals[0];
  if (raw === undefined) throw new UsageError('missing <key-id>');
  return parseKeyId(raw);
}

export function shortTime(iso: string | undefined): string {
  return iso === undefined ? '-' : iso.replace(/\.\d{3}Z$/, 'Z');
}

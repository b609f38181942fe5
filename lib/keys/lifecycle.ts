/**
 * The operator's API-key lifecycle — issue, list, revoke, rotate, change plan or permissions — as
 * rules over a KeyAdminStore. The plaintext key exists only in the value returned by `issueKey` and
 * `rotateKey`; the store only ever sees its hash.
 *
 * Rules:
 * - a revoked or expired key cannot be rotated or change plan or permissions, nor can a key
 *   already rotated (its successor can); revoking is idempotent;
 * - a key may read orders, cancel them, or both (./permissions.ts): every permission unless the
 *   operator names fewer;
 * - a rotation issues a new key with the same plan, limits, permissions and label, and sets the old key's
 *   `expiresAt` to now + grace (it keeps working until then) and its `replacedBy` to the new id;
 * - enterprise keys carry their own per-minute and per-day limits; the other plans refuse them.
 */
import {
  isPlanName,
  MAX_LIMIT,
  PLAN_LIMITS,
  PLAN_NAMES,
  MinuteAboveDay,
  resolveLimits,
  type Limits,
  type PlanName,
} from '../limits/plans.ts';
import { findApiKey, generateApiKey, keyHint, looksLikeApiKey, quotableInput } from './api-key.ts';
import { isExpired, nextVersion, permissionsOf, type ApiKeyRecord } from './key-record.ts';
import type { KeyAdminStore } from './key-store.ts';
import {
  formatPermissions,
  parsePermissions,
  PERMISSIONS,
  READ_ONLY,
  type Permission,
} from './permissions.ts';
import { newKeyRecord } from './plaintext-keys.ts';

/** Input that breaks a rule before anything is read: a bad plan, limits, grace or key id. */
export class InvalidKeyInput extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InvalidKeyInput';
  }
}

export type KeyRefusalReason = 'not-found' | 'revoked' | 'expired' | 'rotated' | 'conflict';

/** The key's state forbids the operation; nothing was changed. */
export class KeyRefused extends Error {
  readonly reason: KeyRefusalReason;
  constructor(reason: KeyRefusalReason, message: string) {
    super(message);
    this.name = 'KeyRefused';
    this.reason = reason;
  }
}

/** Public key ids are `key_` + base62 (see newKeyId). */
const KEY_ID = /^key_[0-9A-Za-z]{1,64}$/;

/**
 * A public key id as an operator types it. A pasted API key is refused without being echoed
 * whole: the message shows its hint only (`sok_AbCd…`).
 */
export function parseKeyId(text: string): string {
  if (looksLikeApiKey(text)) {
    throw new InvalidKeyInput(
      `that is an API key, not a key id (key_…): got ${keyHint(text)}; keys list shows the ids`,
    );
  }
  if (!KEY_ID.test(text)) {
    throw new InvalidKeyInput(
      `key id must look like key_AbC123 (key_ + letters and digits), got "${quotableInput(text)}"`,
    );
  }
  return text;
}

export const MAX_LABEL_LENGTH = 200;

/**
 * A label: up to 200 characters, none of them a control character (it is printed in lists), and
 * no API key in it (a label is stored and shown as it is).
 */
export function parseLabel(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  if (text.length === 0 || text.length > MAX_LABEL_LENGTH || /[\u0000-\u001f\u007f]/.test(text)) {
    throw new InvalidKeyInput(
      `label must be 1 to ${MAX_LABEL_LENGTH} characters without control characters`,
    );
  }
  const key = findApiKey(text);
  if (key !== undefined) {
    throw new InvalidKeyInput(
      `label must not hold an API key (${keyHint(key)}): a label is stored and listed as it is`,
    );
  }
  return text;
}

export interface PlanChoice {
  readonly plan: PlanName;
  /** Enterprise only. */
  readonly limits?: Limits;
}

/**
 * A plan and, for enterprise, its limits, as an operator gives them. The rules are
 * resolveLimits's (lib/limits/plans.ts); its refusal is reworded in the operator's flags.
 */
export function choosePlan(plan: string | undefined, custom: Partial<Limits> = {}): PlanChoice {
  if (!isPlanName(plan)) {
    throw new InvalidKeyInput(
      plan === undefined
        ? `a plan is required: one of ${PLAN_NAMES.join(', ')}`
        : `plan must be one of ${PLAN_NAMES.join(', ')}, got "${quotableInput(plan)}"`,
    );
  }
  let limits: Limits;
  try {
    limits = resolveLimits(plan, custom);
  } catch (error) {
    throw new InvalidKeyInput(
      error instanceof MinuteAboveDay
        ? `--per-minute (${custom.perMinute}) cannot be above --per-day (${custom.perDay})`
        : plan === 'enterprise'
          ? `the enterprise plan needs both a per-minute and a per-day limit, integers from 1 to ${MAX_LIMIT}`
          : `plan ${plan} has fixed limits (${PLAN_LIMITS[plan].perMinute}/min, ${PLAN_LIMITS[plan].perDay}/day); per-minute and per-day limits are only for enterprise`,
      { cause: error },
    );
  }
  return plan === 'enterprise' ? { plan, limits } : { plan };
}

/**
 * The permissions an operator gives: a list (`read,cancel`), or read only (`--read-only`), not
 * both; `fallback` when neither is given (without one, they are required).
 */
export function choosePermissions(
  list: string | undefined,
  readOnly: boolean | undefined,
  fallback?: readonly Permission[],
): readonly Permission[] {
  if (list !== undefined && readOnly) {
    throw new InvalidKeyInput('give --permissions or --read-only, not both');
  }
  if (readOnly) return READ_ONLY;
  if (list === undefined) {
    if (fallback) return fallback;
    throw new InvalidKeyInput(
      `give the key's permissions: --permissions with ${PERMISSIONS.join(', ')} or both (comma-separated), or --read-only`,
    );
  }
  const permissions = parsePermissions(list);
  if (!permissions) {
    throw new InvalidKeyInput(
      `permissions must be ${PERMISSIONS.join(', ')} or both, comma-separated (e.g. read,cancel), got "${quotableInput(list)}"`,
    );
  }
  return permissions;
}

export const DEFAULT_GRACE = '24h';
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** A longer overlap would defeat the point of rotating. */
export const MAX_GRACE_MS = 90 * UNIT_MS.d;

/** A grace period such as `24h`, `30m`, `0s` or `7d`, in milliseconds (at most 90 days). */
export function parseGrace(text: string): number {
  const match = /^(\d{1,7})([smhd])$/.exec(text);
  if (!match) {
    throw new InvalidKeyInput(
      `grace must be a whole number and a unit s, m, h or d (e.g. 24h, 30m, 0s, 7d), got "${quotableInput(text)}"`,
    );
  }
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms > MAX_GRACE_MS) throw new InvalidKeyInput(`grace must be at most 90d, got "${text}"`);
  return ms;
}

export interface IssuedKey {
  /** The plaintext key: shown once, never stored. */
  readonly key: string;
  readonly record: ApiKeyRecord;
}

/** What a new key is issued with: a plan, and a label and permissions when chosen. */
export interface KeyTemplate extends PlanChoice {
  readonly label?: string;
  /** Every permission when not given. */
  readonly permissions?: readonly Permission[];
}

/** A fresh key and the record that will store its hash. */
function newKey(template: KeyTemplate, now: Date): IssuedKey {
  const key = generateApiKey();
  const record = newKeyRecord(
    {
      key,
      plan: template.plan,
      ...(template.limits ? { limits: template.limits } : {}),
      ...(template.label !== undefined ? { label: template.label } : {}),
      ...(template.permissions ? { permissions: template.permissions } : {}),
    },
    now,
  );
  return { key, record };
}

export async function issueKey(
  store: KeyAdminStore,
  choice: KeyTemplate,
  now: Date,
): Promise<IssuedKey> {
  const issued = newKey(choice, now);
  // 190 random bits: a hash collision would mean a broken random source.
  if (!(await store.create(issued.record))) throw new Error('a key with the same hash exists');
  return issued;
}

/** The key with this id, or KeyRefused (not-found). */
export async function findKey(store: KeyAdminStore, keyId: string): Promise<ApiKeyRecord> {
  const record = await store.findById(keyId);
  if (!record) throw new KeyRefused('not-found', `key ${keyId} was not found`);
  return record;
}

function refuseUnusable(record: ApiKeyRecord, now: Date, action: string): void {
  if (record.status === 'revoked') {
    throw new KeyRefused(
      'revoked',
      `key ${record.keyId} is revoked; a revoked key cannot ${action} (create a new key instead)`,
    );
  }
  if (isExpired(record, now)) {
    throw new KeyRefused(
      'expired',
      `key ${record.keyId} expired at ${record.expiresAt}; an expired key cannot ${action}`,
    );
  }
}

function conflict(keyId: string): KeyRefused {
  return new KeyRefused(
    'conflict',
    `key ${keyId} changed while this command ran (revoked, rotated, re-planned, given other permissions or deleted); nothing was changed, look at it again`,
  );
}

export async function listKeys(store: KeyAdminStore): Promise<ApiKeyRecord[]> {
  const records = await store.list();
  return records.sort(
    (a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId),
  );
}

/**
 * Revokes a key; revoking a revoked key changes nothing (its `revokedAt` stays the first
 * revocation's) and is not an error — also when another revocation lands between the read and
 * the write.
 */
export async function revokeKey(
  store: KeyAdminStore,
  keyId: string,
  now: Date,
): Promise<{ record: ApiKeyRecord; alreadyRevoked: boolean }> {
  const record = await findKey(store, keyId);
  if (record.status === 'revoked') return { record, alreadyRevoked: true };
  const revokedAt = now.toISOString();
  if (!(await store.revoke(record, revokedAt))) {
    const current = await findKey(store, keyId);
    if (current.status === 'revoked') return { record: current, alreadyRevoked: true };
    throw conflict(keyId);
  }
  return {
    record: { ...record, status: 'revoked', revokedAt, version: nextVersion(record) },
    alreadyRevoked: false,
  };
}

export interface Rotation extends IssuedKey {
  /** The old key as it now is: `expiresAt` = now + grace, `replacedBy` = the new key's id. */
  readonly old: ApiKeyRecord;
}

export async function rotateKey(
  store: KeyAdminStore,
  keyId: string,
  graceMs: number,
  now: Date,
): Promise<Rotation> {
  const record = await findKey(store, keyId);
  refuseUnusable(record, now, 'be rotated');
  if (record.replacedBy !== undefined) {
    throw new KeyRefused(
      'rotated',
      `key ${keyId} was already rotated to ${record.replacedBy} (it expires at ${record.expiresAt}); rotate ${record.replacedBy} instead`,
    );
  }
  // A key stored before permissions holds them all: so does its successor, stored with them.
  const issued = newKey(
    {
      plan: record.plan,
      ...(record.limits ? { limits: record.limits } : {}),
      ...(record.label !== undefined ? { label: record.label } : {}),
      permissions: permissionsOf(record),
    },
    now,
  );
  const expiresAt = new Date(now.getTime() + graceMs).toISOString();
  if (!(await store.rotate(record, expiresAt, issued.record))) throw conflict(keyId);
  return {
    ...issued,
    old: { ...record, expiresAt, replacedBy: issued.record.keyId, version: nextVersion(record) },
  };
}

export async function changePlan(
  store: KeyAdminStore,
  keyId: string,
  choice: PlanChoice,
  now: Date,
): Promise<{ before: ApiKeyRecord; after: ApiKeyRecord }> {
  const before = await changeableKey(store, keyId, now, 'plan');
  if (!(await store.setPlan(before, choice.plan, choice.limits))) throw conflict(keyId);
  return {
    before,
    after: { ...before, plan: choice.plan, limits: choice.limits, version: nextVersion(before) },
  };
}

/** The key with this id, refused when its state forbids a change (`change` says which). */
async function changeableKey(
  store: KeyAdminStore,
  keyId: string,
  now: Date,
  change: string,
): Promise<ApiKeyRecord> {
  const record = await findKey(store, keyId);
  refuseUnusable(record, now, `change ${change}`);
  if (record.replacedBy !== undefined) {
    throw new KeyRefused(
      'rotated',
      `key ${keyId} was rotated to ${record.replacedBy} and expires at ${record.expiresAt}; change the ${change} of ${record.replacedBy} instead`,
    );
  }
  return record;
}

/**
 * Replaces what a key may do. Giving a key the permissions it holds changes nothing (no write:
 * `changed` is false), so running the same command again is harmless.
 */
export async function changePermissions(
  store: KeyAdminStore,
  keyId: string,
  permissions: readonly Permission[],
  now: Date,
): Promise<{ before: ApiKeyRecord; after: ApiKeyRecord; changed: boolean }> {
  const before = await changeableKey(store, keyId, now, 'permissions');
  if (formatPermissions(permissionsOf(before)) === formatPermissions(permissions)) {
    return { before, after: before, changed: false };
  }
  if (!(await store.setPermissions(before, permissions))) throw conflict(keyId);
  return {
    before,
    after: { ...before, permissions, version: nextVersion(before) },
    changed: true,
  };
}

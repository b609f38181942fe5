import { PLAN_LIMITS, type Limits, type PlanName } from '../limits/plans.ts';
import { ALL_PERMISSIONS, type Permission } from './permissions.ts';

export type KeyStatus = 'active' | 'revoked';

/** A stored API key: never the key itself, only its hash. */
export interface ApiKeyRecord {
  readonly keyId: string;
  readonly keyHash: string;
  readonly plan: PlanName;
  /** Custom limits of an enterprise key. */
  readonly limits?: Limits;
  readonly label?: string;
  /**
   * What the key may do (./permissions.ts); absent on a key issued before permissions existed,
   * which may do everything (permissionsOf).
   */
  readonly permissions?: readonly Permission[];
  readonly status: KeyStatus;
  /** ISO 8601 instants. */
  readonly createdAt: string;
  /** After this instant the key no longer works (the old key of a rotation). */
  readonly expiresAt?: string;
  /** When it was revoked (ISO 8601). */
  readonly revokedAt?: string;
  /** The public id of the key that replaced this one in a rotation. */
  readonly replacedBy?: string;
  /**
   * How many times the key was changed (revoked, rotated, re-planned); absent means 0. Every
   * change requires the version it read and stores the next one, so a change made from a stale
   * read is refused instead of undoing the change in between.
   */
  readonly version?: number;
}

/** The record's version: 0 for a key never changed (stored without one). */
export function versionOf(record: Pick<ApiKeyRecord, 'version'>): number {
  return record.version ?? 0;
}

/** The version a change of this record stores. */
export function nextVersion(record: Pick<ApiKeyRecord, 'version'>): number {
  return versionOf(record) + 1;
}

/** A key as the rate limiter counts its requests: its id, plan and limits. */
export interface CountedKey {
  readonly keyId: string;
  readonly plan: PlanName;
  readonly limits: Limits;
}

/** The identified caller that the authorizer hands to the functions. */
export interface Caller extends CountedKey {
  /** What the key may do: a request it may not make is refused 403 once it is counted. */
  readonly permissions: readonly Permission[];
}

/** What a key may do: its permissions, or every one for a key stored before permissions. */
export function permissionsOf(record: Pick<ApiKeyRecord, 'permissions'>): readonly Permission[] {
  return record.permissions ?? ALL_PERMISSIONS;
}

export function isUsable(record: ApiKeyRecord, now: Date): boolean {
  if (record.status !== 'active') return false;
  return !isExpired(record, now);
}

/** Whether a stored instant (ISO 8601) can be read as one. */
export function isInstant(text: string): boolean {
  return Number.isFinite(Date.parse(text));
}

/**
 * True once the key's expiry (set by a rotation) has passed. An expiry that cannot be read is
 * taken as passed: a key fails closed, never open (the store reports such a record anyway).
 */
export function isExpired(record: ApiKeyRecord, now: Date): boolean {
  if (record.expiresAt === undefined) return false;
  const expires = Date.parse(record.expiresAt);
  return !(expires > now.getTime());
}

/** The limits a record grants (undefined only for a malformed enterprise record). */
export function limitsOf(record: Pick<ApiKeyRecord, 'plan' | 'limits'>): Limits | undefined {
  return record.plan === 'enterprise' ? record.limits : PLAN_LIMITS[record.plan];
}

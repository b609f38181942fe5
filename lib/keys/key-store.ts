import type { CallOptions } from '../failures.ts';
import type { Limits, PlanName } from '../limits/plans.ts';
import type { ApiKeyRecord } from './key-record.ts';
import type { Permission } from './permissions.ts';

/** The port API-key authentication and registration need from storage. */
export interface KeyStore {
  /** The record of a key hash, by `signal`'s deadline (a record it cannot read: a failure). */
  findByHash(keyHash: string, options?: CallOptions): Promise<ApiKeyRecord | undefined>;
  /** Stores a new key record; returns false when a key with this hash already exists. */
  create(record: ApiKeyRecord): Promise<boolean>;
}

/**
 * What the operator's key lifecycle (issue, list, revoke, rotate, change plan or permissions)
 * needs besides.
 * Every change is one conditional write on the record's `version` as read, and stores the next
 * version: false means the key was not as it was read (gone, revoked, rotated or re-planned
 * meanwhile) and nothing was changed.
 */
export interface KeyAdminStore extends KeyStore {
  /** The key with this public id (`key_…`), with every change made before the call. */
  findById(keyId: string): Promise<ApiKeyRecord | undefined>;
  /** Every key record (for operators: the table holds one item per key, never many). */
  list(): Promise<ApiKeyRecord[]>;
  /** status → revoked, provided the key is still active and at the version read. */
  revoke(record: ApiKeyRecord, revokedAt: string): Promise<boolean>;
  /**
   * Atomically stores the successor and sets the old key's expiry and `replacedBy`, provided
   * the old key is at the version read, still active, unexpired as read, and not yet rotated.
   */
  rotate(old: ApiKeyRecord, oldExpiresAt: string, successor: ApiKeyRecord): Promise<boolean>;
  /**
   * Changes the plan (and the custom limits, enterprise only) of a key that is at the version
   * read and still active.
   */
  setPlan(record: ApiKeyRecord, plan: PlanName, limits: Limits | undefined): Promise<boolean>;
  /** Replaces the permissions of a key that is at the version read and still active. */
  setPermissions(record: ApiKeyRecord, permissions: readonly Permission[]): Promise<boolean>;
}

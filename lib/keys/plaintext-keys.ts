/**
 * Keys given in plaintext (the local API's demo keys and `--keys` file, the tests'): the record
 * that stores each (its hash, never the key), and their registration.
 */
import { hashApiKey, newKeyId } from './api-key.ts';
import type { KeyEntry } from './key-input.ts';
import type { ApiKeyRecord } from './key-record.ts';
import type { KeyStore } from './key-store.ts';
import { ALL_PERMISSIONS, normalPermissions } from './permissions.ts';

/**
 * The record that stores a key: its hash, never the key, and its permissions (every one unless
 * the entry names fewer), stored with every new key.
 */
export function newKeyRecord(entry: KeyEntry, now: Date): ApiKeyRecord {
  return {
    keyId: newKeyId(),
    keyHash: hashApiKey(entry.key),
    plan: entry.plan,
    status: 'active',
    createdAt: now.toISOString(),
    ...(entry.limits ? { limits: entry.limits } : {}),
    ...(entry.label !== undefined ? { label: entry.label } : {}),
    permissions: normalPermissions(entry.permissions ?? ALL_PERMISSIONS),
  };
}

/**
 * Registers keys given in plaintext (local API, tests). A key already registered is kept as it
 * is. Returns how many were new.
 */
export async function registerKeys(
  store: KeyStore,
  entries: readonly KeyEntry[],
  now: Date,
): Promise<number> {
  let created = 0;
  for (const entry of entries) {
    if (await store.create(newKeyRecord(entry, now))) created++;
  }
  return created;
}

import type { ApiKeyRecord } from './key-record.ts';

/** The port API-key operations need from storage. */
export interface KeyStore {
  findByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** Stores a new key record; returns false when a key with this hash already exists. */
  create(record: ApiKeyRecord): Promise<boolean>;
}

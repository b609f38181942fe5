/** The KeyStore on DynamoDB: one item per key, keyed by the key's SHA-256 hash. */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord } from '../keys/key-record.ts';
import type { KeyStore } from '../keys/key-store.ts';
import { isPlanName } from '../limits/plans.ts';
import { readOptionalNumber } from './attributes.ts';
import { translateDynamoDbError } from './errors.ts';

type Item = Record<string, unknown>;

export function recordToItem(record: ApiKeyRecord): Item {
  const { limits, ...rest } = record;
  return limits ? { ...rest, perMinute: limits.perMinute, perDay: limits.perDay } : { ...rest };
}

export function itemToRecord(item: Item): ApiKeyRecord {
  const { keyId, keyHash, plan, label, status, createdAt, expiresAt } = item;
  if (typeof keyId !== 'string' || typeof keyHash !== 'string' || !isPlanName(plan)) {
    throw new Error('Stored API key record is malformed');
  }
  if (status !== 'active' && status !== 'revoked') throw new Error('Stored API key has no status');
  const perMinute = readOptionalNumber(item.perMinute, 'perMinute');
  const perDay = readOptionalNumber(item.perDay, 'perDay');
  return {
    keyId,
    keyHash,
    plan,
    status,
    createdAt: String(createdAt),
    ...(perMinute !== undefined && perDay !== undefined ? { limits: { perMinute, perDay } } : {}),
    ...(typeof label === 'string' ? { label } : {}),
    ...(typeof expiresAt === 'string' ? { expiresAt } : {}),
  };
}

export class DynamoDbKeyStore implements KeyStore {
  protected readonly client: DynamoDBDocumentClient;
  protected readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    try {
      const { Item } = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: { keyHash } }),
      );
      return Item ? itemToRecord(Item) : undefined;
    } catch (error) {
      return translateDynamoDbError(error);
    }
  }

  async create(record: ApiKeyRecord): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: recordToItem(record),
          ConditionExpression: 'attribute_not_exists(keyHash)',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateDynamoDbError(error);
    }
  }
}

/**
 * The KeyStore on DynamoDB: one item per key, keyed by the key's SHA-256 hash; the `byKeyId`
 * index finds a key by its public id. Every change is one conditional write (a rotation one
 * transaction), so an operator's change never lands on a key that changed meanwhile.
 */
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord } from '../keys/key-record.ts';
import type { KeyAdminStore } from '../keys/key-store.ts';
import { isPlanName, type Limits, type PlanName } from '../limits/plans.ts';
import { readOptionalNumber } from './attributes.ts';
import { translateDynamoDbError } from './errors.ts';
import { TABLES } from './tables.ts';

const BY_KEY_ID = TABLES.apiKeys.globalIndexes[0].name;

type Item = Record<string, unknown>;

export function recordToItem(record: ApiKeyRecord): Item {
  const { limits, ...rest } = record;
  return limits ? { ...rest, perMinute: limits.perMinute, perDay: limits.perDay } : { ...rest };
}

export function itemToRecord(item: Item): ApiKeyRecord {
  const { keyId, keyHash, plan, label, status, createdAt, expiresAt, revokedAt, replacedBy } = item;
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
    ...(typeof revokedAt === 'string' ? { revokedAt } : {}),
    ...(typeof replacedBy === 'string' ? { replacedBy } : {}),
  };
}

/**
 * The condition that the key is still as it was read: there, active, not rotated, with the
 * same expiry.
 */
function unchangedAndActive(
  record: ApiKeyRecord,
): Pick<
  UpdateCommandInput,
  'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
> {
  return {
    ConditionExpression: [
      'attribute_exists(#keyHash)',
      '#status = :active',
      'attribute_not_exists(#replacedBy)',
      record.expiresAt === undefined
        ? 'attribute_not_exists(#expiresAt)'
        : '#expiresAt = :readExpiresAt',
    ].join(' AND '),
    ExpressionAttributeNames: {
      '#keyHash': 'keyHash',
      '#status': 'status',
      '#replacedBy': 'replacedBy',
      '#expiresAt': 'expiresAt',
    },
    ExpressionAttributeValues: {
      ':active': 'active',
      ...(record.expiresAt === undefined ? {} : { ':readExpiresAt': record.expiresAt }),
    },
  };
}

export class DynamoDbKeyStore implements KeyAdminStore {
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

  async findById(keyId: string): Promise<ApiKeyRecord | undefined> {
    try {
      const { Items } = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: BY_KEY_ID,
          KeyConditionExpression: '#keyId = :keyId',
          ExpressionAttributeNames: { '#keyId': 'keyId' },
          ExpressionAttributeValues: { ':keyId': keyId },
        }),
      );
      const item = Items?.[0];
      return item ? itemToRecord(item) : undefined;
    } catch (error) {
      return translateDynamoDbError(error);
    }
  }

  async list(): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Item | undefined;
    try {
      do {
        const page = await this.client.send(
          new ScanCommand({ TableName: this.tableName, ExclusiveStartKey: startKey }),
        );
        for (const item of page.Items ?? []) records.push(itemToRecord(item));
        startKey = page.LastEvaluatedKey;
      } while (startKey);
    } catch (error) {
      return translateDynamoDbError(error);
    }
    return records;
  }

  async revoke(record: ApiKeyRecord, revokedAt: string): Promise<boolean> {
    return this.update({
      TableName: this.tableName,
      Key: { keyHash: record.keyHash },
      UpdateExpression: 'SET #status = :revoked, #revokedAt = :revokedAt',
      ConditionExpression: 'attribute_exists(#keyHash)',
      ExpressionAttributeNames: {
        '#keyHash': 'keyHash',
        '#status': 'status',
        '#revokedAt': 'revokedAt',
      },
      ExpressionAttributeValues: { ':revoked': 'revoked', ':revokedAt': revokedAt },
    });
  }

  async rotate(old: ApiKeyRecord, oldExpiresAt: string, successor: ApiKeyRecord): Promise<boolean> {
    const unchanged = unchangedAndActive(old);
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: recordToItem(successor),
                ConditionExpression: 'attribute_not_exists(keyHash)',
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: { keyHash: old.keyHash },
                UpdateExpression: 'SET #expiresAt = :expiresAt, #replacedBy = :replacedBy',
                ConditionExpression: unchanged.ConditionExpression as string,
                ExpressionAttributeNames: unchanged.ExpressionAttributeNames,
                ExpressionAttributeValues: {
                  ...unchanged.ExpressionAttributeValues,
                  ':expiresAt': oldExpiresAt,
                  ':replacedBy': successor.keyId,
                },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (
        error instanceof TransactionCanceledException &&
        error.CancellationReasons?.some((reason) => reason.Code === 'ConditionalCheckFailed')
      ) {
        return false;
      }
      return translateDynamoDbError(error);
    }
  }

  async setPlan(
    record: ApiKeyRecord,
    plan: PlanName,
    limits: Limits | undefined,
  ): Promise<boolean> {
    const unchanged = unchangedAndActive(record);
    return this.update({
      TableName: this.tableName,
      Key: { keyHash: record.keyHash },
      UpdateExpression: limits
        ? 'SET #plan = :plan, #perMinute = :perMinute, #perDay = :perDay'
        : 'SET #plan = :plan REMOVE #perMinute, #perDay',
      ...unchanged,
      ExpressionAttributeNames: {
        ...unchanged.ExpressionAttributeNames,
        '#plan': 'plan',
        '#perMinute': 'perMinute',
        '#perDay': 'perDay',
      },
      ExpressionAttributeValues: {
        ...unchanged.ExpressionAttributeValues,
        ':plan': plan,
        ...(limits ? { ':perMinute': limits.perMinute, ':perDay': limits.perDay } : {}),
      },
    });
  }

  /** One conditional UpdateItem: false when the condition did not hold. */
  private async update(input: UpdateCommandInput): Promise<boolean> {
    try {
      await this.client.send(new UpdateCommand(input));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateDynamoDbError(error);
    }
  }
}

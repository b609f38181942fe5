/**
 * The KeyStore on DynamoDB: one item per key, keyed by the key's SHA-256 hash, so that the
 * authorizer's lookup is a strongly consistent GetItem on the table (an index could not be
 * read strongly consistent). The `byKeyId` index finds a key's hash by its public id, and the
 * item itself is then read from the table with a strongly consistent read (the index is
 * eventually consistent). Every change is one conditional write (a rotation one transaction) on
 * the version that was read, and stores the next version, so an operator's change never lands
 * on a key that changed meanwhile.
 */
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
import { isInstant, nextVersion, versionOf, type ApiKeyRecord } from '../keys/key-record.ts';
import type { KeyAdminStore } from '../keys/key-store.ts';
import { normalPermissions, readPermissionList, type Permission } from '../keys/permissions.ts';
import { isPlanName, isValidLimits, type Limits, type PlanName } from '../limits/plans.ts';
import type { CallOptions } from '../failures.ts';
import { malformedItem, readOptionalNumber } from './attributes.ts';
import { isConditionFailure, send } from './errors.ts';
import { TABLES } from './tables.ts';

const BY_KEY_ID = TABLES.apiKeys.globalIndexes[0].name;
/** How failures of this table are named in logs. */
const DEPENDENCY = 'api keys table';

type Item = Record<string, unknown>;

export function recordToItem(record: ApiKeyRecord): Item {
  const { limits, ...rest } = record;
  return limits ? { ...rest, perMinute: limits.perMinute, perDay: limits.perDay } : { ...rest };
}

/**
 * A key's stored permissions: a list of their names (absent on a key stored before permissions,
 * which holds them all). A list that is empty or names one this code does not know is malformed:
 * a key fails closed, never open.
 */
function readPermissions(value: unknown, keyId: string): Permission[] | undefined {
  if (value === undefined) return undefined;
  const permissions = readPermissionList(value);
  if (!permissions) {
    throw malformedItem(
      DEPENDENCY,
      `key ${keyId} has permissions that are not a list of known ones`,
    );
  }
  return permissions;
}

/** A stored key record; a record the service cannot read is a permanent failure. */
export function itemToRecord(item: Item): ApiKeyRecord {
  const { keyId, keyHash, plan, label, status, createdAt, expiresAt, revokedAt, replacedBy } = item;
  const number = (name: string) => readOptionalNumber(item[name], name, DEPENDENCY);
  const version = number('version');
  if (typeof keyId !== 'string' || typeof keyHash !== 'string' || !isPlanName(plan)) {
    throw malformedItem(DEPENDENCY, 'a key record lacks its id, hash or a known plan');
  }
  if (status !== 'active' && status !== 'revoked') {
    throw malformedItem(DEPENDENCY, `key ${keyId} has no known status`);
  }
  const permissions = readPermissions(item.permissions, keyId);
  const perMinute = number('perMinute');
  const perDay = number('perDay');
  const limits =
    perMinute !== undefined && perDay !== undefined ? { perMinute, perDay } : undefined;
  if (plan === 'enterprise' && !isValidLimits(limits)) {
    throw malformedItem(DEPENDENCY, `enterprise key ${keyId} has no valid limits`);
  }
  // An expiry that does not parse would never pass: the record is unusable, not eternal.
  if (expiresAt !== undefined && (typeof expiresAt !== 'string' || !isInstant(expiresAt))) {
    throw malformedItem(DEPENDENCY, `key ${keyId} has an expiry that is not an instant`);
  }
  return {
    keyId,
    keyHash,
    plan,
    status,
    createdAt: String(createdAt),
    ...(limits ? { limits } : {}),
    ...(typeof label === 'string' ? { label } : {}),
    ...(permissions ? { permissions } : {}),
    ...(typeof expiresAt === 'string' ? { expiresAt } : {}),
    ...(typeof revokedAt === 'string' ? { revokedAt } : {}),
    ...(typeof replacedBy === 'string' ? { replacedBy } : {}),
    ...(version !== undefined ? { version } : {}),
  };
}

type Condition = Pick<
  UpdateCommandInput,
  'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/**
 * The condition that the key is still at the version it was read at (a key never changed has
 * no version attribute, or 0), and the update that stores the next version.
 */
function atVersionRead(record: ApiKeyRecord): Condition & { readonly set: string } {
  const read = versionOf(record);
  return {
    ConditionExpression:
      read === 0
        ? '(attribute_not_exists(#version) OR #version = :readVersion)'
        : '#version = :readVersion',
    ExpressionAttributeNames: { '#version': 'version' },
    ExpressionAttributeValues: { ':readVersion': read, ':nextVersion': nextVersion(record) },
    set: '#version = :nextVersion',
  };
}

/** Both conditions (and updates) at once. */
function both(a: Condition, b: Condition): Required<Condition> {
  return {
    ConditionExpression: `${a.ConditionExpression} AND ${b.ConditionExpression}`,
    ExpressionAttributeNames: { ...a.ExpressionAttributeNames, ...b.ExpressionAttributeNames },
    ExpressionAttributeValues: { ...a.ExpressionAttributeValues, ...b.ExpressionAttributeValues },
  };
}

/**
 * The condition that the key is still as it was read: there, at the same version, active, not
 * rotated, with the same expiry. The version alone would do for keys changed only by this
 * code; the state is checked too, so that a key changed without a version (by an older CLI, or
 * by hand in the console) is still never rotated or re-planned once it is revoked or rotated.
 */
function unchangedAndActive(record: ApiKeyRecord): Required<Condition> & { readonly set: string } {
  const version = atVersionRead(record);
  return { ...both(version, stateAsRead(record)), set: version.set };
}

function stateAsRead(record: ApiKeyRecord): Condition {
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

/** Whether a conditional write was applied: false when its condition did not hold. */
async function applied(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * The API keys on DynamoDB (the ports: lib/keys/key-store.ts): the authorizer finds a key by its
 * hash, strongly consistent; the operators' CLI creates, lists, revokes, rotates and re-plans
 * keys, each change a conditional write on the version it read (false when another change came
 * first). Only a key's SHA-256 is stored, never the key.
 *
 * @example
 * ```typescript
 * import { createDocumentClient } from './client.ts';
 * import { DynamoDbKeyStore } from './keys-table.ts';
 * import { hashApiKey } from '../keys/api-key.ts';
 *
 * const keys = new DynamoDbKeyStore(createDocumentClient(), 'store-orders-dev-api-keys');
 * const signal = AbortSignal.timeout(1_000);
 * const record = await keys.findByHash(hashApiKey('sok_…the caller’s bearer token'), { signal });
 * if (record?.status === 'active') console.log(record.keyId, record.plan);
 * ```
 */
export class DynamoDbKeyStore implements KeyAdminStore {
  protected readonly client: DynamoDBDocumentClient;
  protected readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async findByHash(keyHash: string, options: CallOptions = {}): Promise<ApiKeyRecord | undefined> {
    const { Item } = await send(
      DEPENDENCY,
      (abortSignal) =>
        // Strongly consistent: a key created or rotated a moment ago is found (an eventually
        // consistent read could miss it, and API Gateway would cache that Deny for the TTL).
        this.client.send(
          new GetCommand({ TableName: this.tableName, Key: { keyHash }, ConsistentRead: true }),
          { abortSignal },
        ),
      options.signal,
    );
    return Item ? itemToRecord(Item) : undefined;
  }

  create(record: ApiKeyRecord): Promise<boolean> {
    return applied(
      send(DEPENDENCY, () =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: recordToItem(record),
            ConditionExpression: 'attribute_not_exists(keyHash)',
          }),
        ),
      ),
    );
  }

  /**
   * The index gives the key's hash (which never changes); the record is then read from the
   * table with a strongly consistent read, so it holds every change made before. A key created
   * a moment ago may not be in the index yet: it is then not found.
   */
  async findById(keyId: string): Promise<ApiKeyRecord | undefined> {
    const { Items } = await send(DEPENDENCY, () =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: BY_KEY_ID,
          KeyConditionExpression: '#keyId = :keyId',
          ProjectionExpression: '#keyHash',
          ExpressionAttributeNames: { '#keyId': 'keyId', '#keyHash': 'keyHash' },
          ExpressionAttributeValues: { ':keyId': keyId },
        }),
      ),
    );
    const keyHash: unknown = Items?.[0]?.keyHash;
    return typeof keyHash === 'string' ? this.findByHash(keyHash) : undefined;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Item | undefined;
    do {
      const page = await send(DEPENDENCY, () =>
        this.client.send(
          new ScanCommand({ TableName: this.tableName, ExclusiveStartKey: startKey }),
        ),
      );
      for (const item of page.Items ?? []) records.push(itemToRecord(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return records;
  }

  async revoke(record: ApiKeyRecord, revokedAt: string): Promise<boolean> {
    const version = atVersionRead(record);
    const active: Condition = {
      ConditionExpression: '#status = :active',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':active': 'active' },
    };
    const condition = both(active, version);
    return this.update({
      TableName: this.tableName,
      Key: { keyHash: record.keyHash },
      UpdateExpression: `SET #status = :revoked, #revokedAt = :revokedAt, ${version.set}`,
      ...condition,
      ExpressionAttributeNames: {
        ...condition.ExpressionAttributeNames,
        '#revokedAt': 'revokedAt',
      },
      ExpressionAttributeValues: {
        ...condition.ExpressionAttributeValues,
        ':revoked': 'revoked',
        ':revokedAt': revokedAt,
      },
    });
  }

  rotate(old: ApiKeyRecord, oldExpiresAt: string, successor: ApiKeyRecord): Promise<boolean> {
    const unchanged = unchangedAndActive(old);
    return applied(
      send(DEPENDENCY, () =>
        this.client.send(
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
                  UpdateExpression: `SET #expiresAt = :expiresAt, #replacedBy = :replacedBy, ${unchanged.set}`,
                  ConditionExpression: unchanged.ConditionExpression,
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
        ),
      ),
    );
  }

  async setPlan(
    record: ApiKeyRecord,
    plan: PlanName,
    limits: Limits | undefined,
  ): Promise<boolean> {
    const { set, ...unchanged } = unchangedAndActive(record);
    return this.update({
      TableName: this.tableName,
      Key: { keyHash: record.keyHash },
      UpdateExpression: limits
        ? `SET #plan = :plan, #perMinute = :perMinute, #perDay = :perDay, ${set}`
        : `SET #plan = :plan, ${set} REMOVE #perMinute, #perDay`,
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

  async setPermissions(record: ApiKeyRecord, permissions: readonly Permission[]): Promise<boolean> {
    const { set, ...unchanged } = unchangedAndActive(record);
    return this.update({
      TableName: this.tableName,
      Key: { keyHash: record.keyHash },
      UpdateExpression: `SET #permissions = :permissions, ${set}`,
      ...unchanged,
      ExpressionAttributeNames: {
        ...unchanged.ExpressionAttributeNames,
        '#permissions': 'permissions',
      },
      ExpressionAttributeValues: {
        ...unchanged.ExpressionAttributeValues,
        ':permissions': normalPermissions(permissions),
      },
    });
  }

  /** One conditional UpdateItem: false when the condition did not hold. */
  private update(input: UpdateCommandInput): Promise<boolean> {
    return applied(send(DEPENDENCY, () => this.client.send(new UpdateCommand(input))));
  }
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { createAuthorizerHandler, stageWideResource } from '../../functions/authorizer.ts';
import { createContext } from '../../local/lambda-runtime.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { registerKeys } from '../../lib/keys/plaintext-keys.ts';
import { countDynamoDbCalls, failDynamoDbCalls } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

let t: TestTables;
let keys: DynamoDbKeyStore;
const freeKey = generateApiKey();
const enterpriseKey = generateApiKey();
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/DELETE/store/orders/42';
const authorize = (token: string) =>
  createAuthorizerHandler({ keys: () => keys })(
    { type: 'TOKEN', authorizationToken: token, methodArn },
    createContext('authorizer') as unknown as Context,
  );

beforeAll(async () => {
  t = await createTestTables('authorizer');
  keys = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
  await registerKeys(
    keys,
    [
      { key: freeKey, plan: 'free' },
      { key: enterpriseKey, plan: 'enterprise', limits: { perMinute: 7, perDay: 5 } },
    ],
    new Date(),
  );
});
afterAll(() => t.drop());

describe('authorizer against DynamoDB', () => {
  it('allows a known key for every method of the stage and passes its plan and limits', async () => {
    const result = await authorize(`Bearer ${freeKey}`);
    expect(result.principalId).toMatch(/^key_/);
    expect(result.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/*/*',
      },
    ]);
    expect(result.context).toEqual({
      keyId: result.principalId,
      plan: 'free',
      perMinute: '60',
      perDay: '1000',
      permissions: 'read,cancel',
    });
  });

  it("passes a key's permissions in the context, with the same stage-wide Allow: the function decides", async () => {
    const key = generateApiKey();
    await registerKeys(keys, [{ key, plan: 'free', permissions: ['read'] }], new Date());
    const result = await authorize(`Bearer ${key}`);
    expect(result.context).toMatchObject({ permissions: 'read' });
    expect(result.policyDocument.Statement).toEqual([
      expect.objectContaining({ Effect: 'Allow', Resource: stageWideResource(methodArn) }),
    ]);
  });

  it('passes an enterprise key its own limits', async () => {
    expect((await authorize(`bearer ${enterpriseKey}`)).context).toMatchObject({
      plan: 'enterprise',
      perMinute: '7',
      perDay: '5',
    });
  });

  it.each([
    ['an unknown key', `Bearer ${generateApiKey()}`],
    ['another scheme', `Basic ${freeKey}`],
    ['an empty token', 'Bearer '],
    ['no scheme', freeKey],
  ])('refuses %s with a stage-wide Deny, not an error', async (_, header) => {
    const result = await authorize(header);
    expect(result.principalId).toBe('anonymous');
    expect(result.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Deny',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/*/*',
      },
    ]);
    expect(result.context).toBeUndefined();
  });

  it('reads the key table once per authorization', async () => {
    const counter = countDynamoDbCalls(t.client);
    await authorize(`Bearer ${freeKey}`);
    expect(counter.calls).toEqual(['GetItemCommand']);
  });

  it('fails (API Gateway: 503, uncached) when the key store is unreachable', async () => {
    const restore = failDynamoDbCalls(t.client, () =>
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    );
    try {
      await expect(authorize(`Bearer ${freeKey}`)).rejects.toThrow('The key store is unavailable');
    } finally {
      restore();
    }
  });

  it.each([
    ['access denied', { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } }],
    ['a missing table', { name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 400 } }],
    ['a TLS failure (EPROTO)', { code: 'EPROTO' }],
    ['a stream cut early', { code: 'ERR_STREAM_PREMATURE_CLOSE' }],
  ])(
    'fails (API Gateway: 503, uncached), never allows, when the key store fails with %s',
    async (_, fields) => {
      const restore = failDynamoDbCalls(t.client, () =>
        Object.assign(new Error('the key store failed'), fields),
      );
      try {
        await expect(authorize(`Bearer ${freeKey}`)).rejects.toThrow(
          'The key store is unavailable',
        );
      } finally {
        restore();
      }
    },
  );

  it('reads the key record strongly consistent (a key created a moment ago is found)', async () => {
    const reads: unknown[] = [];
    t.client.middlewareStack.add(
      (next) => (args) => {
        reads.push(args.input);
        return next(args);
      },
      { step: 'initialize', name: 'captureReads' },
    );
    try {
      await authorize(`Bearer ${freeKey}`);
    } finally {
      t.client.middlewareStack.remove('captureReads');
    }
    expect(reads).toEqual([expect.objectContaining({ ConsistentRead: true })]);
  });

  it.each([
    ['an expiry that does not parse', 'expiresAt', 'next Tuesday'],
    ['no permission', 'permissions', []],
    ['a permission this code does not know', 'permissions', ['read', 'delete']],
    ['permissions that are not a list', 'permissions', 'read,cancel'],
  ])('fails closed (uncached) on a stored key with %s', async (_, attribute, value) => {
    const key = generateApiKey();
    await registerKeys(keys, [{ key, plan: 'free' }], new Date());
    await t.client.send(
      new UpdateCommand({
        TableName: t.tables.apiKeys,
        Key: { keyHash: hashApiKey(key) },
        UpdateExpression: 'SET #attribute = :value',
        ExpressionAttributeNames: { '#attribute': attribute },
        ExpressionAttributeValues: { ':value': value },
      }),
    );
    await expect(authorize(`Bearer ${key}`)).rejects.toThrow('The key store is unavailable');
    await expect(keys.findByHash(hashApiKey(key))).rejects.toMatchObject({
      kind: 'permanent',
      reason: 'malformed-item',
    });
  });

  it('stores keys only as hashes', async () => {
    const { Items = [] } = await t.client.send(new ScanCommand({ TableName: t.tables.apiKeys }));
    const stored = JSON.stringify(Items);
    expect(Items.map((item) => item.keyHash as unknown)).toEqual(
      expect.arrayContaining([hashApiKey(freeKey), hashApiKey(enterpriseKey)]),
    );
    expect(stored).not.toContain(freeKey);
    expect(stored).not.toContain(enterpriseKey.slice(4, 20));
  });

  it('builds the stage-wide resource from any method ARN', () => {
    expect(
      stageWideResource('arn:aws:execute-api:local:000000000000:local/v1/GET/store/orders'),
    ).toBe('arn:aws:execute-api:local:000000000000:local/v1/*/*');
  });
});

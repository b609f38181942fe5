/** The DynamoDB client the functions build: what runs on every call. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';

describe('createDocumentClient', () => {
  it("leaves out the SDK's logger middleware (it filters every page even when nothing logs)", () => {
    const plain = new DynamoDBClient({ region: 'local' });
    expect(plain.middlewareStack.identify().some((m) => m.startsWith('loggerMiddleware'))).toBe(
      true,
    );
    const client = createDocumentClient({ endpoint: 'http://127.0.0.1:9' });
    expect(client.middlewareStack.identify().some((m) => m.startsWith('loggerMiddleware'))).toBe(
      false,
    );
    plain.destroy();
    client.destroy();
  });
});

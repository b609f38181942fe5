/** Isolated tables per test file, on the run's DynamoDB Local. */
import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { ensureTables } from '../../lib/dynamodb/create-table.ts';
import { listVersionKey, type OrderIndexName, type TableNames } from '../../lib/dynamodb/tables.ts';
import { localTableNames } from '../../local/local-stack.ts';

export interface TestTables {
  readonly endpoint: string;
  readonly client: DynamoDBDocumentClient;
  readonly tables: TableNames;
  readonly prefix: string;
  drop(): Promise<void>;
}

export function dynamodbEndpoint(): string {
  return inject('dynamodbEndpoint');
}

export function uniquePrefix(label: string): string {
  return `t-${label}-${randomBytes(4).toString('hex')}`;
}

/**
 * Tables of a file's own; `ordersIndexes`: the orders table's indexes (the current ones by
 * default; a stage upgrading from 1.0.0 has fewer, one deploy at a time).
 */
export async function createTestTables(
  label: string,
  options: { readonly ordersIndexes?: readonly OrderIndexName[] } = {},
): Promise<TestTables> {
  const endpoint = dynamodbEndpoint();
  // One process sends what many Lambda containers would: allow for queueing on the sockets.
  const client = createDocumentClient(
    { endpoint },
    { requestHandler: { connectionTimeout: 15_000, requestTimeout: 30_000 } },
  );
  const prefix = uniquePrefix(label);
  const tables = localTableNames(prefix);
  await ensureTables(client, tables, options);
  return {
    endpoint,
    client,
    tables,
    prefix,
    drop: async () => {
      await Promise.all(
        Object.values(tables).map((TableName) =>
          client.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
        ),
      );
      client.destroy();
    },
  };
}

/**
 * Writes one entry on list version item `index`, as a writer's mark leaves it (`w_<writer>#<id>`
 * = the end of its lease, ms): a write in flight, or one whose writer died. Its consumed capacity
 * in the answer.
 */
export function markVersionItem(
  t: Pick<TestTables, 'client' | 'tables'>,
  index: number,
  entry: string,
  until: number,
) {
  return t.client.send(
    new UpdateCommand({
      TableName: t.tables.orders,
      Key: listVersionKey(index),
      UpdateExpression: 'SET #e = :until',
      ExpressionAttributeNames: { '#e': entry },
      ExpressionAttributeValues: { ':until': until },
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
}

/** Creating tables from the shared definitions (DynamoDB Local, tests); CDK has its own translation. */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type KeySchemaElement,
  type Projection,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  orderIndexDefinition,
  TABLES,
  type GlobalIndexDefinition,
  type KeyAttribute,
  type OrderIndexName,
  type TableDefinition,
  type TableName,
  type TableNames,
} from './tables.ts';

/** The projection of an index as DynamoDB's API writes it. */
export function projectionOf(index: GlobalIndexDefinition): Projection {
  return index.projection === 'KEYS_ONLY'
    ? { ProjectionType: 'KEYS_ONLY' }
    : { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.include] };
}

/**
 * `globalIndexes`: the table's global indexes (all its definition has by default; a deployed
 * stage's orders table may have others: infra/config.ts `ordersIndexes`).
 */
export function createTableInput(
  definition: TableDefinition,
  tableName: string,
  globalIndexes: readonly GlobalIndexDefinition[] = definition.globalIndexes ?? [],
): CreateTableCommandInput {
  const attributes = new Map<string, string>();
  const keyOf = (key: KeyAttribute) => {
    attributes.set(key.name, key.type);
    return key.name;
  };
  const keySchema: KeySchemaElement[] = [
    { AttributeName: keyOf(definition.partitionKey), KeyType: 'HASH' },
  ];
  if (definition.sortKey)
    keySchema.push({ AttributeName: keyOf(definition.sortKey), KeyType: 'RANGE' });
  const indexes = globalIndexes.map((index) => ({
    IndexName: index.name,
    KeySchema: [
      { AttributeName: keyOf(index.partitionKey), KeyType: 'HASH' as const },
      ...index.sortKeys.map((key) => ({ AttributeName: keyOf(key), KeyType: 'RANGE' as const })),
    ],
    Projection: projectionOf(index),
  }));
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: keySchema,
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType: AttributeType as 'S' | 'N',
    })),
    ...(indexes.length > 0 ? { GlobalSecondaryIndexes: indexes } : {}),
  };
}

async function tableExists(client: DynamoDBDocumentClient, tableName: string): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

/**
 * Creates the tables that do not exist yet, as CloudFormation creates them (empty, TTL on where
 * the definition has one); returns those it created. Existing tables are left as they are.
 * `ordersIndexes`: the orders table's indexes a new one gets (all of them by default).
 */
export async function ensureTables(
  client: DynamoDBDocumentClient,
  names: TableNames,
  options: { readonly ordersIndexes?: readonly OrderIndexName[] } = {},
): Promise<TableName[]> {
  const created: TableName[] = [];
  for (const table of Object.keys(TABLES) as TableName[]) {
    const definition: TableDefinition = TABLES[table];
    const tableName = names[table];
    if (await tableExists(client, tableName)) continue;
    try {
      const indexes =
        table === 'orders' && options.ordersIndexes
          ? options.ordersIndexes.map(orderIndexDefinition)
          : undefined;
      await client.send(new CreateTableCommand(createTableInput(definition, tableName, indexes)));
      created.push(table);
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error;
      continue;
    }
    if (definition.timeToLiveAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: tableName,
          TimeToLiveSpecification: { AttributeName: definition.timeToLiveAttribute, Enabled: true },
        }),
      );
    }
  }
  return created;
}

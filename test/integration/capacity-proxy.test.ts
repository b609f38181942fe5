/**
 * The cost benchmark's proxy (bench/capacity-proxy.ts) on DynamoDB Local: it asks for the
 * consumed capacity of every call, puts each call down to the lane (function) that sent it,
 * counts what DynamoDB charges and DynamoDB Local does not report, and hands the client the
 * answer DynamoDB gave.
 */
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCapacityProxy, type CapacityProxy } from '../../bench/capacity-proxy.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

const TABLE = `${uniquePrefix('capacity-proxy')}-items`;
/** An item of 1,530 bytes or so: 2 write units. */
const PAD = 'x'.repeat(1500);

let proxy: CapacityProxy;
let direct: DynamoDBDocumentClient;
const lanes: Record<string, DynamoDBDocumentClient> = {};

const client = (endpoint: string) =>
  createDocumentClient(
    { endpoint },
    { requestHandler: { connectionTimeout: 15_000, requestTimeout: 30_000 } },
  );

beforeAll(async () => {
  direct = client(dynamodbEndpoint());
  await direct.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'status', AttributeType: 'S' },
      ],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'byStatus',
          KeySchema: [{ AttributeName: 'status', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ],
    }),
  );
  proxy = await startCapacityProxy(dynamodbEndpoint(), ['cancelOrder', 'listOrders']);
  for (const [lane, endpoint] of Object.entries(proxy.endpoints)) lanes[lane] = client(endpoint);
});

afterAll(async () => {
  for (const laneClient of Object.values(lanes)) laneClient.destroy();
  await proxy?.close();
  await direct?.send(new DeleteTableCommand({ TableName: TABLE })).catch(() => undefined);
  direct?.destroy();
});

describe('the capacity proxy', () => {
  it('asks for the capacity of each call, by table and index, and puts it down to its lane', async () => {
    await lanes.cancelOrder!.send(
      new PutCommand({ TableName: TABLE, Item: { pk: 'a', status: 'pending', pad: PAD } }),
    );
    const read = await lanes.listOrders!.send(
      new GetCommand({ TableName: TABLE, Key: { pk: 'a' }, ConsistentRead: true }),
    );
    // The client gets DynamoDB's answer.
    expect(read.Item).toEqual({ pk: 'a', status: 'pending', pad: PAD });
    expect(proxy.take()).toEqual([
      {
        lane: 'cancelOrder',
        operation: 'PutItem',
        status: 200,
        units: [{ table: TABLE, kind: 'write', tableUnits: 2, indexUnits: { byStatus: 1 } }],
      },
      {
        lane: 'listOrders',
        operation: 'GetItem',
        status: 200,
        consistent: true,
        units: [{ table: TABLE, kind: 'read', tableUnits: 1, indexUnits: {} }],
      },
    ]);
    expect(proxy.take()).toEqual([]);
  });

  it('counts a failed conditional write as the item it failed on, which DynamoDB Local does not report', async () => {
    await direct.send(
      new PutCommand({ TableName: TABLE, Item: { pk: 'b', status: 'shipped', pad: PAD } }),
    );
    const failed = await lanes
      .cancelOrder!.send(
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: 'b' },
          UpdateExpression: 'SET #s = :cancelled',
          ConditionExpression: '#s = :pending',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':cancelled': 'cancelled', ':pending': 'pending' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .catch((error: unknown) => error as Error);
    expect((failed as Error).name).toBe('ConditionalCheckFailedException');
    expect(proxy.take()).toEqual([
      {
        lane: 'cancelOrder',
        operation: 'UpdateItem',
        status: 400,
        error: 'ConditionalCheckFailedException',
        units: [{ table: TABLE, kind: 'write', tableUnits: 2, indexUnits: {} }],
        modelled: true,
      },
    ]);
  });

  it('charges the items a batch asked for and did not find the least read', async () => {
    const batch = await lanes.listOrders!.send(
      new BatchGetCommand({
        RequestItems: {
          [TABLE]: {
            Keys: [{ pk: 'a' }, { pk: 'none-1' }, { pk: 'none-2' }],
            ConsistentRead: true,
          },
        },
      }),
    );
    expect(batch.Responses?.[TABLE]).toHaveLength(1);
    const [recorded] = proxy.take();
    expect(recorded?.units).toEqual([
      { table: TABLE, kind: 'read', tableUnits: 3, indexUnits: {} },
    ]);
    expect(recorded?.modelled).toBe(true);
  });
});

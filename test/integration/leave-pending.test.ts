/**
 * An order that leaves pending between the cancel's (or the ship's) read and its conditional
 * write, on DynamoDB Local (lib/dynamodb/orders-table.ts, leavePending): the failed condition's
 * old item says what the order became (a cancel's trail: cancelled, whatever its status), and a
 * status the service does not know is malformed data.
 */
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { orderShard } from '../../lib/dynamodb/tables.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { TEST_CANCELLATION } from '../support/cancellation.ts';

let t: TestTables;
let store: DynamoDbOrderStore;
/** What happens to the order just before the store's next conditional write of it. */
let meanwhile: (() => Promise<unknown>) | undefined;

const ID = 7n;
const key = { shard: orderShard(ID), id: ID };

const setStatus = (status: string) => () =>
  t.client.send(
    new UpdateCommand({
      TableName: t.tables.orders,
      Key: key,
      UpdateExpression: 'SET #s = :s',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':s': status },
    }),
  );

beforeAll(async () => {
  t = await createTestTables('leave-pending');
  store = new DynamoDbOrderStore(t.client, t.tables.orders);
  t.client.middlewareStack.add(
    (next, context) => async (args) => {
      // The order's own write (not the list version's mark or release, id 0).
      const input = args.input as { TableName?: string; Key?: { id?: unknown } };
      const change = meanwhile;
      if (
        change &&
        context.commandName === 'UpdateItemCommand' &&
        input.TableName === t.tables.orders &&
        input.Key?.id === ID
      ) {
        meanwhile = undefined;
        await change();
      }
      return next(args);
    },
    { step: 'initialize', name: 'leavePendingMeanwhile' },
  );
});
afterAll(() => t.drop());
beforeEach(async () => {
  meanwhile = undefined;
  await store.putOrders([{ id: ID, status: 'pending' }]);
});

describe('an order that leaves pending between the read and the write', () => {
  it('shipped meanwhile: the cancel answers shipped and changes nothing', async () => {
    meanwhile = setStatus('shipped');
    expect(await store.cancel(ID, TEST_CANCELLATION)).toBe('shipped');
    expect(meanwhile).toBeUndefined();
    expect((await store.findOrders([ID]))[0]?.status).toBe('shipped');
  });

  it('cancelled meanwhile: the cancel answers already cancelled, the ship cancelled', async () => {
    meanwhile = setStatus('cancelled');
    expect(await store.cancel(ID, TEST_CANCELLATION)).toBe('already-cancelled');
    await store.putOrders([{ id: ID, status: 'pending' }]);
    meanwhile = setStatus('cancelled');
    expect(await store.ship(ID)).toBe('cancelled');
  });

  it("cancelled through the API meanwhile (its trail, the status left pending): the failed condition's old item says cancelled", async () => {
    const cancelMeanwhile = () => store.cancel(ID, TEST_CANCELLATION);
    meanwhile = cancelMeanwhile;
    expect(await store.cancel(ID, { ...TEST_CANCELLATION, keyId: 'key_second' })).toBe(
      'already-cancelled',
    );
    expect((await store.findStored(ID))?.trail.keyId).toBe(TEST_CANCELLATION.keyId);
    await store.putOrders([{ id: ID }]);
    meanwhile = cancelMeanwhile;
    expect(await store.ship(ID)).toBe('cancelled');
    expect((await store.findStored(ID))?.item).toMatchObject({ s: 'c7' });
  });

  it('deleted meanwhile: not found', async () => {
    meanwhile = () => t.client.send(new DeleteCommand({ TableName: t.tables.orders, Key: key }));
    expect(await store.cancel(ID, TEST_CANCELLATION)).toBe('not-found');
  });

  it('given a status the service does not know meanwhile: a malformed item, neither state assumed', async () => {
    meanwhile = setStatus('lost-in-transit');
    await expect(store.cancel(ID, TEST_CANCELLATION)).rejects.toMatchObject({
      reason: 'malformed-item',
      message: expect.stringContaining('unknown status') as unknown,
    });
  });
});

/**
 * An import that fails midway (fault injection on the orders table's batch writes, on DynamoDB
 * Local): it stops every writer, waits for the writes in flight, and reports exactly how many
 * orders were written; running it again finishes it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importValidated, writeOrders } from '../../admin/orders/import.ts';
import { createOperatorClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DependencyFailure } from '../../lib/failures.ts';
import type { Order } from '../../lib/orders/order.ts';
import { OrdersPartlyWritten } from '../../lib/orders/order-store.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { injectBatchFaults, scanAll } from './support.ts';

let t: TestTables;
/** A client of its own, so that its faults reach no other test. */
let client: DynamoDBDocumentClient;
beforeEach(async () => {
  t = await createTestTables('admin-import-failure');
  // The operator CLI's client, as `orders import` makes it (its attempts wait as the CLI's do).
  client = createOperatorClient({ endpoint: t.endpoint });
});
afterEach(async () => {
  client.destroy();
  await t.drop();
});

const PATH = 'orders.json';
/** Not retried by the SDK: what an operator sees when their session ends midway. */
const expired = () =>
  Object.assign(new Error('The security token included in the request is expired'), {
    name: 'ExpiredTokenException',
  });

function orders(count: number): Order[] {
  return Array.from({ length: count }, (_, i) => ({
    id: 9_223_372_036_854_775_807n - BigInt(i),
    status: 'pending' as const,
  }));
}

function stderr(): NodeJS.WriteStream & { text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return Object.assign(stream, {
    isTTY: false,
    text: () => text,
  }) as unknown as NodeJS.WriteStream & {
    text: () => string;
  };
}

async function stored(): Promise<number> {
  return (await scanAll(t.client, t.tables.orders)).length;
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

describe('an import whose batch write fails midway', () => {
  it('stops, waits for the writes in flight, and says exactly how many orders were written', async () => {
    const all = orders(1_000);
    const faults = injectBatchFaults(
      client,
      'BatchWriteItemCommand',
      (call) => (call === 6 ? 'fail' : 'pass'),
      expired,
    );
    const io = { stderr: stderr() };

    const error = await failure(
      writeOrders(new DynamoDbOrderStore(client, t.tables.orders), PATH, all, io),
    );

    // Nothing is written after the failure was reported: the table holds what it says.
    const calls = faults.calls();
    await sleep(500);
    expect(faults.calls()).toBe(calls);
    const written = await stored();
    expect(error.message).toBe(
      `${PATH}: ${written} of 1000 orders written before AWS credentials missing or refused to reach DynamoDB (The security token included in the request is expired): set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run aws sso login; run the import again to finish (it is idempotent)`,
    );
    // The seven batches in flight beside the failed one were all written.
    expect(written).toBeGreaterThanOrEqual(7 * 25);
    expect(written).toBeLessThan(1_000);
    expect(written % 25).toBe(0);
    expect(io.stderr.text()).toMatch(new RegExp(`^\\[[#.]{30}\\] ${written}/1000 orders `));

    // Running it again writes the rest and skips what is there.
    faults.remove();
    const again = await importValidated(
      new DynamoDbOrderStore(client, t.tables.orders),
      PATH,
      all,
      { replace: false, confirm: () => Promise.resolve() },
      { stderr: stderr() },
    );
    expect(again).toEqual({ added: 1_000 - written, unchanged: written, replaced: 0 });
    expect(await stored()).toBe(1_000);
  });

  it('stops a writer that is retrying throttled items once another batch has failed', async () => {
    const all = orders(100);
    const first = all[0]?.id.toString();
    const second = all[25]?.id.toString();
    const faults = injectBatchFaults(
      client,
      'BatchWriteItemCommand',
      (_, ids) =>
        ids.includes(first ?? '') ? 'throttle' : ids.includes(second ?? '') ? 'fail' : 'pass',
      expired,
    );

    const error = await failure(
      writeOrders(
        new DynamoDbOrderStore(client, t.tables.orders),
        PATH,
        all,
        { stderr: stderr() },
        {
          concurrency: 2,
        },
      ),
    );

    expect(error.message).toMatch(
      /^orders\.json: 0 of 100 orders written before AWS credentials missing or refused to reach DynamoDB \(The security token/,
    );
    const calls = faults.calls();
    expect(calls).toBeLessThan(10);
    await sleep(1_500);
    expect(faults.calls()).toBe(calls);
    expect(await stored()).toBe(0);
  });
});

describe('a failed batch call', () => {
  it.each([
    ['an expired session', expired, { kind: 'permanent', reason: 'credentials' }],
    [
      'a dropped connection',
      () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      { kind: 'transient', reason: 'connection' },
    ],
  ])('is classified as every DynamoDB call is (%s)', async (_, makeError, classified) => {
    injectBatchFaults(client, 'BatchWriteItemCommand', () => 'fail', makeError);
    const store = new DynamoDbOrderStore(client, t.tables.orders);
    const error = await failure(store.putOrders(orders(30)));
    expect(error).toBeInstanceOf(OrdersPartlyWritten);
    expect(error.cause).toBeInstanceOf(DependencyFailure);
    expect(error.cause).toMatchObject({ dependency: 'orders table', ...classified });
  });

  it('is classified when reading too (the export and the check of what is stored)', async () => {
    injectBatchFaults(client, 'BatchGetItemCommand', () => 'fail', expired);
    const store = new DynamoDbOrderStore(client, t.tables.orders);
    const error = await failure(store.findOrders([1n, 2n]));
    expect(error).toBeInstanceOf(DependencyFailure);
    expect(error).toMatchObject({ kind: 'permanent', reason: 'credentials' });
  });
});

describe('the check of which orders are stored', () => {
  const store = () => new DynamoDbOrderStore(client, t.tables.orders);

  it('writes nothing when it fails, and does not ask to confirm', async () => {
    const all = orders(1_000);
    injectBatchFaults(
      client,
      'BatchGetItemCommand',
      (call) => (call === 3 ? 'fail' : 'pass'),
      expired,
    );
    let asked = false;

    const error = await failure(
      importValidated(
        store(),
        PATH,
        all,
        { replace: false, confirm: () => Promise.resolve(void (asked = true)) },
        { stderr: stderr() },
      ),
    );

    expect(error.message).toBe(
      `${PATH}: reading the stored orders failed (AWS credentials missing or refused to reach DynamoDB (The security token included in the request is expired): set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run aws sso login); nothing was written`,
    );
    expect(asked).toBe(false);
    expect(await stored()).toBe(0);
  });

  it('retries the keys DynamoDB left unprocessed, reading 100 keys a call', async () => {
    const all = orders(1_050);
    await store().putOrders(all.filter((_, i) => i % 2 === 0));
    const throttled = new Set<string>();
    const sizes: number[] = [];
    const faults = injectBatchFaults(
      client,
      'BatchGetItemCommand',
      (_, ids) => {
        sizes.push(ids.length);
        const batch = ids[0] ?? '';
        if (throttled.has(batch)) return 'pass';
        throttled.add(batch);
        return 'throttle';
      },
      expired,
    );

    const counts = await importValidated(
      store(),
      PATH,
      all,
      { replace: false, confirm: () => Promise.resolve() },
      { stderr: stderr() },
    );

    expect(counts).toEqual({ added: 525, unchanged: 525, replaced: 0 });
    expect(faults.calls()).toBe(2 * 11);
    expect(Math.max(...sizes)).toBe(100);
    expect(await stored()).toBe(1_050);
  });
});

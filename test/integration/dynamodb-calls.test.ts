/**
 * The record of each DynamoDB call of an invocation (functions/shared/dynamodb-calls.ts), on
 * DynamoDB Local: what one line per invocation says of each operation and table, the metric of
 * each call, calls still unanswered when the invocation answers, and when a streamed answer's
 * line is written. (tests/integration/faults.test.ts checks the line for every fault.)
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { PassThrough } from 'node:stream';
import type { Request } from '@middy/core';
import middy from '@middy/core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createContext } from '../../local/lambda-runtime.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { captureObservations } from '../support/faults.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

process.env.LOG_LEVEL = 'INFO';
const { CallRecord, invocationCalls, recordCalls, recordInvocation } =
  await import('../../functions/shared/dynamodb-calls.ts');
const { logger } = await import('../../functions/shared/logger.ts');
const { Metrics, invocationMetrics } = await import('../../functions/shared/metrics.ts');
const { scoped } = await import('../../functions/shared/scope.ts');

/** A scope of its own, as an invocation's first step makes it. */
const newInvocation = () => ({
  log: logger.startInvocation(createContext('test')),
  calls: new CallRecord(),
});
/** Runs `work` within `invocation`, as a step of it. */
const within = <T>(invocation: ReturnType<typeof newInvocation>, work: () => Promise<T>) =>
  scoped(
    () => [invocation.log.scopeEntry(), invocationCalls(invocation.calls), invocationMetrics()],
    work,
  )(undefined, undefined);

let t: TestTables;
let client: ReturnType<typeof createDocumentClient>;
const observations = captureObservations();

beforeAll(async () => {
  t = await createTestTables('calls');
  client = recordCalls(createDocumentClient({ endpoint: t.endpoint }));
});
afterEach(() => observations.reset());
afterAll(async () => {
  observations.restore();
  client.destroy();
  await t.drop();
});

const get = () =>
  client.send(new GetCommand({ TableName: t.tables.apiKeys, Key: { keyHash: 'absent' } }));

describe('the DynamoDB calls of an invocation', () => {
  it('are summed by operation and table: calls, attempts, time; each call is a metric value', async () => {
    const invocation = newInvocation();
    await within(invocation, async () => {
      await get();
      await get();
      await client.send(
        new UpdateCommand({
          TableName: t.tables.rateLimits,
          Key: { pk: 'calls-test' },
          UpdateExpression: 'SET n = :one',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    });
    const calls = invocation.calls.take();
    expect(calls).toEqual([
      expect.objectContaining({
        operation: 'GetItem',
        table: t.tables.apiKeys,
        calls: 2,
        attempts: 2,
        failed: 0,
        abandoned: 0,
      }),
      expect.objectContaining({ operation: 'UpdateItem', table: t.tables.rateLimits, calls: 1 }),
    ]);
    const durations = observations.values('DynamoDbCallDuration');
    expect(durations).toHaveLength(3);
    expect(calls[0]?.totalMs).toBeCloseTo((durations[0] ?? 0) + (durations[1] ?? 0), 0);
    expect(calls[0]?.maxMs).toBe(Math.max(durations[0] ?? 0, durations[1] ?? 0));
    // Taken: nothing is reported twice.
    expect(invocation.calls.take()).toEqual([]);
  });

  it('name a failed call and its error', async () => {
    const invocation = newInvocation();
    const missing = within(invocation, () =>
      client.send(new GetCommand({ TableName: 'no-such-table', Key: { k: 'x' } })),
    );
    await expect(missing).rejects.toThrow();
    expect(invocation.calls.take()).toEqual([
      expect.objectContaining({
        operation: 'GetItem',
        table: 'no-such-table',
        calls: 1,
        failed: 1,
        lastError: 'ResourceNotFoundException',
      }),
    ]);
  });

  it('tell a failed condition (an answer) from a failure', async () => {
    const invocation = newInvocation();
    const refused = within(invocation, () =>
      client.send(
        new UpdateCommand({
          TableName: t.tables.rateLimits,
          Key: { pk: 'calls-test-absent' },
          UpdateExpression: 'SET n = :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      ),
    );
    await expect(refused).rejects.toThrow();
    expect(invocation.calls.take()).toEqual([
      expect.objectContaining({
        operation: 'UpdateItem',
        calls: 1,
        failed: 0,
        conditionsFailed: 1,
      }),
    ]);
  });

  it('count a call its request gave up on (its deadline, or its client gone) as abandoned, not failed', async () => {
    // Whether the SDK settles an aborted call before the invocation answers (an attempt in
    // flight) or after (waiting out a retry's back-off) is a race: either way it was abandoned.
    const invocation = newInvocation();
    const giveUp = new AbortController();
    const aborted = within(invocation, () => {
      const call = client.send(
        new GetCommand({ TableName: t.tables.apiKeys, Key: { keyHash: 'absent' } }),
        { abortSignal: giveUp.signal },
      );
      giveUp.abort();
      return call;
    });
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    const [call] = invocation.calls.take();
    expect(call).toMatchObject({ operation: 'GetItem', calls: 1, abandoned: 1, failed: 0 });
    expect(call?.lastError).toBeUndefined();
  });

  it('count a call still unanswered when the invocation answers as abandoned, and never again', async () => {
    const invocation = newInvocation();
    const inFlight = within(invocation, get);
    const [call] = invocation.calls.take();
    expect(call).toMatchObject({ operation: 'GetItem', calls: 1, abandoned: 1, failed: 0 });
    await inFlight;
    // Its answer came after the invocation had answered.
    expect(invocation.calls.take()).toEqual([]);
  });
});

describe('the line of DynamoDB calls', () => {
  const middleware = recordInvocation();
  const run = (response: unknown, invocation = newInvocation()) =>
    within(invocation, async () => {
      await get();
      await middleware.after?.({ response } as unknown as Request);
    });
  const lines = () =>
    observations.logs().filter((line) => line.message === 'DynamoDB calls') as unknown as {
      dynamodb: { operation: string; calls: number }[];
    }[];

  it('is written when a buffered answer is made', async () => {
    await run({ statusCode: 204, body: '' });
    expect(lines()).toHaveLength(1);
    expect(lines()[0]?.dynamodb).toEqual([expect.objectContaining({ operation: 'GetItem' })]);
  });

  it('is written when a streamed answer ends, with the calls made while it streamed', async () => {
    const body = new PassThrough();
    const invocation = newInvocation();
    await run({ statusCode: 200, body }, invocation);
    await within(invocation, get); // a later page, read while the answer streams
    expect(lines()).toHaveLength(0);
    body.end('[]');
    body.resume();
    await new Promise((resolve) => body.once('close', resolve));
    expect(lines()).toHaveLength(1);
    expect(lines()[0]?.dynamodb).toEqual([
      expect.objectContaining({ operation: 'GetItem', calls: 2 }),
    ]);
  });
});

describe("an invocation's records", () => {
  it('publish its metrics after its calls are taken: an abandoned call is in its own flush', async () => {
    const atFlush: number[] = [];
    const flush = vi.spyOn(Metrics.prototype, 'publishStoredMetrics').mockImplementation(() => {
      atFlush.push(observations.values('DynamoDbCallDuration').length);
    });
    try {
      let inFlight: Promise<unknown> | undefined;
      const handler = middy()
        .use(recordInvocation())
        .handler(() => {
          inFlight = get(); // still unanswered when the invocation answers
          return Promise.resolve({ statusCode: 200 });
        });
      await within(newInvocation(), () => handler({}, createContext('test') as never));
      // Both buffers are written once: what was recorded outside any invocation, then its own.
      expect(atFlush).toEqual([1, 1]);
      await inFlight;
    } finally {
      flush.mockRestore();
    }
  });
});

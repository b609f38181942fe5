/**
 * The record of each DynamoDB call of an invocation (functions/shared/dynamodb-calls.ts), on
 * DynamoDB Local: what one line per invocation says of each operation and table, the metric of
 * each call, calls still unanswered when the invocation answers, and when a streamed answer's
 * line is written. Each invocation is made as every function's is: its scope by perInvocation
 * (functions/shared/invocation.ts), its records written by recordInvocation when it answers.
 * (tests/integration/faults.test.ts checks the line for every fault.)
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { PassThrough } from 'node:stream';
import middy from '@middy/core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createContext } from '../../local/lambda-runtime.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { captureObservations } from '../support/faults.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import type { CallSummary } from '../../functions/shared/dynamodb-calls.ts';

process.env.LOG_LEVEL = 'INFO';
const { recordCalls, recordInvocation } = await import('../../functions/shared/dynamodb-calls.ts');
const { perInvocation } = await import('../../functions/shared/invocation.ts');
const { Metrics } = await import('../../functions/shared/metrics.ts');

/**
 * One invocation of a function whose work is `work`, made as every function is: in a scope of its
 * own (perInvocation), its records written when it answers (recordInvocation). What `work`
 * answers, or throws; `requestId` is the invocation's, for finding its line.
 */
function invoke<T>(work: () => Promise<T>): { answer: Promise<T>; requestId: string } {
  const context = createContext('test');
  const handler = middy<unknown, T>().use(recordInvocation()).handler(work);
  return { answer: perInvocation(handler)({}, context as never), requestId: context.awsRequestId };
}

type CallsLine = { function_request_id?: string; dynamodb: CallSummary[] };
/** The `DynamoDB calls` lines written so far. */
const lines = () =>
  observations.logs().filter((line) => line.message === 'DynamoDB calls') as unknown as CallsLine[];
/** What the line of the invocation `requestId` says (none: no line). */
const callsOf = (requestId: string): CallSummary[] | undefined => {
  const written = lines().filter((line) => line.function_request_id === requestId);
  expect(written.length).toBeLessThanOrEqual(1);
  return written[0]?.dynamodb;
};

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
    const invocation = invoke(async () => {
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
    await invocation.answer;
    const calls = callsOf(invocation.requestId) ?? [];
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
    expect(lines()).toHaveLength(1);
  });

  it('name a failed call and its error', async () => {
    const invocation = invoke(() =>
      client.send(new GetCommand({ TableName: 'no-such-table', Key: { k: 'x' } })),
    );
    await expect(invocation.answer).rejects.toThrow();
    expect(callsOf(invocation.requestId)).toEqual([
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
    const invocation = invoke(() =>
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
    await expect(invocation.answer).rejects.toThrow();
    expect(callsOf(invocation.requestId)).toEqual([
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
    const giveUp = new AbortController();
    const invocation = invoke(() => {
      const call = client.send(
        new GetCommand({ TableName: t.tables.apiKeys, Key: { keyHash: 'absent' } }),
        { abortSignal: giveUp.signal },
      );
      giveUp.abort();
      return call;
    });
    await expect(invocation.answer).rejects.toMatchObject({ name: 'AbortError' });
    const [call] = callsOf(invocation.requestId) ?? [];
    expect(call).toMatchObject({ operation: 'GetItem', calls: 1, abandoned: 1, failed: 0 });
    expect(call?.lastError).toBeUndefined();
  });

  it('count a call still unanswered when the invocation answers as abandoned, and never again', async () => {
    let inFlight: Promise<unknown> | undefined;
    const invocation = invoke(() => {
      inFlight = get();
      return Promise.resolve('answered');
    });
    await invocation.answer;
    const [call] = callsOf(invocation.requestId) ?? [];
    expect(call).toMatchObject({ operation: 'GetItem', calls: 1, abandoned: 1, failed: 0 });
    await inFlight;
    // Its answer came after the invocation had answered.
    expect(lines()).toHaveLength(1);
    expect(observations.values('DynamoDbCallDuration')).toHaveLength(1);
  });
});

describe('the line of DynamoDB calls', () => {
  it('is written when a buffered answer is made', async () => {
    const invocation = invoke(async () => {
      await get();
      return { statusCode: 204, body: '' };
    });
    await invocation.answer;
    expect(lines()).toHaveLength(1);
    expect(lines()[0]?.dynamodb).toEqual([expect.objectContaining({ operation: 'GetItem' })]);
    // The invocation's line: with its request id, as every line it writes.
    expect(lines()[0]?.function_request_id).toBe(invocation.requestId);
  });

  it('is written when a streamed answer ends, with the calls made while it streamed', async () => {
    const body = new PassThrough();
    let nextPage: () => void = () => undefined;
    let laterPage: Promise<unknown> | undefined;
    const invocation = invoke(async () => {
      await get();
      // A later page, read while the answer streams (started by the invocation: in its scope).
      laterPage = new Promise<void>((resolve) => (nextPage = resolve)).then(get);
      return { statusCode: 200, body };
    });
    await invocation.answer;
    nextPage();
    await laterPage;
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
      const invocation = invoke(() => {
        inFlight = get(); // still unanswered when the invocation answers
        return Promise.resolve({ statusCode: 200 });
      });
      await invocation.answer;
      // Both buffers are written once: what was recorded outside any invocation, then its own.
      expect(atFlush).toEqual([1, 1]);
      await inFlight;
    } finally {
      flush.mockRestore();
    }
  });
});

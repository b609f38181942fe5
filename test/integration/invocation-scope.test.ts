/**
 * Two invocations in one process, interleaved (as Lambda Managed Instances run them): each keeps
 * its own log lines and record of DynamoDB calls, which its scope holds (functions/shared/scope.ts,
 * made for each invocation by functions/shared/invocation.ts), and its own deadline and caller,
 * which its steps are handed as values (functions/shared/http-function.ts), across the awaits
 * where the other one runs. On DynamoDB Local; the SDK is only held back (an SDK middleware), so that the
 * two overlap for certain.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createDocumentClient, createSingleAttemptClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import type { Caller } from '../../lib/keys/key-record.ts';
import { policyHeader } from '../../lib/limits/limiter.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import type { Order } from '../../lib/orders/order.ts';
import type { CallSummary } from '../../functions/shared/dynamodb-calls.ts';
import { captureObservations, type LogLine } from '../support/faults.ts';
import { invokeHttp, proxyEvent } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

// The log lines are what is checked.
process.env.LOG_LEVEL = 'INFO';
const { createListOrdersHandler } = await import('../../functions/list-orders.ts');
const { recordCalls } = await import('../../functions/shared/dynamodb-calls.ts');

/** The request's budget from its arrival, for both: A arrived long ago, B just now. */
const BUDGET_MS = 10_000;
/** A's deadline from its start: the function's floor (TIME_BUDGETS.functionFloorMs). */
const A_DEADLINE_MS = 2_500;
const ORDERS: Order[] = Array.from({ length: 24 }, (_, i) => ({
  id: BigInt(i + 1),
  status: 'pending',
}));

let t: TestTables;
const observations = captureObservations();
beforeAll(async () => {
  t = await createTestTables('scope');
});
afterAll(async () => {
  observations.restore();
  await t.drop();
});

function listEvent(requestId: string, caller: Caller, arrived: number) {
  const event = proxyEvent({
    method: 'GET',
    resource: '/store/orders',
    path: '/store/orders',
    authorizer: { principalId: caller.keyId, ...callerToContext(caller) },
  });
  return {
    ...event,
    requestContext: { ...event.requestContext, requestId, requestTimeEpoch: arrived },
  };
}

async function counted(keyId: string): Promise<number> {
  const { Item } = await t.client.send(
    new GetCommand({ TableName: t.tables.rateLimits, Key: { pk: counterKey(keyId) } }),
  );
  return Number(Item?.mc ?? 0);
}

it('keeps each invocation’s log lines, deadline and caller its own while they interleave', async () => {
  // Every page read waits at a gate, opened once A has answered: A waits there past its deadline,
  // and B, started meanwhile, reads all its pages (the later ones as its body streams) after it.
  const gate = Promise.withResolvers<void>();
  let held = Promise.withResolvers<void>();
  const client = recordCalls(createDocumentClient({ endpoint: t.endpoint }));
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') {
        held.resolve();
        await gate.promise;
      }
      return next(args);
    },
    { step: 'finalizeRequest', name: 'gate', priority: 'low' },
  );
  const store = new DynamoDbOrderStore(client, t.tables.orders, { pageSize: 2 });
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders(ORDERS);
  // As deployed: the limiter's client makes one attempt a call (a retry could count twice).
  const limiterClient = recordCalls(createSingleAttemptClient({ endpoint: t.endpoint }));
  const limiter = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits);
  const list = createListOrdersHandler({
    orders: () => store,
    limiter: () => limiter,
    freeAllowance: () => limiter,
    requestBudgetMs: BUDGET_MS,
  });
  const a: Caller = {
    keyId: 'key_scope_a',
    plan: 'free',
    limits: PLAN_LIMITS.free,
    permissions: ALL_PERMISSIONS,
  };
  const b: Caller = {
    keyId: 'key_scope_b',
    plan: 'pro',
    limits: PLAN_LIMITS.pro,
    permissions: ALL_PERMISSIONS,
  };

  const started = Date.now();
  const answerA = invokeHttp(list, listEvent('request-a', a, started - BUDGET_MS + A_DEADLINE_MS));
  void answerA.finally(() => gate.resolve());
  await held.promise; // A waits for its first pages
  held = Promise.withResolvers<void>();
  const answerB = invokeHttp(list, listEvent('request-b', b, Date.now()));
  await held.promise; // B too
  const [first, second] = await Promise.all([
    answerA.then((answer) => ({ answer, ms: Date.now() - started })),
    answerB.then((answer) => ({ answer, ms: Date.now() - started })),
  ]);
  // The streamed answer's last lines come as its body closes.
  const of = (requestId: string) =>
    observations.logs().filter((line) => line.correlation_id === requestId);
  await vi.waitFor(() => expect(of('request-b').at(-1)?.message).toBe('DynamoDB calls'));
  client.destroy();
  limiterClient.destroy();

  // Deadlines: A's ran out at its own (B's would have let it wait at the gate, for ever);
  // B outlived A's deadline, waiting at the same gate, and listed every order.
  expect(first.answer.statusCode).toBe(503);
  expect(first.ms).toBeGreaterThanOrEqual(A_DEADLINE_MS - 100);
  expect(first.ms).toBeLessThan(BUDGET_MS);
  expect(second.answer.statusCode).toBe(200);
  expect(second.ms).toBeGreaterThan(first.ms);
  expect(JSON.parse(second.answer.body)).toHaveLength(ORDERS.length);

  // Callers: each answer carries its own plan and its own count; each key was counted once.
  expect(first.answer.headers['RateLimit-Policy']).toBe(policyHeader(a.limits)['RateLimit-Policy']);
  expect(first.answer.headers['X-RateLimit-Remaining']).toBe(String(a.limits.perMinute - 1));
  expect(second.answer.headers['RateLimit-Policy']).toBe(
    policyHeader(b.limits)['RateLimit-Policy'],
  );
  expect(second.answer.headers['X-RateLimit-Remaining']).toBe(String(b.limits.perMinute - 1));
  expect([await counted(a.keyId), await counted(b.keyId)]).toEqual([1, 1]);

  // Log lines: every line is one invocation's, with that invocation's ids throughout.
  const [linesA, linesB] = [of('request-a'), of('request-b')];
  expect(linesA.length + linesB.length).toBe(observations.logs().length);
  const lambdaIds = (own: LogLine[]) => new Set(own.map((line) => line.function_request_id));
  expect(lambdaIds(linesA).size).toBe(1);
  expect(lambdaIds(linesB).size).toBe(1);
  expect(lambdaIds(linesA)).not.toEqual(lambdaIds(linesB));
  const messages = (own: LogLine[]) => own.map((line) => line.message);
  expect(messages(linesA)).toEqual(['Dependency unavailable: answering 503', 'DynamoDB calls']);
  expect(messages(linesB)).toEqual(['List sent', 'DynamoDB calls']);
  expect(linesB[0]).toMatchObject({ orders: ORDERS.length, outcome: 'complete' });
  // Each line of DynamoDB calls holds that invocation's calls: A's pages abandoned at its
  // deadline; B's all answered, later pages included.
  const queries = (own: LogLine[]) =>
    (own.at(-1)!.dynamodb as CallSummary[]).find((call) => call.operation === 'Query')!;
  expect(queries(linesA)).toMatchObject({ abandoned: 8, failed: 0 });
  expect(queries(linesB)).toMatchObject({ abandoned: 0, failed: 0 });
  expect(queries(linesB).calls).toBeGreaterThan(8);
});

/**
 * One deadline per request, fixed before any step starts work: a list's version read and a
 * cancel's version mark, each sent only once the limiter has decided, work to the budget the
 * function was given (what the limiter's decision left of it), like the pages and the cancel's
 * own read and write.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import { invokeHttp, proxyEvent } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('budget-once');
});
afterAll(() => t.drop());

it("gives a list's version read the request's whole budget, not the default", async () => {
  // The version read (BatchGetItem) answers after the default budget, well within the given one.
  const slowMs = TIME_BUDGETS.requestMs + 500;
  const ordersClient = createDocumentClient({ endpoint: t.endpoint });
  ordersClient.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand') await sleep(slowMs);
      return next(args);
    },
    { step: 'finalizeRequest', name: 'slowVersionRead', priority: 'low' },
  );
  const store = new DynamoDbOrderStore(ordersClient, t.tables.orders);
  await store.putOrders([{ id: 1n, status: 'pending' }]);
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  const list = createListOrdersHandler({
    orders: () => store,
    limiter: () => limiter,
    // As deployed: with the free allowance (an unconditional list is counted by the limiter).
    freeAllowance: () => limiter,
    requestBudgetMs: 4 * TIME_BUDGETS.requestMs,
  });
  const caller = {
    keyId: 'key_budget1',
    plan: 'free' as const,
    limits: PLAN_LIMITS.free,
    permissions: ALL_PERMISSIONS,
  };
  const started = Date.now();
  const answer = await invokeHttp(
    list,
    proxyEvent({
      method: 'GET',
      resource: '/store/orders',
      path: '/store/orders',
      authorizer: { principalId: caller.keyId, ...callerToContext(caller) },
    }),
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(slowMs);
  expect(answer.statusCode).toBe(200);
  expect(answer.body).toBe('[{"id":1,"status":"pending"}]');
  ordersClient.destroy();
});

it("gives a cancel's version mark, sent after the limiter and the order's read, the request's whole budget", async () => {
  // The cancel's first write to the orders table, its version mark (after the order's GetItem),
  // answers after the default budget.
  const slowMs = TIME_BUDGETS.requestMs + 500;
  const ordersClient = createDocumentClient({ endpoint: t.endpoint });
  let [armed, marks] = [false, 0];
  ordersClient.middlewareStack.add(
    (next, context) => async (args) => {
      if (armed && context.commandName === 'UpdateItemCommand' && marks++ === 0) {
        await sleep(slowMs);
      }
      return next(args);
    },
    { step: 'finalizeRequest', name: 'slowVersionMark', priority: 'low' },
  );
  const store = new DynamoDbOrderStore(ordersClient, t.tables.orders);
  await store.putOrders([{ id: 2n, status: 'pending' }]);
  armed = true;
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  const cancel = createCancelOrderHandler({
    orders: () => store,
    limiter: () => limiter,
    requestBudgetMs: 4 * TIME_BUDGETS.requestMs,
  });
  const caller = {
    keyId: 'key_budget2',
    plan: 'free' as const,
    limits: PLAN_LIMITS.free,
    permissions: ALL_PERMISSIONS,
  };
  const answer = await invokeHttp(
    cancel,
    proxyEvent({
      method: 'DELETE',
      resource: '/store/orders/{orderId}',
      path: '/store/orders/2',
      pathParameters: { orderId: '2' },
      authorizer: { principalId: caller.keyId, ...callerToContext(caller) },
    }),
  );
  expect(answer.statusCode).toBe(204);
  ordersClient.destroy();
});

/**
 * One end-to-end budget from the request's arrival (lib/config/budgets.ts), through the API
 * Gateway emulation to the real authorizer and handlers on DynamoDB Local: the emulator stamps
 * `requestTimeEpoch` when the request arrives, as API Gateway does, so the key check's time
 * counts; a function started late by a slow key check still gets its floor, so a request whose
 * dependencies answer normally is served; and one whose dependency stalls is answered within
 * the promise, the authorizer's time included.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { issueKey } from '../../lib/keys/lifecycle.ts';
import { createGateway } from '../../local/gateway.ts';
import { createAuthorizerHandler } from '../../functions/authorizer.ts';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { injectFault } from '../support/faults.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;
let keysClient: DynamoDBDocumentClient;
let limiterClient: DynamoDBDocumentClient;
let server: Server;
let url: string;
let key: string;
/** What the authorizer takes before its handler runs (a cold start's init). */
let initMs = 0;
/** What the key table takes to answer (within the authorizer's budget). */
let keyReadMs = 0;
/** The functions' events and the moments they started, as the functions saw them. */
const seen: { requestTimeEpoch: number; startedAt: number }[] = [];

function watched<T extends (event: never, context: never) => unknown>(handler: T): T {
  return ((event: { requestContext: { requestTimeEpoch: number } }, context: never) => {
    seen.push({ requestTimeEpoch: event.requestContext.requestTimeEpoch, startedAt: Date.now() });
    return handler(event as never, context);
  }) as unknown as T;
}

beforeAll(async () => {
  t = await createTestTables('budget');
  keysClient = createDocumentClient({ endpoint: t.endpoint });
  limiterClient = createDocumentClient({ endpoint: t.endpoint });
  keysClient.middlewareStack.add(
    (next) => async (args) => {
      if (keyReadMs > 0) await sleep(keyReadMs);
      return next(args);
    },
    { step: 'finalizeRequest', name: 'slowKeyTable', priority: 'low' },
  );
  const keys = new DynamoDbKeyStore(keysClient, t.tables.apiKeys);
  key = (await issueKey(keys, { plan: 'pro' }, new Date())).key;
  const orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  await orders.putOrders([{ id: 1n, status: 'pending' }]);
  const limiter = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits);
  const deps = { orders: () => orders, limiter: () => limiter };
  const authorizer = createAuthorizerHandler({ keys: () => keys });
  const listener = createGateway({
    functions: {
      listOrders: createListOrdersHandler(deps),
      cancelOrder: watched(createCancelOrderHandler(deps)),
    },
    authorizer: async (event: never, context: never) => {
      await sleep(initMs);
      return authorizer(event, context);
    },
    // No cache: every request pays the key check.
    authorizerTtlSeconds: 0,
  });
  server = createServer((req, res) => void listener(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  keysClient.destroy();
  limiterClient.destroy();
  await t.drop();
});

async function timed(method: 'GET' | 'DELETE', path: string) {
  const sent = Date.now();
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}` },
  });
  const ms = Date.now() - sent;
  await response.arrayBuffer();
  return { status: response.status, sent, ms };
}

describe('the budget of a request, counted from its arrival', () => {
  it('is stamped on arrival: the key check counts against it, as on API Gateway', async () => {
    [initMs, keyReadMs] = [0, 400];
    seen.splice(0);
    const answer = await timed('DELETE', '/store/orders/1');
    expect(answer.status).toBe(204);
    const [event] = seen;
    // Stamped when the request arrived, not when the function was invoked after the key check.
    expect(event!.requestTimeEpoch).toBeGreaterThanOrEqual(answer.sent - 5);
    expect(event!.startedAt - event!.requestTimeEpoch).toBeGreaterThanOrEqual(keyReadMs);
  });

  it('serves a request whose dependencies answer normally after a slow key check (a cold start and a slow read)', async () => {
    // The function starts after the request's own budget (requestMs) has passed: only its
    // floor lets it work.
    [initMs, keyReadMs] = [1_700, TIME_BUDGETS.authorizerMs - 600];
    seen.splice(0);
    for (const [method, path, status] of [
      ['DELETE', '/store/orders/1', 204],
      ['GET', '/store/orders', 200],
    ] as const) {
      const answer = await timed(method, path);
      expect(answer.status).toBe(status);
    }
    expect(seen[0]!.startedAt - seen[0]!.requestTimeEpoch).toBeGreaterThan(TIME_BUDGETS.requestMs);
  });

  it('answers a stalled dependency after the slowest key check within the promise', async () => {
    // The authorizer takes nearly its whole budget, then the limiter's call stalls. The key
    // read's own time on DynamoDB Local comes on top of the injected delay: 400 ms of room for
    // it on a busy machine (with 100 ms the authorizer's budget ran out first, beside a CPU hog).
    [initMs, keyReadMs] = [0, TIME_BUDGETS.authorizerMs - 400];
    seen.splice(0);
    const stall = injectFault(
      limiterClient,
      { table: t.tables.rateLimits, command: 'UpdateItemCommand' },
      'stall',
    );
    let answer;
    try {
      answer = await timed('DELETE', '/store/orders/1');
    } finally {
      stall.remove();
    }
    expect(seen, 'the key check ended within its budget and the function ran').toHaveLength(1);
    const keyCheckMs = seen[0]!.startedAt - answer.sent;
    expect(keyCheckMs).toBeGreaterThanOrEqual(keyReadMs);
    expect(answer.status).toBe(503);
    // The function had its floor after the slow key check, and the answer kept the promise.
    expect(answer.ms).toBeGreaterThanOrEqual(keyCheckMs + TIME_BUDGETS.functionFloorMs - 5);
    expect(answer.ms).toBeLessThan(TIME_BUDGETS.answerMs);
  });
});

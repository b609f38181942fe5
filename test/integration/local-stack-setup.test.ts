/**
 * The local stack's set-up work — tables, seed orders, keys — is the operator's and runs on the
 * operator's budget (TIME_BUDGETS.adminAttemptMs an attempt), not a request's (1 s): a DynamoDB
 * that answers every call in 1.5 s (as a persistent DynamoDB Local on a busy machine can) still
 * takes a seed, where a request's budget would fail it.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { localTableNames, startLocalStack } from '../../local/local-stack.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

/** Each answer of DynamoDB comes this late: over a request's attempt, well within an operator's. */
const DELAY_MS = TIME_BUDGETS.attemptMs + 500;

let slow: Server;
let slowUrl: string;
const prefix = uniquePrefix('setup');

beforeAll(async () => {
  const target = new URL(dynamodbEndpoint());
  slow = createServer((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        setTimeout(() => {
          res.writeHead(answer.statusCode ?? 500, answer.headers);
          answer.pipe(res);
        }, DELAY_MS);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  slow.listen(0, '127.0.0.1');
  await once(slow, 'listening');
  slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
});
afterAll(async () => {
  slow.closeAllConnections();
  slow.close();
  const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
  await Promise.all(
    Object.values(localTableNames(prefix)).map((TableName) =>
      client.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
    ),
  );
  client.destroy();
});

describe('the local stack on a slow DynamoDB', () => {
  it(`creates the tables, seeds the orders and registers the keys when each call takes ${DELAY_MS} ms`, async () => {
    const orders = Array.from({ length: 300 }, (_, i) => ({
      id: BigInt(i + 1),
      status: 'pending' as const,
    }));
    const stack = await startLocalStack({
      dynamodbEndpoint: slowUrl,
      tablePrefix: prefix,
      seedOrders: orders,
    });
    try {
      expect(stack.ordersLoaded).toBe(300);
    } finally {
      await stack.stop();
    }
    const direct = createDocumentClient({ endpoint: dynamodbEndpoint() });
    try {
      const found = await new DynamoDbOrderStore(direct, localTableNames(prefix).orders).findOrders(
        orders.map((o) => o.id),
      );
      expect(found).toHaveLength(300);
    } finally {
      direct.destroy();
    }
  }, 120_000);
});

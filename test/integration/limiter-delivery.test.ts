/**
 * The rate limiter retries a counter write that provably never reached DynamoDB (lib/dynamodb/
 * undelivered.ts) — a refused connection, a keep-alive socket reset before the write went out — and
 * only that: a write whose answer was lost after it went out may have counted, and is not sent
 * again. Real sockets, through a TCP proxy in front of DynamoDB Local that injects each fault
 * on the first attempt; the requests go through the list function.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { createSingleAttemptClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { counterKey } from '../../lib/dynamodb/rate-limit-item.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import type { Caller } from '../../lib/keys/key-record.ts';
import { PLAN_LIMITS } from '../../lib/limits/plans.ts';
import { invokeHttp, proxyEvent } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

type Mode = 'pass' | 'lose-the-answer';

/** A TCP proxy to DynamoDB Local whose behaviour the test chooses. */
class FaultyProxy {
  mode: Mode = 'pass';
  /** Requests (connections' first bytes of each exchange) that reached DynamoDB. */
  forwarded = 0;
  readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private readonly upstreamPort: number;

  constructor(upstreamPort: number) {
    this.upstreamPort = upstreamPort;
    this.server = createServer((client) => this.accept(client));
  }

  private accept(client: Socket): void {
    this.sockets.add(client);
    const upstream = connect(this.upstreamPort, '127.0.0.1');
    const close = () => {
      upstream.destroy();
      this.sockets.delete(client);
    };
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes('HTTP/1.1')) this.forwarded++;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.mode === 'lose-the-answer') {
        // DynamoDB has answered (so it applied the write): the client never hears of it.
        client.resetAndDestroy();
        close();
        return;
      }
      client.write(chunk);
    });
    client.on('error', close);
    client.on('close', close);
    upstream.on('error', () => client.destroy());
  }

  async listen(port = 0): Promise<number> {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as { port: number }).port;
  }

  close(): void {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
  }
}

/**
 * A proxy to DynamoDB in a thread of its own (an event loop that runs while this one is
 * frozen), which resets every client connection when told to, as a server drops an idle
 * keep-alive connection. `resetAll` blocks this thread until the proxy has reset them (however
 * long a busy machine takes to run the proxy's thread), as a frozen Lambda sandbox would be.
 */
async function proxyThread(
  upstreamPort: number,
): Promise<{ port: number; resetAll: () => void; stop: () => Promise<number> }> {
  const done = new SharedArrayBuffer(4);
  const worker = new Worker(
    `
    const { connect, createServer } = require('node:net');
    const { parentPort, workerData } = require('node:worker_threads');
    const clients = new Set();
    const server = createServer((client) => {
      clients.add(client);
      const upstream = connect(workerData.upstreamPort, '127.0.0.1');
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => client.write(chunk));
      client.on('close', () => { clients.delete(client); upstream.destroy(); });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    const done = new Int32Array(workerData.done);
    parentPort.on('message', () => {
      for (const client of clients) client.resetAndDestroy();
      Atomics.store(done, 0, 1);
      Atomics.notify(done, 0);
    });
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
    `,
    { eval: true, workerData: { upstreamPort, done } },
  );
  const [port] = (await once(worker, 'message')) as [number];
  const resetAll = () => {
    const flag = new Int32Array(done);
    Atomics.store(flag, 0, 0);
    worker.postMessage('reset');
    expect(Atomics.wait(flag, 0, 0, 30_000)).not.toBe('timed-out');
  };
  return { port, resetAll, stop: () => worker.terminate() };
}

let t: TestTables;
let proxy: FaultyProxy | undefined;
let limiterClient: DynamoDBDocumentClient | undefined;
let sequence = 0;

beforeAll(async () => {
  t = await createTestTables('delivery');
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders([
    { id: 1n, status: 'pending' },
  ]);
});
afterAll(() => t.drop());
afterEach(() => {
  proxy?.close();
  limiterClient?.destroy();
});

const freeCaller = (): Caller => ({
  keyId: `key_delivery${++sequence}`,
  plan: 'free',
  limits: PLAN_LIMITS.free,
  permissions: ALL_PERMISSIONS,
});

async function counted(keyId: string): Promise<number> {
  const { Item } = await t.client.send(
    new GetCommand({
      TableName: t.tables.rateLimits,
      Key: { pk: counterKey(keyId) },
      ConsistentRead: true,
    }),
  );
  return Number(Item?.mc ?? 0);
}

/** The list function, its limiter writing through the proxy at `port`; counts the attempts. */
function listThrough(port: number, beforeAttempt?: (attempt: number) => Promise<void>) {
  limiterClient = createSingleAttemptClient({ endpoint: `http://127.0.0.1:${port}` });
  let attempts = 0;
  limiterClient.middlewareStack.add(
    (next) => async (args) => {
      attempts++;
      await beforeAttempt?.(attempts);
      return next(args);
    },
    { step: 'finalizeRequest', name: 'countAttempts' },
  );
  const limiter = new DynamoDbRateLimiter(limiterClient, t.tables.rateLimits);
  const orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  const handler = createListOrdersHandler({ orders: () => orders, limiter: () => limiter });
  return {
    attempts: () => attempts,
    list: (caller: Caller) =>
      invokeHttp(
        handler,
        proxyEvent({
          method: 'GET',
          resource: '/store/orders',
          path: '/store/orders',
          authorizer: { principalId: caller.keyId, ...callerToContext(caller) },
        }),
      ),
  };
}

const upstreamPort = () => Number(new URL(t.endpoint).port);

describe('a counter write that never reached DynamoDB', () => {
  it('is sent again after a refused connection: 200, counted once', async () => {
    proxy = new FaultyProxy(upstreamPort());
    // A port with nothing listening on it until the second attempt.
    const port = await proxy.listen();
    proxy.server.close();
    await once(proxy.server, 'close');
    const fn = listThrough(port, async (attempt) => {
      if (attempt === 2) await proxy!.listen(port);
    });
    const caller = freeCaller();
    const response = await fn.list(caller);
    expect(response.statusCode).toBe(200);
    expect(fn.attempts()).toBe(2);
    expect(await counted(caller.keyId)).toBe(1);
    expect(response.headers['X-RateLimit-Remaining']).toBe('59');
  });

  it('is sent again after a keep-alive socket was reset before the write went out (a thawed Lambda): 200, counted once', async () => {
    const server = await proxyThread(upstreamPort());
    const fn = listThrough(server.port, (attempt) => {
      if (attempt === 2) {
        // Frozen right before the write, as a Lambda sandbox between invocations: the server
        // resets the idle connection meanwhile, but the event loop does not run, so the socket
        // is still in the pool, looking alive, when this write takes it (as after a thaw). The
        // resets are on their way once resetAll returns; the freeze lets them land.
        server.resetAll();
        const thawAt = Date.now() + 300;
        while (Date.now() < thawAt) {
          // frozen
        }
      }
      return Promise.resolve();
    });
    const caller = freeCaller();
    expect((await fn.list(caller)).statusCode).toBe(200);
    try {
      const response = await fn.list(caller);
      expect(response.statusCode).toBe(200);
      expect(fn.attempts()).toBe(3);
      expect(await counted(caller.keyId)).toBe(2);
    } finally {
      await server.stop();
    }
  });
});

describe('a counter write whose answer was lost after it went out', () => {
  it('is not sent again (it was applied): 503, counted once', async () => {
    proxy = new FaultyProxy(upstreamPort());
    proxy.mode = 'lose-the-answer';
    const fn = listThrough(await proxy.listen());
    const caller = freeCaller();
    const response = await fn.list(caller);
    expect(response.statusCode).toBe(503);
    expect(fn.attempts()).toBe(1);
    expect(proxy.forwarded).toBe(1);
    expect(await counted(caller.keyId)).toBe(1);
  });
});

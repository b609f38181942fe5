/**
 * `npm run bench:cancel [-- --cancels N]`: what a cancel costs, through the local API as `npm
 * start` runs it (API Gateway emulation, functions in containers, DynamoDB Local): N cancels of
 * pending orders sent one after another on one keep-alive connection (after a warm-up), with
 * their latency (p50, p90, p99, mean), and the DynamoDB calls one cancel makes (counted on the
 * handler run in this process with the same stores: every call, and each kind).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { createCancelOrderHandler } from '../functions/cancel-order.ts';
import {
  attemptTimeouts,
  createDocumentClient,
  createSingleAttemptClient,
} from '../lib/dynamodb/client.ts';
import { ensureTables } from '../lib/dynamodb/create-table.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../lib/dynamodb/rate-limit-table.ts';
import { generateApiKey } from '../lib/keys/api-key.ts';
import { orderToJson, type Order } from '../lib/orders/order.ts';
import { startDynamoDbLocal } from '../local/dynamodb-local.ts';
import { installLambdaRuntimeGlobals, createContext } from '../local/lambda-runtime.ts';
import { localTableNames, PROJECT_ROOT } from '../local/local-stack.ts';
import { percentile } from './statistics.ts';

const LIMITS = { perMinute: 1_000_000, perDay: 1_000_000_000 };

function pendingOrders(count: number, from = 1): Order[] {
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(from + i),
    petId: BigInt(1000 + i),
    quantity: 1,
    shipDate: '2026-11-21T10:30:00Z',
    complete: false,
    status: 'pending' as const,
  }));
}

/** DELETE /store/orders/{id} over a keep-alive connection: status and milliseconds. */
function cancel(
  agent: Agent,
  base: URL,
  key: string,
  id: number,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    request(new URL(`${base.pathname}/store/orders/${id}`, base), {
      method: 'DELETE',
      agent,
      headers: { Authorization: `Bearer ${key}` },
    })
      .on('response', (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }),
        );
      })
      .on('error', reject)
      .end();
  });
}

/** The DynamoDB calls of one cancel, counted on the handler in this process. */
async function callsPerCancel(endpoint: string, prefix: string): Promise<string[]> {
  installLambdaRuntimeGlobals();
  const tables = localTableNames(prefix);
  const calls: string[] = [];
  const counted = <T extends ReturnType<typeof createDocumentClient>>(client: T): T => {
    client.middlewareStack.add(
      (next, context) => (args) => {
        calls.push(context.commandName ?? 'unknown');
        return next(args);
      },
      { step: 'finalizeRequest', name: 'countCalls' },
    );
    return client;
  };
  const orders = counted(createDocumentClient({ endpoint }));
  const limiter = counted(createSingleAttemptClient({ endpoint }));
  const store = new DynamoDbOrderStore(orders, tables.orders);
  await store.putOrders(pendingOrders(2, 9_000_001));
  const rateLimiter = new DynamoDbRateLimiter(limiter, tables.rateLimits);
  const handler = createCancelOrderHandler({ orders: () => store, limiter: () => rateLimiter });
  const event = (id: string) => ({
    resource: '/store/orders/{orderId}',
    path: `/store/orders/${id}`,
    httpMethod: 'DELETE',
    headers: {},
    multiValueHeaders: {},
    pathParameters: { orderId: id },
    requestContext: {
      authorizer: { principalId: 'key_bench', keyId: 'key_bench', plan: 'enterprise', ...LIMITS },
      requestId: 'bench',
      requestTimeEpoch: Date.now(),
    },
  });
  await handler(event('9000001') as never, createContext('cancelOrder') as never);
  calls.splice(0);
  const result = (await handler(
    event('9000002') as never,
    createContext('cancelOrder') as never,
  )) as { statusCode: number };
  if (result.statusCode !== 204) throw new Error(`in-process cancel answered ${result.statusCode}`);
  orders.destroy();
  limiter.destroy();
  return [...calls];
}

async function main(): Promise<void> {
  const values = benchFlags('bench:cancel', 'Cancel latency through the local API.', {
    cancels: countFlag('cancels to time', 2000),
  });
  const count = countOf('bench:cancel', 'cancels', values.cancels, 2000);
  const warmUp = Math.min(300, count);

  const dynamo = await startDynamoDbLocal();
  const client = createDocumentClient(
    { endpoint: dynamo.endpoint },
    { requestHandler: attemptTimeouts(60_000, 10_000) },
  );
  const prefix = `bench-cancel-${Date.now().toString(36)}`;
  const dir = await mkdtemp(join(tmpdir(), 'bench-cancel-'));
  let server: ReturnType<typeof spawn> | undefined;
  try {
    await ensureTables(client, localTableNames(prefix));
    const key = generateApiKey();
    await writeFile(
      join(dir, 'keys.json'),
      JSON.stringify([{ key, plan: 'enterprise', limits: LIMITS }]),
    );
    await writeFile(
      join(dir, 'seed.json'),
      `[${pendingOrders(count + warmUp)
        .map((order) => orderToJson(order))
        .join(',')}]`,
    );
    server = spawn(
      process.execPath,
      [
        join(PROJECT_ROOT, 'local', 'start.ts'),
        ...['--port', '0', '--dynamodb-endpoint', dynamo.endpoint, '--table-prefix', prefix],
        ...['--seed', join(dir, 'seed.json'), '--keys', join(dir, 'keys.json')],
      ],
      {
        env: {
          ...process.env,
          LOG_LEVEL: 'ERROR',
          STORE_ORDERS_LOCAL_STATE: join(dir, 's'),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    const base = await new Promise<URL>((resolve, reject) => {
      server!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /Listening on (http:\/\/\S+)/.exec(out);
        if (match) resolve(new URL(match[1] as string));
      });
      server!.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${out}`)));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let id = count + 1; id <= count + warmUp; id++) await cancel(agent, base, key, id);
    const latencies: number[] = [];
    for (let id = 1; id <= count; id++) {
      const { status, ms } = await cancel(agent, base, key, id);
      if (status !== 204) throw new Error(`cancel of ${id} answered ${status}`);
      latencies.push(ms);
    }
    agent.destroy();
    const calls = await callsPerCancel(dynamo.endpoint, prefix);

    latencies.sort((a, b) => a - b);
    const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
    const kinds = new Map<string, number>();
    for (const call of calls) kinds.set(call, (kinds.get(call) ?? 0) + 1);
    console.log(
      `\nbench:cancel — ${count} sequential cancels through the local API (after ${warmUp} to warm up)\n`,
    );
    console.log('| p50 ms | p90 ms | p99 ms | mean ms | DynamoDB calls per cancel |');
    console.log('|---|---|---|---|---|');
    console.log(
      `| ${percentile(latencies, 50).toFixed(2)} | ${percentile(latencies, 90).toFixed(2)} | ${percentile(latencies, 99).toFixed(2)} | ${mean.toFixed(2)} | ${calls.length} (${[...kinds].map(([kind, n]) => `${n} × ${kind.replace(/Command$/, '')}`).join(', ')}) |`,
    );
  } finally {
    server?.kill('SIGTERM');
    if (server && server.exitCode === null) await once(server, 'exit');
    client.destroy();
    await dynamo.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();

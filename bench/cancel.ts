/**
 * `npm run bench:cancel [-- --cancels N] [--orders-indexes NAMES]`: what a cancel costs, through the
 * local API as `npm start` runs it (API Gateway emulation, functions in containers, DynamoDB
 * Local): N cancels of pending orders sent one after another on one keep-alive connection (after
 * a warm-up), with their latency (p50, p90, p99, mean), the DynamoDB calls one cancel makes
 * (counted on the handler run in this process with the same stores: every call, and each kind),
 * the request units of all of them and the write units of its order write, the table's and each
 * index's (ReturnConsumedCapacity INDEXES, added to every call by the count), and the calls and
 * units of a cancel refused 403 (a key that may only read). The orders table has the current
 * indexes NAMES names (comma-separated, or `none`; default all of them): runs with none and all say
 * what the v2 list's indexes add to a cancel.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { valueFlag } from '../lib/config/flags.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from '../lib/dynamodb/tables.ts';
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

interface Capacity {
  readonly TableName?: string;
  readonly Table?: { readonly CapacityUnits?: number };
  readonly GlobalSecondaryIndexes?: Record<string, { readonly CapacityUnits?: number }>;
}

/** What one request made of DynamoDB: each call, and the request units of each (all indexes). */
interface RequestCost {
  readonly calls: string[];
  /** Every call's consumed capacity (ReturnConsumedCapacity INDEXES, added by the count). */
  readonly capacities: Capacity[];
  /** The consumed capacity of the order write (the UpdateItem of an order's partition). */
  readonly orderWrite: Capacity | undefined;
}

/** Request units of calls, in all: the tables' and the indexes'. */
function units(capacities: readonly Capacity[]): number {
  let total = 0;
  for (const capacity of capacities) {
    total += capacity.Table?.CapacityUnits ?? 0;
    for (const index of Object.values(capacity.GlobalSecondaryIndexes ?? {})) {
      total += index.CapacityUnits ?? 0;
    }
  }
  return total;
}

/** `2 × UpdateItem, 1 × GetItem`: the calls, by kind. */
function callKinds(calls: readonly string[]): string {
  const kinds = new Map<string, number>();
  for (const call of calls) kinds.set(call, (kinds.get(call) ?? 0) + 1);
  return [...kinds].map(([kind, n]) => `${n} × ${kind.replace(/Command$/, '')}`).join(', ');
}

/**
 * Counts every call a client makes, and asks each for its consumed capacity (INDEXES: the
 * table's and each index's); `record` gets each call's name, key and consumed capacity.
 */
function counted<T extends ReturnType<typeof createDocumentClient>>(
  client: T,
  record: (call: string, shard: number, capacity: Capacity | undefined) => void,
): T {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: { shard?: unknown }; ReturnConsumedCapacity?: string };
      // The key as given, or already marshalled ({ N: '3' }), whichever this step sees.
      const raw = input.Key?.shard as { N?: string } | number | undefined;
      const shard = Number(typeof raw === 'object' ? raw.N : raw);
      input.ReturnConsumedCapacity = 'INDEXES';
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: Capacity | Capacity[] })
        .ConsumedCapacity;
      const capacity = Array.isArray(consumed) ? consumed[0] : consumed;
      record(context.commandName ?? 'unknown', shard, capacity);
      return result;
    },
    { step: 'initialize', name: 'countCalls' },
  );
  return client;
}

/**
 * The DynamoDB calls of one cancel, counted on the handler in this process, with the request
 * units of each, and the write units of its order write (the UpdateItem of an order's
 * partition, 0 and up: the list version's items are below 0).
 */
async function callsPerCancel(
  endpoint: string,
  prefix: string,
): Promise<{ cancel: RequestCost; refused: RequestCost }> {
  installLambdaRuntimeGlobals();
  const tables = localTableNames(prefix);
  let cost: { calls: string[]; capacities: Capacity[]; orderWrite: Capacity | undefined } = {
    calls: [],
    capacities: [],
    orderWrite: undefined,
  };
  const record = (call: string, shard: number, capacity: Capacity | undefined) => {
    cost.calls.push(call);
    if (capacity) cost.capacities.push(capacity);
    if (/^Update(Item)?Command$/.test(call) && shard >= 0) cost.orderWrite = capacity;
  };
  const orders = counted(createDocumentClient({ endpoint }), record);
  const limiter = counted(createSingleAttemptClient({ endpoint }), record);
  const store = new DynamoDbOrderStore(orders, tables.orders);
  await store.putOrders(pendingOrders(3, 9_000_001));
  const rateLimiter = new DynamoDbRateLimiter(limiter, tables.rateLimits);
  const handler = createCancelOrderHandler({ orders: () => store, limiter: () => rateLimiter });
  const event = (id: string, permissions = 'read,cancel') => ({
    resource: '/store/orders/{orderId}',
    path: `/store/orders/${id}`,
    httpMethod: 'DELETE',
    headers: {},
    multiValueHeaders: {},
    pathParameters: { orderId: id },
    requestContext: {
      authorizer: {
        principalId: 'key_bench',
        keyId: 'key_bench',
        plan: 'enterprise',
        ...LIMITS,
        permissions,
      },
      requestId: 'bench',
      requestTimeEpoch: Date.now(),
    },
  });
  /**
   * What one cancel costs, answered `expected`. The function's own lines (its log and metric
   * documents, which it writes to stdout as Lambda has it) are not the benchmark's output.
   */
  const measure = async (id: string, expected: number, permissions?: string) => {
    cost = { calls: [], capacities: [], orderWrite: undefined };
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = () => true;
    const result = (await handler(
      event(id, permissions) as never,
      createContext('cancelOrder') as never,
    ).finally(() => {
      process.stdout.write = write;
    })) as { statusCode: number };
    if (result.statusCode !== expected) {
      throw new Error(`in-process cancel answered ${result.statusCode}, not ${expected}`);
    }
    return cost;
  };
  await measure('9000001', 204);
  const measured = {
    cancel: await measure('9000002', 204),
    // A key that may only read asks to cancel a pending order: refused 403 once counted.
    refused: await measure('9000003', 403, 'read'),
  };
  orders.destroy();
  limiter.destroy();
  return measured;
}

/** The indexes a `--orders-indexes` value names (all of them when not given). */
function indexesOf(value: string | undefined): OrderIndexName[] {
  if (value === undefined) return [...ORDER_INDEX_NAMES];
  if (value.trim() === 'none') return [];
  const names = value.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(ORDER_INDEX_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0 || new Set(names).size !== names.length) {
    console.error(
      `error: --orders-indexes must name some of ${ORDER_INDEX_NAMES.join(', ')} once each, or none (npm run bench:cancel -- --help)`,
    );
    process.exit(2);
  }
  return names as OrderIndexName[];
}

async function main(): Promise<void> {
  const values = benchFlags('bench:cancel', 'Cancel latency through the local API.', {
    cancels: countFlag('cancels to time', 2000),
    'orders-indexes': valueFlag(
      'NAMES',
      `the orders table's indexes: some of ${ORDER_INDEX_NAMES.join(',')} (comma-separated), or none (default all)`,
    ),
  });
  const count = countOf('bench:cancel', 'cancels', values.cancels, 2000);
  const ordersIndexes = indexesOf(values['orders-indexes']);
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
    await ensureTables(client, localTableNames(prefix), { ordersIndexes });
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
    const { cancel: measured, refused } = await callsPerCancel(dynamo.endpoint, prefix);
    const { calls, capacities, orderWrite } = measured;

    latencies.sort((a, b) => a - b);
    const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
    const indexes = Object.entries(orderWrite?.GlobalSecondaryIndexes ?? {})
      .map(([index, { CapacityUnits }]) => `${index} ${CapacityUnits ?? '?'}`)
      .join(', ');
    console.log(
      `\nbench:cancel — ${count} sequential cancels through the local API (after ${warmUp} to warm up); the orders table with ${ordersIndexes.length} of its indexes (${ordersIndexes.join(', ') || 'none'})\n`,
    );
    console.log(
      '| p50 ms | p90 ms | p99 ms | mean ms | DynamoDB calls per cancel | request units per cancel | WCU of the order write: table + indexes |',
    );
    console.log('|---|---|---|---|---|---|---|');
    console.log(
      `| ${percentile(latencies, 50).toFixed(2)} | ${percentile(latencies, 90).toFixed(2)} | ${percentile(latencies, 99).toFixed(2)} | ${mean.toFixed(2)} | ${calls.length} (${callKinds(calls)}) | ${units(capacities)} | ${orderWrite?.Table?.CapacityUnits ?? '?'}${indexes ? ` + ${indexes}` : ''} |`,
    );
    console.log(
      `\nA cancel refused 403 PERMISSION_DENIED (a key that may only read): ${refused.calls.length} DynamoDB call${refused.calls.length === 1 ? '' : 's'} (${callKinds(refused.calls)}), ${units(refused.capacities)} request unit${units(refused.capacities) === 1 ? '' : 's'}.`,
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

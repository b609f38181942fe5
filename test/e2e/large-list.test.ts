/**
 * 100,000 orders through the streaming path of the local API (gateway emulation + the real
 * handlers, on DynamoDB Local): order, count and exact digits checked, time measured, and the
 * server's live memory (heap + buffers after garbage collection) sampled while it streams.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { ensureTables } from '../../lib/dynamodb/create-table.ts';
import { DynamoDbOrderStore, ORDER_PAGE_SIZE } from '../../lib/dynamodb/orders-table.ts';
import { ORDER_SHARDS } from '../../lib/dynamodb/tables.ts';
import { INT64_MAX, type Order } from '../../lib/orders/order.ts';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { localTableNames, PROJECT_ROOT } from '../../local/local-stack.ts';
import { registerKeys } from '../../lib/keys/register.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

const COUNT = 100_000;
const SMALL_COUNT = 10_000;
const FIRST_ID = INT64_MAX - BigInt(COUNT) + 1n;
const MB = 1024 * 1024;

interface ProbeServer {
  readonly url: string;
  readonly process: ChildProcessWithoutNullStreams;
}
interface MemoryReport {
  baselineLiveBytes: number;
  peakLiveBytes: number;
  peakRssBytes: number;
}
const servers: ProbeServer[] = [];
let large: ProbeServer;
let small: ProbeServer;

/** Ids at the very top of int64, where a JS number could not tell neighbours apart. */
function ordersFrom(first: bigint, count: number): Order[] {
  return Array.from({ length: count }, (_, i) => ({
    id: first + BigInt(i),
    petId: INT64_MAX - BigInt(i),
    quantity: i % 100,
    shipDate: '2026-11-22T10:00:00Z',
    complete: i % 2 === 0,
    status: (['pending', 'shipped', 'cancelled'] as const)[i % 3],
  }));
}

async function probeServerWith(orders: Order[]): Promise<ProbeServer> {
  const tablePrefix = uniquePrefix('large');
  const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
  const tables = localTableNames(tablePrefix);
  await ensureTables(client, tables);
  await registerKeys(
    new DynamoDbKeyStore(client, tables.apiKeys),
    DEMO_KEYS.slice(0, 1),
    new Date(),
  );
  // Written in reverse: the API must sort, not the insertion.
  await new DynamoDbOrderStore(client, tables.orders).putOrders([...orders].reverse(), {
    concurrency: 16,
  });
  client.destroy();
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      join(PROJECT_ROOT, 'test', 'support', 'memory-probe-server.ts'),
      dynamodbEndpoint(),
      tablePrefix,
    ],
    { env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' } },
  );
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const server = { url: /READY (\S+)/.exec(line.toString())?.[1] ?? '', process: child };
  servers.push(server);
  return server;
}

async function memoryReport(server: ProbeServer): Promise<MemoryReport> {
  server.process.stdin.write('report\n');
  const [report] = (await once(server.process.stdout, 'data')) as [Buffer];
  return JSON.parse(report.toString()) as MemoryReport;
}

const listOrders = (server: ProbeServer) =>
  fetch(`${server.url}/store/orders`, {
    headers: { Authorization: `Bearer ${DEMO_KEYS[0]!.key}` },
  });

beforeAll(async () => {
  large = await probeServerWith(ordersFrom(FIRST_ID, COUNT));
  small = await probeServerWith(ordersFrom(INT64_MAX - BigInt(SMALL_COUNT) + 1n, SMALL_COUNT));
}, 180_000);
afterAll(() => {
  for (const server of servers) server.process.kill();
});

describe('listing 100,000 orders', () => {
  it('streams them all, sorted, digit-exact, while the live memory of the server stays flat', async () => {
    const started = performance.now();
    const response = await listOrders(large);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBeNull();

    // Check every id as it arrives, without holding the body.
    const decoder = new TextDecoder();
    const order = /\{"id":(-?\d+),"petId":(-?\d+)/g;
    let carry = '';
    let count = 0;
    let outOfOrder = 0;
    let bytes = 0;
    const check = (text: string): void => {
      for (const match of text.matchAll(order)) {
        const expectedId = FIRST_ID + BigInt(count);
        if (BigInt(match[1]!) !== expectedId || BigInt(match[2]!) !== INT64_MAX - BigInt(count))
          outOfOrder++;
        count++;
      }
    };
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      const text = carry + decoder.decode(chunk, { stream: true });
      const cut = text.lastIndexOf('{');
      check(text.slice(0, cut));
      carry = text.slice(cut);
    }
    check(carry);
    const seconds = (performance.now() - started) / 1000;
    const memory = await memoryReport(large);
    const growth = (memory.peakLiveBytes - memory.baselineLiveBytes) / MB;

    // The same list at a tenth of the size, for comparison.
    expect((await (await listOrders(small)).text()).length).toBeGreaterThan(SMALL_COUNT * 100);
    const smallMemory = await memoryReport(small);
    const smallGrowth = (smallMemory.peakLiveBytes - smallMemory.baselineLiveBytes) / MB;

    expect(carry.endsWith('}]')).toBe(true);
    expect(count).toBe(COUNT);
    expect(outOfOrder).toBe(0);
    // More than a buffered Lambda response may carry.
    expect(bytes).toBeGreaterThan(6 * MB);
    console.log(
      `[large-list] ${COUNT} orders, ${(bytes / MB).toFixed(1)} MiB in ${seconds.toFixed(2)} s (server forcing a GC every 25 ms); live memory ` +
        `${(memory.baselineLiveBytes / MB).toFixed(1)} MiB before, peak ${(memory.peakLiveBytes / MB).toFixed(1)} MiB ` +
        `(growth ${growth.toFixed(1)} MiB); peak RSS ${(memory.peakRssBytes / MB).toFixed(0)} MiB; ` +
        `${SMALL_COUNT} orders: growth ${smallGrowth.toFixed(1)} MiB`,
    );
    // Ten times the orders, not ten times the memory: what is held is at most two pages per
    // shard (the one being merged and the one read ahead), under 1.5 KiB per order in flight.
    expect(growth).toBeLessThan(smallGrowth * 2 + 4);
    expect(growth).toBeLessThan((ORDER_SHARDS * 2 * ORDER_PAGE_SIZE * 1.5 * 1024) / MB);
  }, 120_000);
});

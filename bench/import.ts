/**
 * `npm run bench:import`: throughput of `orders import` on DynamoDB Local. Generates N orders
 * (`--orders N`, default 50,000; int64 ids across the whole range), then runs the real CLI
 * (`admin/cli.ts orders import`) twice against a fresh table — a first load (every order new:
 * checked, then written) and a re-run (every order unchanged: checked, nothing written) — and
 * prints orders/s end to end (process start-up, reading, validation, check, writing) and for
 * the check and write phases (the figure the CLI prints).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createOperatorClient } from '../lib/dynamodb/client.ts';
import { ensureTables } from '../lib/dynamodb/create-table.ts';
import { orderToJson, ORDER_STATUSES, type Order } from '../lib/orders/order.ts';
import { startDynamoDbLocal } from '../local/dynamodb-local.ts';
import { localTableNames, PROJECT_ROOT } from '../local/local-stack.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';

const values = benchFlags('bench:import', 'Throughput of orders import, first load and re-run.', {
  orders: countFlag('orders to import', 50_000),
});
const N = countOf('bench:import', 'orders', values.orders, 50_000);
const CLI = join(PROJECT_ROOT, 'admin', 'cli.ts');
const run = promisify(execFile);

function generate(count: number): Order[] {
  const step = (2n ** 63n - 1n) / BigInt(count);
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(i) * step + 1n,
    petId: BigInt(1000 + (i % 5000)),
    quantity: 1 + (i % 9),
    shipDate: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    complete: i % 3 === 1,
    status: ORDER_STATUSES[i % 3],
  }));
}

async function countItems(client: ReturnType<typeof createOperatorClient>, table: string) {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      // Orders only: not the list's version items (negative shards).
      new ScanCommand({
        TableName: table,
        Select: 'COUNT',
        ExclusiveStartKey: startKey,
        FilterExpression: '#shard >= :zero',
        ExpressionAttributeNames: { '#shard': 'shard' },
        ExpressionAttributeValues: { ':zero': 0 },
      }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return count;
}

const dir = await mkdtemp(join(tmpdir(), 'bench-import-'));
const dynamo = await startDynamoDbLocal();
// Set-up and the count are the operator's work: its budget per attempt, not a request's.
const client = createOperatorClient({ endpoint: dynamo.endpoint });
try {
  const tables = localTableNames('bench-import');
  await ensureTables(client, tables);
  const file = join(dir, 'orders.json');
  await writeFile(file, `[\n${generate(N).map(orderToJson).join(',\n')}\n]\n`);
  console.log(`${N} orders → ${tables.orders} on DynamoDB Local (${dynamo.endpoint})`);
  const expected = [`${N} new, 0 unchanged, 0 replaced`, `0 new, ${N} unchanged, 0 replaced`];
  for (const [pass, label] of ['first import', 're-run (unchanged)'].entries()) {
    const started = performance.now();
    const { stdout } = await run(
      process.execPath,
      [
        CLI,
        'orders',
        'import',
        file,
        '--endpoint',
        dynamo.endpoint,
        '--table-orders',
        tables.orders,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const seconds = (performance.now() - started) / 1000;
    const phaseRate = /\((\d+) orders\/s\)/.exec(stdout)?.[1] ?? '?';
    const counts = /: (\d+ new, \d+ unchanged, \d+ replaced)\.$/m.exec(stdout)?.[1] ?? '?';
    console.log(
      `${label.padEnd(20)} ${seconds.toFixed(1)} s end to end: ${Math.round(N / seconds)} orders/s; check and write phases ${phaseRate} orders/s (${counts})`,
    );
    if (counts !== expected[pass]) {
      console.log(`  expected ${expected[pass]}`);
      process.exitCode = 1;
    }
  }
  const stored = await countItems(client, tables.orders);
  console.log(`items in the table: ${stored}${stored === N ? '' : ` (expected ${N})`}`);
  if (stored !== N) process.exitCode = 1;
} finally {
  client.destroy();
  await dynamo.stop();
  await rm(dir, { recursive: true, force: true });
}

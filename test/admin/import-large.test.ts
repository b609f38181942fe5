/**
 * Imports at size: 50,000 orders with one bad record (every record is validated before anything
 * is written), and a clean import of many batches at both ends of the int64 range, run twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compareIds,
  INT64_MAX,
  INT64_MIN,
  ORDER_STATUSES,
  orderToJson,
  type Order,
} from '../../lib/orders/order.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { runCli, scanAll, tableFlags, tempFile } from './support.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('admin-import-large');
});
afterAll(() => t.drop());

const COUNT = 50_000;
const BAD = 31_337;

describe('orders import of 50,000 orders', () => {
  it('with one bad record reports it by line and index and writes nothing', async () => {
    const lines = Array.from({ length: COUNT }, (_, i) =>
      i === BAD
        ? `{"id":${i + 1},"status":"lost"}`
        : orderToJson({
            id: 9_000_000_000_000_000_000n + BigInt(i),
            quantity: i % 7,
            status: 'pending',
          }),
    );
    const file = tempFile('fifty-thousand.json', `[\n${lines.join(',\n')}\n]\n`);

    const result = await runCli(['orders', 'import', file, ...tableFlags(t)]);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    // Line 1 is the opening bracket: record I starts on line I + 2.
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      `${file}: line ${BAD + 2} (record ${BAD}): status must be one of pending, shipped, cancelled, got "lost"`,
      `error: ${file}: 1 problem in 1 record; nothing was written`,
    ]);
    expect(await scanAll(t.client, t.tables.orders)).toEqual([]);
  });

  it('writes exact int64 digits over many batches, and a re-run writes nothing', async () => {
    // Consecutive ids at both ends of the int64 range: as JS numbers they would collapse into a
    // handful of values, so any pass through a number shows as a missing or wrong order.
    const count = 5_000;
    const orders: Order[] = Array.from({ length: count }, (_, i) => ({
      id: i % 2 === 0 ? INT64_MAX - BigInt(i) : INT64_MIN + BigInt(i),
      petId: 9_007_199_254_740_993n + BigInt(i),
      quantity: i % 7,
      status: ORDER_STATUSES[i % 3],
    }));
    const file = tempFile('clean.json', `[\n${orders.map(orderToJson).join(',\n')}\n]\n`);
    const listed = `[${[...orders]
      .sort((a, b) => compareIds(a.id, b.id))
      .map(orderToJson)
      .join(',')}]`;

    const first = await runCli(['orders', 'import', file, ...tableFlags(t)]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(
      /^Imported 5000 orders .*: 5000 new, 0 unchanged, 0 replaced\.\n$/,
    );
    const exported = await runCli(['orders', 'export', ...tableFlags(t)]);
    expect(exported.stdout).toBe(listed);
    const stored = await scanAll(t.client, t.tables.orders);
    expect(stored).toHaveLength(count);

    const again = await runCli(['orders', 'import', file, ...tableFlags(t)]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/: 0 new, 5000 unchanged, 0 replaced\.\n$/);
    expect(await scanAll(t.client, t.tables.orders)).toEqual(stored);
  });
});

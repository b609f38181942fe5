/**
 * Imports at size: 50,000 orders with one bad record (every record is validated before anything
 * is written), and a clean import of many batches run twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderToJson } from '../../lib/orders/order.ts';
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

  it('without bad records is idempotent over many batches', async () => {
    const count = 5_000;
    const file = tempFile(
      'clean.json',
      JSON.stringify(
        Array.from({ length: count }, (_, i) => ({
          id: i * 7919,
          petId: i % 100,
          status: (['pending', 'shipped', 'cancelled'] as const)[i % 3],
        })),
      ),
    );
    const first = await runCli(['orders', 'import', file, ...tableFlags(t)]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Imported 5000 orders /);
    const stored = await scanAll(t.client, t.tables.orders);
    expect(stored).toHaveLength(count);

    const again = await runCli(['orders', 'import', file, ...tableFlags(t)]);
    expect(again.code).toBe(0);
    expect(await scanAll(t.client, t.tables.orders)).toEqual(stored);
  });
});

/** `orders …` through the real CLI, on isolated tables of the run's DynamoDB Local. */
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { adminWriteLeaseMs } from '../../admin/orders/shared.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { expectOneLineError, runCli, scanAll, tableFlags, tempDir, tempFile } from './support.ts';

let t: TestTables;
beforeAll(async () => {
  t = await createTestTables('admin-orders');
});
afterAll(() => t.drop());

/** Empties the orders table between tests. */
async function clearOrders(): Promise<void> {
  for (const item of await scanAll(t.client, t.tables.orders)) {
    await t.client.send(
      new DeleteCommand({ TableName: t.tables.orders, Key: { shard: item.shard, id: item.id } }),
    );
  }
}
beforeEach(clearOrders);

const orders = (...args: string[]) => runCli(['orders', ...args, ...tableFlags(t)]);

const FILE = `[
  {"id": 9223372036854775807, "petId": 9007199254740993, "quantity": 2,
   "shipDate": "2026-11-20T09:00:00Z", "complete": false, "status": "pending"},
  {"id": -9223372036854775808, "status": "cancelled"},
  {"id": 3, "petId": 103, "quantity": 1, "complete": true, "status": "shipped"},
  {"id": 1}
]`;
/** The API's list of FILE: sorted by id, fields in schema order, status defaulted. */
const LISTED =
  '[{"id":-9223372036854775808,"status":"cancelled"},{"id":1,"status":"pending"},' +
  '{"id":3,"petId":103,"quantity":1,"complete":true,"status":"shipped"},' +
  '{"id":9223372036854775807,"petId":9007199254740993,"quantity":2,"shipDate":"2026-11-20T09:00:00Z","complete":false,"status":"pending"}]';

async function exported(): Promise<string> {
  const result = await orders('export');
  expect(result.code).toBe(0);
  return result.stdout;
}

describe('orders import', () => {
  it('writes every order, int64 ids exact, and reports the count and rate', async () => {
    const result = await orders('import', tempFile('orders.json', FILE));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^Imported 4 orders into ${t.tables.orders} on http\\S+ in [\\d.]+ s \\(\\d+ orders/s\\): 4 new, 0 unchanged, 0 replaced\\.\n$`,
      ),
    );
    // Not a terminal: the progress bar prints its final line only.
    expect(result.stderr).toMatch(/^\[#{30}\] 4\/4 orders 100% \d+ orders\/s\n$/);
    expect(await exported()).toBe(LISTED);
  });

  it('is idempotent: the same import twice leaves the same table', async () => {
    const file = tempFile('twice.json', FILE);
    await orders('import', file);
    const first = await scanAll(t.client, t.tables.orders);
    const again = await orders('import', file);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/: 0 new, 4 unchanged, 0 replaced\.\n$/);
    // Nothing to write: no progress bar.
    expect(again.stderr).toBe('');
    expect(await scanAll(t.client, t.tables.orders)).toEqual(first);
    expect(await exported()).toBe(LISTED);
  });

  it('does not undo history: an order changed since the file was made is a conflict, and nothing is written', async () => {
    const file = tempFile('old.json', FILE);
    await orders('import', file);
    await orders('ship', '9223372036854775807');
    const shipped = await exported();
    const grown = tempFile('grown.json', FILE.replace(/\]$/, ', {"id": 5}]'));

    for (const stale of [file, grown]) {
      const result = await orders('import', stale);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const added = stale === grown ? 1 : 0;
      expect(result.stderr.trimEnd().split('\n')).toEqual([
        `${stale}: order 9223372036854775807 differs from the stored one: complete true → false, status shipped → pending`,
        `error: ${stale}: 1 of ${4 + added} orders differ from the stored ones (${added} new, 3 unchanged); nothing was written: --replace writes the file's version over them`,
      ]);
      expect(await exported()).toBe(shipped);
    }

    const replaced = await orders('import', grown, '--replace');
    expect(replaced.code).toBe(0);
    expect(replaced.stdout).toMatch(/: 1 new, 3 unchanged, 1 replaced\.\n$/);
    // The file's version is back (pending), and id 5 was added.
    expect(await exported()).toBe(
      LISTED.replace('"status":"shipped"},', '"status":"shipped"},{"id":5,"status":"pending"},'),
    );
  });

  it('lists the first 20 conflicts and counts the rest', async () => {
    const many = (status: string) =>
      tempFile(
        `${status}.json`,
        `[${Array.from({ length: 25 }, (_, i) => `{"id": ${i}, "status": "${status}"}`).join(',')}]`,
      );
    await orders('import', many('pending'));
    const result = await orders('import', many('cancelled'));
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(22);
    expect(lines[0]).toMatch(
      /: order \d+ differs from the stored one: status pending → cancelled$/,
    );
    expect(lines[20]).toMatch(/cancelled\.json: … and 5 more$/);
    expect(lines[21]).toMatch(
      /^error: \S+: 25 of 25 orders differ from the stored ones \(0 new, 0 unchanged\); nothing was written/,
    );
    expect((await scanAll(t.client, t.tables.orders)).map((item) => item.status)).not.toContain(
      'cancelled',
    );
  });

  it('lists every problem with its line and record index, and writes nothing', async () => {
    const file = tempFile(
      'bad.json',
      `[
  {"id": 1},
  {"id": 1.5},
  {"id": "x",
   "colour": "red"},
  {"id": 9223372036854775808}, {"id": 1},
  {"id": 6, "status": "lost"}
]`,
    );
    const result = await orders('import', file);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      `${file}: line 3 (record 1): id 1.5 is not an integer in the int64 range`,
      `${file}: line 4 (record 2): unknown field "colour" (allowed: id, petId, quantity, shipDate, complete, status)`,
      `${file}: line 4 (record 2): id must be an integer (int64), got "x"`,
      `${file}: line 6 (record 3): id 9223372036854775808 is not an integer in the int64 range`,
      `${file}: line 6 (record 4): id 1 repeats the id of record 0`,
      `${file}: line 7 (record 5): status must be one of pending, shipped, cancelled, got "lost"`,
      `error: ${file}: 6 problems in 5 records; nothing was written`,
    ]);
    expect(await scanAll(t.client, t.tables.orders)).toEqual([]);
  });

  it.each([
    [
      'unreadable JSON',
      () => tempFile('broken.json', '[{"id": 1},'),
      /: not valid JSON: .*; nothing was written$/,
    ],
    [
      'not an array',
      () => tempFile('object.json', '{"id": 1}'),
      /: expected a JSON array of orders; nothing was written$/,
    ],
    [
      'a missing file',
      () => join(tempDir(), 'missing.json'),
      /^error: cannot read \S+missing\.json \(ENOENT\); nothing was written$/,
    ],
  ])('refuses %s with one line and writes nothing', async (_, file, message) => {
    expectOneLineError(await orders('import', file()), 1, message);
    expect(await scanAll(t.client, t.tables.orders)).toEqual([]);
  });

  it('needs a file and the orders table', async () => {
    expectOneLineError(await orders('import'), 2, /^error: missing <file\.json>/);
    const noTable = await runCli([
      'orders',
      'import',
      tempFile('o.json', FILE),
      '--endpoint',
      t.endpoint,
      '--table-keys',
      t.tables.apiKeys,
    ]);
    expectOneLineError(noTable, 2, /^error: this command needs --table-orders NAME$/);
  });
});

describe('orders ship', () => {
  beforeEach(async () => {
    await orders('import', tempFile('orders.json', FILE));
  });

  it('ships a pending order: status shipped, complete true, in place', async () => {
    const result = await orders('ship', '9223372036854775807');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Order 9223372036854775807 shipped.\n');
    expect(await exported()).toContain(
      '{"id":9223372036854775807,"petId":9007199254740993,"quantity":2,"shipDate":"2026-11-20T09:00:00Z","complete":true,"status":"shipped"}',
    );
  });

  it('answers an already shipped order with success, changing nothing', async () => {
    const before = await scanAll(t.client, t.tables.orders);
    const result = await orders('ship', '3');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Order 3 was already shipped; nothing changed.\n');
    expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
  });

  it('refuses a cancelled order and a missing one (exit 1), a malformed id (exit 2)', async () => {
    const before = await scanAll(t.client, t.tables.orders);
    expectOneLineError(
      await runCli(['orders', 'ship', ...tableFlags(t), '--', '-9223372036854775808']),
      1,
      /^error: order -9223372036854775808 is cancelled and cannot be shipped$/,
    );
    expectOneLineError(await orders('ship', '42'), 1, /^error: order 42 was not found$/);
    for (const bad of ['1e3', '9223372036854775808', 'abc', '1.0']) {
      expectOneLineError(
        await orders('ship', bad),
        2,
        new RegExp(
          `^error: order id must be a base-10 integer in the int64 range, got "${bad.replace('.', '\\.')}"$`,
        ),
      );
    }
    expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
  });
});

describe("the CLI's writes, as the functions write", () => {
  it('writes s, t and u with every order it imports and moves s on a ship, whatever indexes the table has', async () => {
    const bare = await createTestTables('admin-orders-bare', { ordersIndexes: [] });
    try {
      for (const table of [t, bare]) {
        const cli = (...args: string[]) => runCli(['orders', ...args, ...tableFlags(table)]);
        expect((await cli('import', tempFile('orders.json', FILE))).code).toBe(0);
        expect((await cli('ship', '9223372036854775807')).code).toBe(0);
        const items = await scanAll(table.client, table.tables.orders);
        const shipped = items.find((item) => String(item.id) === '9223372036854775807')!;
        expect(shipped).toMatchObject({ status: 'shipped', s: 's7' });
        expect(String(shipped.t)).toBe('1795165200000000000');
        expect(shipped).not.toHaveProperty('u');
      }
    } finally {
      await bare.drop();
    }
  });
});

describe('orders show', () => {
  const AT = Date.UTC(2026, 10, 28, 9, 30, 15, 250);
  beforeEach(() => orders('import', tempFile('orders.json', FILE)));

  it('shows who cancelled an order: when, which key, which request, and the item as stored', async () => {
    const store = new DynamoDbOrderStore(t.client, t.tables.orders);
    await store.putOrders([{ id: 42n, petId: 9007199254740993n, status: 'pending' }]);
    const cancellation = {
      at: AT,
      keyId: 'key_Warehouse7',
      requestId: 'c0ffee00-1111-2222-3333-444455556666',
    };
    expect(await store.cancel(42n, cancellation)).toBe('cancelled');

    const result = await orders('show', '42');
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 5)).toEqual([
      `Order 42 on ${t.endpoint}`,
      '  status        cancelled',
      '  cancelled at  2026-11-28T09:30:15.250Z',
      '  by key        key_Warehouse7',
      '  request id    c0ffee00-1111-2222-3333-444455556666',
    ]);
    // As stored: every attribute, numbers to the digit (a JS number would end in ...992); the
    // `status` an import gave it, which a cancel through the API leaves as it was: the trail
    // makes the order cancelled.
    expect(lines[5]).toMatch(
      /^ {2}as stored {5}\{.*"cancelRequestId":"c0ffee00-[^"]+".*"cancelledAt":1795858215250,"cancelledBy":"key_Warehouse7","id":42,"petId":9007199254740993,"s":"c2","shard":2,"status":"pending"\}$/,
    );
    expect(lines).toHaveLength(6);

    const json = JSON.parse((await orders('show', '42', '--json')).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({
      id: 42,
      status: 'cancelled',
      cancellation: {
        at: '2026-11-28T09:30:15.250Z',
        keyId: cancellation.keyId,
        requestId: cancellation.requestId,
      },
      stored: { cancelledBy: 'key_Warehouse7', status: 'pending', shard: 2 },
    });
  });

  it('shows an order no cancel recorded: pending, shipped, or stored cancelled by an import', async () => {
    const pending = await orders('show', '9223372036854775807');
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout).toMatch(/^ {2}status {8}pending$/m);
    expect(pending.stdout).not.toMatch(/cancelled at|by key|request id/);
    expect(pending.stdout).toContain('"id":9223372036854775807,"petId":9007199254740993');
    const imported = await runCli([
      'orders',
      'show',
      ...tableFlags(t),
      '--',
      '-9223372036854775808',
    ]);
    expect(imported.stdout).toMatch(/^ {2}status {8}cancelled$/m);
    expect(imported.stdout).toMatch(
      /^ {2}cancelled at {2}not recorded \(cancelled before the trail existed/m,
    );
    const json = JSON.parse((await orders('show', '3', '--json')).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({ id: 3, status: 'shipped', cancellation: null });
  });

  it('refuses an unknown order (exit 1) and a malformed id (exit 2), changing nothing', async () => {
    expectOneLineError(await orders('show', '99'), 1, /^error: order 99 was not found on http/);
    expectOneLineError(await orders('show', 'x1'), 2, /^error: order id must be a base-10 integer/);
    expectOneLineError(await orders('show'), 2, /^error: missing <order-id>/);
  });
});

describe('orders export', () => {
  it('writes the API list to a file, complete, with no partial file left', async () => {
    await orders('import', tempFile('orders.json', FILE));
    const out = join(tempDir(), 'export.json');
    const result = await orders('export', out);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`Exported 4 orders to ${out}.\n`);
    expect(readFileSync(out, 'utf8')).toBe(LISTED);
    expect(readdirSync(dirname(out))).toEqual(['export.json']);
  });

  it('exports an empty table as []', async () => {
    expect(await exported()).toBe('[]');
  });

  it('refuses a file it cannot write, leaving nothing behind', async () => {
    const out = join(tempDir(), 'no-such-dir', 'export.json');
    expectOneLineError(await orders('export', out), 1, /^error: cannot write \S+ \(ENOENT\)$/);
    expect(existsSync(dirname(out))).toBe(false);
  });

  it('round-trips: an export imports back to the same list', async () => {
    await orders('import', tempFile('orders.json', FILE));
    const out = join(tempDir(), 'round.json');
    await orders('export', out);
    await clearOrders();
    expect((await orders('import', out)).code).toBe(0);
    expect(await exported()).toBe(LISTED);
  });
});

describe("the list's ETag and the CLI", () => {
  const tag = async () =>
    (await new DynamoDbOrderStore(t.client, t.tables.orders).readListVersion()).tag;

  it('an import and a ship change it; a ship of a shipped order does not', async () => {
    const empty = await tag();
    expect((await orders('import', tempFile('orders.json', FILE))).code).toBe(0);
    const imported = await tag();
    expect(imported).not.toBe(empty);
    expect((await orders('ship', '1')).code).toBe(0);
    const shipped = await tag();
    expect(shipped).not.toBe(imported);
    expect((await orders('ship', '1')).code).toBe(0);
    expect(await tag()).toBe(shipped);
  });

  it('orders retag gives the list a new tag and changes no order', async () => {
    expect((await orders('import', tempFile('orders.json', FILE))).code).toBe(0);
    const before = await tag();
    const result = await orders('retag');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toBe(
      `The list of ${t.tables.orders} has a new ETag: clients get the whole list again.\n`,
    );
    expect(await tag()).not.toBe(before);
    expect(await exported()).toBe(LISTED);
  });

  it('gives operators a lease long enough for every attempt of a call, and a clock five minutes off', () => {
    expect(adminWriteLeaseMs({})).toBe(3 * 10_000 + 300_000);
    expect(adminWriteLeaseMs({ STORE_ORDERS_ADMIN_TIMEOUT_SECONDS: '600' })).toBe(
      3 * 600_000 + 300_000,
    );
  });
});

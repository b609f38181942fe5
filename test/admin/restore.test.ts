/**
 * The restore runbook of docs/runbooks.md, every step after AWS's own
 * `restore-table-to-point-in-time`, run as an on-call engineer runs it: the restored table is a
 * second orders table on DynamoDB Local, the live one is `npm start`'s. Export from the restored
 * table, `orders import --replace` into the live one, `orders retag`: the API lists the orders
 * as they were at the restore point, and a client's old ETag gets 200, not 304.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { runCli, tempDir } from './support.ts';

const KEY = DEMO_KEYS.find((k) => k.plan === 'business')!.key;

let api: LocalApi;
let restored: TestTables;
beforeAll(async () => {
  [api, restored] = await Promise.all([startLocalApi(), createTestTables('restored')]);
});
afterAll(async () => {
  await Promise.all([api.stop(), restored.drop()]);
});

const local = (...args: string[]) =>
  runCli([...args, '--local'], { env: { STORE_ORDERS_LOCAL_STATE: api.stateFile } });
const fromRestored = (...args: string[]) =>
  runCli([...args, '--table-orders', restored.tables.orders, '--endpoint', restored.endpoint]);

async function list(etag?: string) {
  const response = await fetch(`${api.url}/store/orders`, {
    headers: { Authorization: `Bearer ${KEY}`, ...(etag ? { 'If-None-Match': etag } : {}) },
  });
  return {
    status: response.status,
    etag: response.headers.get('etag') ?? '',
    body: await response.text(),
  };
}

describe('restoring the orders from a point in time (docs/runbooks.md)', () => {
  it('copies the restored table back over the live one; old ETags get the whole list', async () => {
    const atRestorePoint = await list();
    expect(atRestorePoint.status).toBe(200);
    const dir = tempDir();

    // Stand-in for `aws dynamodb restore-table-to-point-in-time`: the restored table holds the
    // orders as they were then.
    const snapshot = join(dir, 'snapshot.json');
    expect((await local('orders', 'export', snapshot)).code).toBe(0);
    const seeded = await fromRestored('orders', 'import', snapshot);
    expect(seeded.code, seeded.stderr).toBe(0);

    // What went wrong after it: an order cancelled, another shipped.
    const cancel = await fetch(`${api.url}/store/orders/1`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${KEY}` },
    });
    expect(cancel.status).toBe(204);
    expect((await local('orders', 'ship', '2')).code).toBe(0);
    const damaged = await list();
    expect(damaged.body).not.toBe(atRestorePoint.body);
    expect((await list(damaged.etag)).status).toBe(304);

    // The runbook, step by step.
    const file = join(dir, 'restored-orders.json');
    const exported = await fromRestored('orders', 'export', file);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/^Exported \d+ orders to /);
    const refused = await local('orders', 'import', file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/2 of \d+ orders differ from the stored ones .* --replace/);
    const imported = await local('orders', 'import', file, '--replace');
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/: 0 new, \d+ unchanged, 2 replaced\.\n$/);
    const retagged = await local('orders', 'retag');
    expect(retagged.code, retagged.stderr).toBe(0);

    // The API lists the orders as they were; no client keeps a list from before.
    const now = await list(damaged.etag);
    expect(now.status).toBe(200);
    expect(now.body).toBe(atRestorePoint.body);
    expect((await list(atRestorePoint.etag)).status).toBe(200);
    expect((await list(now.etag)).status).toBe(304);
  });
});

/**
 * `orders show` and `orders export`: an order as stored (and who cancelled it), and every order
 * as the API lists them. They change nothing.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { itemToJson } from '../../lib/dynamodb/attributes.ts';
import { ordersJsonArray } from '../../lib/orders/order-json.ts';
import { switchFlag } from '../../lib/config/flags.ts';
import { Failure, print } from '../common.ts';
import { defineCommand } from '../command.ts';
import { orderIdArgument, withOrderStore } from './shared.ts';

export const show = defineCommand(
  {
    name: 'orders show',
    summary: 'an order as stored, its status, and who cancelled it: when, which key, which request',
    description: `Shows one order as it is stored (read strongly consistent): its status and, for an order
cancelled through the API, what its cancel recorded in the write that cancelled it — when, the
id of the API key that asked (key_…: keys show names its label and plan) and the id of the
request (its log lines: the request-by-id query, docs/operations.md). An order cancelled before
that record existed, or stored cancelled by an import, has none. Then every attribute of the
item, exact to the digit. The status is the order's as the API shows it: a cancel through the
API records itself and leaves the item's status attribute as an import or a ship set it, so an
order with that record is cancelled whatever the attribute says. Changes nothing. Ids are int64
(a negative id goes last, after --).`,
    flags: { json: switchFlag('print {"id", "status", "cancellation", "stored"} instead') },
    positionals: ['order-id'],
  },
  async (parsed, io) => {
    const id = orderIdArgument(parsed.positionals[0]);
    await withOrderStore(parsed.values, async (store, target) => {
      const stored = await store.findStored(id);
      if (!stored) throw new Failure(`order ${id} was not found on ${target.description}`);
      const status = stored.order?.status ?? 'unreadable';
      const { at, keyId, requestId } = stored.trail;
      const when = at === undefined ? undefined : new Date(at).toISOString();
      if (parsed.values.json) {
        const cancellation =
          when === undefined && keyId === undefined && requestId === undefined
            ? null
            : { at: when ?? null, keyId: keyId ?? null, requestId: requestId ?? null };
        print(
          io.stdout,
          `{"id":${id},"status":${JSON.stringify(status)},"cancellation":${JSON.stringify(cancellation)},"stored":${itemToJson(stored.item)}}`,
        );
        return;
      }
      const lines: [string, string][] = [['status', status]];
      if (when !== undefined || keyId !== undefined || requestId !== undefined) {
        lines.push(
          ['cancelled at', when ?? '-'],
          ['by key', keyId ?? '-'],
          ['request id', requestId ?? '-'],
        );
      } else if (status === 'cancelled') {
        lines.push([
          'cancelled at',
          'not recorded (cancelled before the trail existed, or stored cancelled by an import)',
        ]);
      }
      lines.push(['as stored', itemToJson(stored.item)]);
      print(io.stdout, `Order ${id} on ${target.description}`);
      for (const [name, value] of lines) print(io.stdout, `  ${name.padEnd(14)}${value}`);
    });
  },
);

/** Counts what passes through. */
async function* counting<T>(
  batches: AsyncIterable<readonly T[]>,
  count: { n: number },
): AsyncGenerator<readonly T[]> {
  for await (const batch of batches) {
    count.n += batch.length;
    yield batch;
  }
}

export const exportOrders = defineCommand(
  {
    name: 'orders export',
    summary: 'every order as the API lists them (to stdout without a file)',
    description: `Writes every order, sorted by id, as the JSON array GET /store/orders answers (int64 ids
exact), streaming: memory stays flat however many orders there are. Without a file, to
stdout. A file is written under a temporary name and renamed when complete.`,
    flags: {},
    positionals: ['file.json?'],
  },
  async (parsed, io) => {
    const path = parsed.positionals[0];
    await withOrderStore(parsed.values, async (store) => {
      const count = { n: 0 };
      const chunks = Readable.from(ordersJsonArray(counting(await store.openOrderStream(), count)));
      if (path === undefined) {
        await pipeline(chunks, io.stdout, { end: false });
        print(io.stderr, `Exported ${count.n} orders.`);
        return;
      }
      const partial = `${path}.${process.pid}.partial`;
      try {
        await pipeline(chunks, createWriteStream(partial));
        await rename(partial, path);
      } catch (error) {
        await rm(partial, { force: true });
        // A file system error names its path; anything else is the store's.
        const { code, path: failedPath } = error as NodeJS.ErrnoException;
        if (failedPath !== undefined)
          throw new Failure(`cannot write ${path} (${code ?? 'error'})`);
        throw error;
      }
      print(io.stderr, `Exported ${count.n} orders to ${path}.`);
    });
  },
);

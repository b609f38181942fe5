/**
 * `orders …`: load orders from a file, ship one, export them all. Thin: parse the command line,
 * call lib/orders, print.
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BatchWriteOptions } from '../lib/dynamodb/batch-write.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import { readOrderId, shipOrder } from '../lib/orders/operations.ts';
import { formatProblem, parseOrders } from '../lib/orders/order-input.ts';
import { OrdersPartlyWritten } from '../lib/orders/order-store.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { Order } from '../lib/orders/order.ts';
import { describeFailure, Failure, parseCommand, print, UsageError, type Io } from './common.ts';
import { confirmChange } from './confirm.ts';
import { progressBar } from './progress.ts';
import {
  TARGET_OPTIONS,
  TARGET_USAGE,
  withTable,
  type Target,
  type TargetValues,
} from './target.ts';

const PROGRAM = 'store-orders-admin orders';

export const ORDERS_USAGE = `Usage: ${PROGRAM} <command> [options] <target>

Commands:
  import <file.json>   validate every record (one bad: nothing written), then write them;
                       re-runnable
  ship <order-id>      pending → shipped
  export [file.json]   every order as the API lists them (to stdout without a file)

"${PROGRAM} <command> --help" explains each one.

${TARGET_USAGE}`;

function withOrderStore<T>(
  values: TargetValues,
  action: (store: DynamoDbOrderStore, target: Target, table: string) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(new DynamoDbOrderStore(client, table), target, table),
  );
}

/**
 * Reads and validates an import file. Every problem of every record is printed (with its line
 * and index) before the one-line error, and nothing is written.
 */
async function readImportFile(path: string, io: Io): Promise<Order[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Failure(
      `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was written`,
    );
  }
  const parsed = parseOrders(text, { lines: true });
  if (parsed.ok) return parsed.orders;
  const [first] = parsed.problems;
  if (parsed.problems.length === 1 && first && first.index < 0) {
    throw new Failure(`${path}: ${first.message}; nothing was written`);
  }
  for (const problem of parsed.problems) print(io.stderr, `${path}: ${formatProblem(problem)}`);
  const records = new Set(parsed.problems.map((problem) => problem.index)).size;
  const problems = parsed.problems.length;
  throw new Failure(
    `${path}: ${problems} problem${problems === 1 ? '' : 's'} in ${records} record${records === 1 ? '' : 's'}; nothing was written`,
  );
}

/**
 * Writes validated orders with a progress bar on stderr. A failure midway ends in one line that
 * says how many were written (all writes have settled by then) and that a re-run finishes it.
 */
export async function writeOrders(
  store: DynamoDbOrderStore,
  path: string,
  orders: readonly Order[],
  io: Pick<Io, 'stderr'>,
  options: Omit<BatchWriteOptions, 'onProgress'> = {},
): Promise<void> {
  const progress = progressBar(orders.length, 'orders', io.stderr);
  try {
    await store.putOrders(orders, {
      ...options,
      onProgress: (written) => progress.update(written),
    });
  } catch (error) {
    if (!(error instanceof OrdersPartlyWritten)) throw error;
    progress.finish(error.written);
    const reason = describeFailure(error.cause).replace(/\.$/, '');
    throw new Failure(
      `${path}: ${error.written} of ${error.total} orders written before ${reason}; run the import again to finish (it is idempotent)`,
    );
  }
  progress.finish(orders.length);
}

async function importOrders(argv: readonly string[], io: Io): Promise<void> {
  const parsed = parseCommand(
    argv,
    {
      usage: `Usage: ${PROGRAM} import <file.json> <target>

Loads a JSON array of orders in the API's shape: id (required) and petId (int64, exact to the
digit), quantity, shipDate (date-time), complete, status (pending, shipped or cancelled;
default pending). Every record is checked first; if any is bad, every problem is listed with
its line and record index and nothing is written. Then the orders are written in batches of 25
(unprocessed items retried), with a progress bar on stderr.

An order whose id is already stored is replaced by the file's version, so running the same
import again leaves the same table. If the table fails midway (throttling, expired
credentials), the orders written so far stay: the error says how many, and running the same
import again finishes it.

${TARGET_USAGE}`,
      options: TARGET_OPTIONS,
      positionals: ['file.json'],
    },
    io,
  );
  if (!parsed) return;
  const path = parsed.positionals[0] as string;
  await withOrderStore(parsed.values, async (store, target, table) => {
    const orders = await readImportFile(path, io);
    await confirmChange(
      target,
      `import ${orders.length} orders into ${table}`,
      parsed.values.yes,
      io,
    );
    const started = performance.now();
    await writeOrders(store, path, orders, io);
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(orders.length / seconds) : orders.length;
    print(
      io.stdout,
      `Imported ${orders.length} orders into ${table} on ${target.description} in ${seconds.toFixed(1)} s (${rate} orders/s); orders with the same id were replaced.`,
    );
  });
}

function orderIdArgument(raw: string | undefined): bigint {
  const read = readOrderId(raw);
  if (read.id === undefined) {
    throw new UsageError(
      `order id must be a base-10 integer in the int64 range, got "${read.shown ?? ''}"`,
    );
  }
  return read.id;
}

async function ship(argv: readonly string[], io: Io): Promise<void> {
  const parsed = parseCommand(
    argv,
    {
      usage: `Usage: ${PROGRAM} ship <order-id> <target>

Ships a pending order: status → shipped and complete → true, in one conditional write (a
ship racing a cancel never ships a cancelled order). Shipping a shipped order changes nothing
(exit 0); a cancelled or unknown order is refused (exit 1). Ids are int64, exact to the digit
(a negative id goes last, after --: ship --local -- -5).

${TARGET_USAGE}`,
      options: TARGET_OPTIONS,
      positionals: ['order-id'],
    },
    io,
  );
  if (!parsed) return;
  const id = orderIdArgument(parsed.positionals[0]);
  await withOrderStore(parsed.values, async (store, target) => {
    await confirmChange(target, `ship order ${id}`, parsed.values.yes, io);
    const outcome = await shipOrder(store, id);
    print(
      io.stdout,
      outcome === 'shipped'
        ? `Order ${id} shipped.`
        : `Order ${id} was already shipped; nothing changed.`,
    );
  });
}

/** Counts what passes through. */
async function* counting<T>(source: AsyncIterable<T>, count: { n: number }): AsyncGenerator<T> {
  for await (const item of source) {
    count.n++;
    yield item;
  }
}

async function exportOrders(argv: readonly string[], io: Io): Promise<void> {
  const parsed = parseCommand(
    argv,
    {
      usage: `Usage: ${PROGRAM} export [file.json] <target>

Writes every order, sorted by id, as the JSON array GET /store/orders answers (int64 ids
exact), streaming: memory stays flat however many orders there are. Without a file, to
stdout. A file is written under a temporary name and renamed when complete.

${TARGET_USAGE}`,
      options: TARGET_OPTIONS,
      positionals: ['file.json?'],
    },
    io,
  );
  if (!parsed) return;
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
      if (failedPath !== undefined) throw new Failure(`cannot write ${path} (${code ?? 'error'})`);
      throw error;
    }
    print(io.stderr, `Exported ${count.n} orders to ${path}.`);
  });
}

export const ORDER_COMMANDS: Record<string, (argv: readonly string[], io: Io) => Promise<void>> = {
  import: importOrders,
  ship,
  export: exportOrders,
};

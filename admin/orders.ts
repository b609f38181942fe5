/**
 * `orders …`: load orders from a file, show one as stored (and who cancelled it), ship one,
 * export them all. Thin: parse the command line, call lib/orders, print.
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { BatchWriteOptions } from '../lib/dynamodb/batch-write.ts';
import { itemToJson } from '../lib/dynamodb/attributes.ts';
import { OPERATOR_LIST_VERSION_ITEMS } from '../lib/dynamodb/list-version-items.ts';
import {
  describeOrderIndexes,
  firstReleaseWrites,
  type FirstReleaseWrites,
} from '../lib/dynamodb/order-indexes.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import { reindexOrders } from '../lib/dynamodb/reindex.ts';
import { readOrderId, shipOrder } from '../lib/orders/operations.ts';
import { formatProblem, parseOrders } from '../lib/orders/order-input.ts';
import { ordersToWrite, planImport, type OrderConflict } from '../lib/orders/import.ts';
import type { OrderField } from '../lib/orders/order.ts';
import { OrdersPartlyWritten } from '../lib/orders/order-store.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { Order } from '../lib/orders/order.ts';
import { switchFlag } from '../lib/config/flags.ts';
import {
  ADMIN_ATTEMPTS,
  adminAttemptMs,
  describeFailure,
  Failure,
  print,
  UsageError,
  type Io,
} from './common.ts';
import { defineCommand, type Command } from './command.ts';
import { confirmChange } from './confirm.ts';
import { progressBar, progressLine } from './progress.ts';
import { withTable, type Target, type TargetValues } from './target.ts';

/**
 * How long after its mark an operator's write of orders may still land (the list has no ETag
 * meanwhile, lib/dynamodb/list-version.ts): every attempt of one call, then five minutes — as
 * far as an operator's clock may be from AWS's and still sign requests (SigV4's tolerance).
 */
export function adminWriteLeaseMs(env: NodeJS.ProcessEnv = process.env): number {
  return ADMIN_ATTEMPTS * adminAttemptMs(env) + 5 * 60_000;
}

/** The orders store of a command's target (its writes as `firstRelease` says: withOrderWrites). */
function orderStore(
  client: DynamoDBDocumentClient,
  table: string,
  firstRelease?: FirstReleaseWrites,
) {
  return new DynamoDbOrderStore(client, table, {
    listVersion: { leaseMs: adminWriteLeaseMs(), items: OPERATOR_LIST_VERSION_ITEMS },
    ...(firstRelease ? { firstRelease } : {}),
  });
}

function withOrderStore<T>(
  values: TargetValues,
  action: (store: DynamoDbOrderStore, target: Target, table: string) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(orderStore(client, table), target, table),
  );
}

/**
 * As withOrderStore, for a command that writes orders (import, ship): `openStore()` first reads
 * which indexes the table has (DescribeTable, once), so that the store's writes do what the
 * functions of the table's stage do (lib/dynamodb/order-indexes.ts, firstReleaseWrites). The
 * command calls it once its own checks have passed (an import file is read first).
 */
function withOrderWrites<T>(
  values: TargetValues,
  action: (
    openStore: () => Promise<DynamoDbOrderStore>,
    target: Target,
    table: string,
  ) => Promise<T>,
): Promise<T> {
  return withTable(values, 'orders', (client, table, target) =>
    action(
      async () =>
        orderStore(client, table, firstReleaseWrites(await describeOrderIndexes(client, table))),
      target,
      table,
    ),
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
  options: Omit<BatchWriteOptions, 'onProgress'> & { readonly replace?: boolean } = {},
): Promise<void> {
  const { replace, ...batches } = options;
  const progress = progressBar(orders.length, 'orders', io.stderr);
  try {
    await store.putOrders(orders, {
      ...batches,
      onProgress: (written) => progress.update(written),
    });
  } catch (error) {
    if (!(error instanceof OrdersPartlyWritten)) throw error;
    progress.finish(error.written);
    const reason = describeFailure(error.cause).replace(/\.$/, '');
    throw new Failure(
      `${path}: ${error.written} of ${error.total} orders written before ${reason}; run the import again${replace ? ' with --replace' : ''} to finish (it is idempotent)`,
    );
  }
  progress.finish(orders.length);
}

/** Conflicts listed before the import is refused; the rest are counted. */
export const CONFLICTS_LISTED = 20;

function shownValue(value: Order[OrderField] | undefined): string {
  return value === undefined ? 'absent' : String(value);
}

function describeConflict(conflict: OrderConflict): string {
  const fields = conflict.differences.map(
    ({ field, stored, incoming }) => `${field} ${shownValue(stored)} → ${shownValue(incoming)}`,
  );
  return `order ${conflict.order.id} differs from the stored one: ${fields.join(', ')}`;
}

export interface ImportCounts {
  readonly added: number;
  readonly unchanged: number;
  readonly replaced: number;
}

/**
 * Imports validated orders. First reads which of their ids are stored (a failure there writes
 * nothing): an order stored exactly as the file has it is skipped; one stored otherwise is a
 * conflict, listed on stderr, and the import is refused unless `replace`. `confirm` is asked
 * only when there is something to write; then the new (and replaced) orders are written.
 */
export async function importValidated(
  store: DynamoDbOrderStore,
  path: string,
  orders: readonly Order[],
  options: {
    readonly replace: boolean;
    readonly confirm: () => Promise<void>;
    readonly batches?: Omit<BatchWriteOptions, 'onProgress'>;
  },
  io: Pick<Io, 'stderr'>,
): Promise<ImportCounts> {
  const checking = progressBar(orders.length, 'checked', io.stderr);
  let stored: Order[];
  try {
    stored = await store.findOrders(
      orders.map((order) => order.id),
      { ...options.batches, onProgress: (checked) => checking.update(checked) },
    );
  } catch (error) {
    throw new Failure(
      `${path}: reading the stored orders failed (${describeFailure(error).replace(/\.$/, '')}); nothing was written`,
    );
  } finally {
    checking.clear();
  }
  const plan = planImport(orders, stored);
  const { conflicts } = plan;
  if (conflicts.length > 0 && !options.replace) {
    for (const conflict of conflicts.slice(0, CONFLICTS_LISTED)) {
      print(io.stderr, `${path}: ${describeConflict(conflict)}`);
    }
    if (conflicts.length > CONFLICTS_LISTED) {
      print(io.stderr, `${path}: … and ${conflicts.length - CONFLICTS_LISTED} more`);
    }
    throw new Failure(
      `${path}: ${conflicts.length} of ${orders.length} orders differ from the stored ones (${plan.added.length} new, ${plan.unchanged} unchanged); nothing was written: --replace writes the file's version over them`,
    );
  }
  const toWrite = ordersToWrite(plan, options.replace);
  if (toWrite.length > 0) {
    await options.confirm();
    await writeOrders(store, path, toWrite, io, {
      ...options.batches,
      replace: options.replace,
    });
  }
  return {
    added: plan.added.length,
    unchanged: plan.unchanged,
    replaced: options.replace ? conflicts.length : 0,
  };
}

const importOrders = defineCommand(
  {
    name: 'orders import',
    summary:
      'validate every record (one bad: nothing written), skip the orders stored as they are, refuse those stored otherwise unless --replace, write the rest; re-runnable',
    description: `Loads a JSON array of orders in the API's shape: id (required) and petId (int64, exact to the
digit), quantity, shipDate (date-time), complete, status (pending, shipped or cancelled;
default pending). Every record is checked first; if any is bad, every problem is listed with
its line and record index and nothing is written.

Then the ids are looked up in the table. An order stored exactly as the file has it is
skipped, so running the same import again changes nothing. An order stored with other values
(shipped since the file was made, say) is a conflict: the first ${CONFLICTS_LISTED} are listed with the
fields that differ, and nothing is written — unless --replace is given, which writes the
file's version over them. The new (and replaced) orders are written in batches of 25
(unprocessed items retried), with a progress bar on stderr; the summary counts new, unchanged
and replaced orders.

If the table fails midway (throttling, expired credentials), the orders written so far stay:
the error says how many, and running the same import again finishes it.`,
    flags: {
      replace: switchFlag("write the file's version over orders stored with other values"),
    },
    positionals: ['file.json'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const path = parsed.positionals[0] as string;
    await withOrderWrites(values, async (openStore, target, table) => {
      const orders = await readImportFile(path, io);
      const started = performance.now();
      const counts = await importValidated(
        await openStore(),
        path,
        orders,
        {
          replace: values.replace === true,
          confirm: () =>
            confirmChange(target, `import ${orders.length} orders into ${table}`, values.yes, io),
        },
        io,
      );
      const seconds = (performance.now() - started) / 1000;
      const rate = seconds > 0 ? Math.round(orders.length / seconds) : orders.length;
      print(
        io.stdout,
        `Imported ${orders.length} orders into ${table} on ${target.description} in ${seconds.toFixed(1)} s (${rate} orders/s): ${counts.added} new, ${counts.unchanged} unchanged, ${counts.replaced} replaced.`,
      );
    });
  },
);

function orderIdArgument(raw: string | undefined): bigint {
  const read = readOrderId(raw);
  if (read.id === undefined) {
    throw new UsageError(
      `order id must be a base-10 integer in the int64 range, got "${read.shown ?? ''}"`,
    );
  }
  return read.id;
}

const ship = defineCommand(
  {
    name: 'orders ship',
    summary: 'pending → shipped',
    description: `Ships a pending order: status → shipped and complete → true, in one conditional write (a
ship racing a cancel never ships a cancelled order). Shipping a shipped order changes nothing
(exit 0); a cancelled or unknown order is refused (exit 1). Ids are int64, exact to the digit
(a negative id goes last, after --: ship --local -- -5).`,
    flags: {},
    positionals: ['order-id'],
  },
  async (parsed, io) => {
    const id = orderIdArgument(parsed.positionals[0]);
    await withOrderWrites(parsed.values, async (openStore, target) => {
      await confirmChange(target, `ship order ${id}`, parsed.values.yes, io);
      const outcome = await shipOrder(await openStore(), id);
      print(
        io.stdout,
        outcome === 'shipped'
          ? `Order ${id} shipped.`
          : `Order ${id} was already shipped; nothing changed.`,
      );
    });
  },
);

const show = defineCommand(
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

const exportOrders = defineCommand(
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

const retag = defineCommand(
  {
    name: 'orders retag',
    summary: 'a new ETag for the list (after orders were changed by hand in the table)',
    description: `Gives the list a new version, so that every ETag a client holds stops matching and its next
conditional GET /store/orders gets the whole list. Every write made through the service or
this CLI does that by itself; a change made by hand in the table (the console, a script, a
restore) does not: clients polling with If-None-Match keep their old list until the next
write, or until this command runs. It writes only the list's version items, never an order.`,
    flags: {},
    positionals: [],
  },
  async (parsed, io) => {
    await withOrderStore(parsed.values, async (store, target, table) => {
      await confirmChange(target, `give the list of ${table} a new ETag`, parsed.values.yes, io);
      await store.retag();
      print(io.stdout, `The list of ${table} has a new ETag: clients get the whole list again.`);
    });
  },
);

const reindex = defineCommand(
  {
    name: 'orders reindex',
    summary:
      "write the v2 list's index attributes onto every order that lacks them or holds stale ones, then mark the indexes ready (once per deploy that brings them; re-runnable)",
    description: `Reads every order (a parallel Scan, strongly consistent) and writes the attributes the v2
list's indexes are keyed by (s: the status and shard; t: the ship date's instant) onto each order
that lacks them or holds stale ones: the orders stored before the release that writes them. The
first release's statusKey and dateKey are written likewise while the table still has an index
keyed by them (byStatus, byStatusDate or byPetDate: it asks DynamoDB which indexes the table
has), and removed from every order once it has none. Each write is conditional on the status,
the cancel's record and the ship date it was derived from, so a cancel, ship or import racing
it never leaves a stale key (the order as it then is is written anew). Then it gives the list's
version items the change time they lack (no ETag changes) and writes the marker that lets the
indexes ordersByStatus, ordersByDate and ordersByPetDate serve. It changes no order's fields
and no ETag.

Run it after the deploy that brings the code writing the attributes has finished (no older
version of a function still running), and, on a table that still had byStatus, byStatusDate or
byPetDate then, again after the deploy that removes the last of them: docs/deploy.md, "The v2
list's indexes". Running it again writes nothing but the marker.`,
    flags: {},
    positionals: [],
  },
  async (parsed, io) => {
    await withTable(parsed.values, 'orders', async (client, table, target) => {
      await confirmChange(
        target,
        `write the index attributes of the orders in ${table}`,
        parsed.values.yes,
        io,
      );
      const line = progressLine(io.stderr);
      const started = performance.now();
      const result = await reindexOrders(client, table, {
        onProgress: ({ scanned, updated }) =>
          line.update(`${scanned} items read, ${updated} orders written`),
      }).finally(() => line.clear());
      const seconds = (performance.now() - started) / 1000;
      const firstRelease = result.firstReleaseKeys
        ? "the first release's statusKey and dateKey kept (the table has an index keyed by them)"
        : "the first release's statusKey and dateKey removed (the table has no index keyed by them)";
      print(
        io.stdout,
        `Reindexed ${table} on ${target.description} in ${seconds.toFixed(1)} s: ${result.orders} orders read, ${result.updated} written (${result.raced} again after a concurrent change), ${firstRelease}, ${result.versionItemsStamped} version items given a change time; the indexes are marked ready.`,
      );
    });
  },
);

export const ORDER_COMMANDS: readonly Command[] = [
  importOrders,
  show,
  ship,
  exportOrders,
  retag,
  reindex,
];

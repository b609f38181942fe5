/**
 * `orders import`: reads and validates an import file (one bad record: nothing written), looks up
 * which of its orders are stored, lists the conflicts and refuses them unless --replace, writes
 * the rest with a progress bar.
 */
import { readFile } from 'node:fs/promises';
import type { BatchWriteOptions } from '../../lib/dynamodb/batch-write.ts';
import type { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { formatProblem, parseOrders } from '../../lib/orders/order-input.ts';
import { ordersToWrite, planImport, type OrderConflict } from '../../lib/orders/import.ts';
import type { Order, OrderField } from '../../lib/orders/order.ts';
import { OrdersPartlyWritten } from '../../lib/orders/order-store.ts';
import { switchFlag } from '../../lib/config/flags.ts';
import { describeFailure, Failure, print, type Io } from '../common.ts';
import { defineCommand } from '../command.ts';
import { confirmChange } from '../confirm.ts';
import { progressBar } from '../progress.ts';
import { withOrderStore } from './shared.ts';

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

export const importOrders = defineCommand(
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
    await withOrderStore(values, async (store, target, table) => {
      const orders = await readImportFile(path, io);
      const started = performance.now();
      const counts = await importValidated(
        store,
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

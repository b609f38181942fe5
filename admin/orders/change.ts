/**
 * `orders ship`, `orders retag` and `orders reindex`: the commands that change what the table
 * holds other than by import — an order's status, the list's version, the orders' index
 * attributes.
 */
import { DynamoDbListVersion } from '../../lib/dynamodb/list-version.ts';
import { reindexOrders } from '../../lib/dynamodb/reindex.ts';
import { shipOrder } from '../../lib/orders/operations.ts';
import { print } from '../common.ts';
import { defineCommand } from '../command.ts';
import { confirmChange } from '../confirm.ts';
import { progressLine } from '../progress.ts';
import { withTable } from '../target.ts';
import { operatorListVersion, orderIdArgument, withOrderStore } from './shared.ts';

export const ship = defineCommand(
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
  },
);

export const retag = defineCommand(
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

export const reindex = defineCommand(
  {
    name: 'orders reindex',
    summary:
      "write the v2 list's index attributes onto every order that lacks them or holds stale ones, then mark the indexes ready (after the upgrade from 1.0.0, or changes by hand; re-runnable)",
    description: `Reads every order (a parallel Scan, strongly consistent) and writes the attributes the v2
list's indexes are keyed by (s: the status and shard; t: the ship date's instant; u: the shard of
an order not shipped) onto each order that lacks them or holds stale ones: the orders release
1.0.0 stored, or orders changed by hand. Each write is conditional on the status, the cancel's
record and the ship date it was derived from, so a cancel, ship or import racing it never leaves
a stale key (the order as it then is is written anew). Then it writes the marker that lets the
indexes ordersByStatus, ordersByDate, ordersByPetDate and ordersUnshippedByDate serve on a stage
that waits for it (ordersAwaitReindex). It changes no order's fields; each page of the scan marks
the list's version as a write of many orders does (its ETags change, and v2's pages read the
orders again by key for a while after it).

Run it after the deploy that brings the code writing the attributes has finished (no older
version of a function still running): docs/upgrade-from-1.0.0.md. Running it again writes
nothing but the marker.`,
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
        version: new DynamoDbListVersion(client, table, operatorListVersion()),
        onProgress: ({ scanned, updated }) =>
          line.update(`${scanned} items read, ${updated} orders written`),
      }).finally(() => line.clear());
      const seconds = (performance.now() - started) / 1000;
      print(
        io.stdout,
        `Reindexed ${table} on ${target.description} in ${seconds.toFixed(1)} s: ${result.orders} orders read, ${result.updated} written (${result.raced} again after a concurrent change); the indexes are marked ready.`,
      );
    });
  },
);

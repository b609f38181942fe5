/**
 * How many of the list's version items (./tables.ts, LIST_VERSION_SLOTS) a stage uses: the
 * functions mark one of the first `write` at random for each write of orders, and every reader
 * reads the first `read`. A stage's `listVersionItems` setting (infra/config.ts) gives both, and
 * the stack hands them to the functions in LIST_VERSION_ITEMS (`4`, or `4/32`: write 4, read 32).
 *
 * The trade (docs/architecture.md, "Scale notes"): n items bound a stage's cancels at
 * n × 500 a second (each takes 2 WCU of one item, whose limit is 1,000 WCU/s) and cost each
 * conditional hit (304) n read units. Four: 2,000 cancels a second, production's stage throttle,
 * and a 304 of 5 request units with the key's allowance.
 *
 * Why `read` may exceed `write`: while a deploy shifts traffic, the old version and the new one
 * run side by side, and a reader must read every item any running writer may mark, or a write in
 * flight goes unseen and a 304 follows a change. So a stage lowers the count in two deploys (first
 * `write`, reading as many as before; then `read`) and raises it in two (first `read`, then
 * `write`); test/infra checks each step's template against the one before
 * (`readsCoverWrites`). The operator's CLI marks item 0 only, which every stage reads.
 */
import { LIST_VERSION_SLOTS } from './tables.ts';

export const LIST_VERSION_ITEMS_ENV = 'LIST_VERSION_ITEMS';

export interface ListVersionItems {
  /** The first `write` items are the ones a function's write marks (one of them, at random). */
  readonly write: number;
  /** The first `read` items are the ones a reader reads: at least `write`. */
  readonly read: number;
}

/** What a stage uses unless its settings say otherwise (see above). */
export const DEFAULT_LIST_VERSION_ITEMS: ListVersionItems = { write: 4, read: 4 };

/** What the service used before the count was a setting: 32 items, every one marked and read. */
export const LEGACY_LIST_VERSION_ITEMS: ListVersionItems = { write: 32, read: 32 };

/**
 * What the operator's CLI uses: its writes (an import's batches, a ship) mark item 0, which every
 * stage reads whatever its setting; were it to read, it would read every slot.
 */
export const OPERATOR_LIST_VERSION_ITEMS: ListVersionItems = { write: 1, read: LIST_VERSION_SLOTS };

/** The problem with a setting, or undefined when it is one a stage may have. */
export function listVersionItemsProblem(items: ListVersionItems): string | undefined {
  const counts = [items.write, items.read];
  if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > LIST_VERSION_SLOTS)) {
    return `each count must be a whole number from 1 to ${LIST_VERSION_SLOTS}`;
  }
  if (items.read < items.write) return 'read must be at least write (every marked item is read)';
  return undefined;
}

/** The environment's form of a setting: `4`, or `4/32` when more are read than written. */
export function formatListVersionItems(items: ListVersionItems): string {
  return items.read === items.write ? `${items.write}` : `${items.write}/${items.read}`;
}

/** The setting in LIST_VERSION_ITEMS; DEFAULT_LIST_VERSION_ITEMS when unset. Fails fast, naming it. */
export function listVersionItemsFromEnv(env: NodeJS.ProcessEnv = process.env): ListVersionItems {
  const value = env[LIST_VERSION_ITEMS_ENV]?.trim();
  if (value === undefined || value === '') return DEFAULT_LIST_VERSION_ITEMS;
  const match = /^(\d{1,2})(?:\/(\d{1,2}))?$/.exec(value);
  const items = match
    ? { write: Number(match[1]), read: Number(match[2] ?? match[1]) }
    : { write: NaN, read: NaN };
  const problem = listVersionItemsProblem(items);
  if (problem) {
    throw new Error(
      `Environment variable ${LIST_VERSION_ITEMS_ENV} is ${JSON.stringify(value)}: expected ` +
        `<write> or <write>/<read> (${problem})`,
    );
  }
  return items;
}

/**
 * Whether every reader of either template reads every item a writer of either may mark: what a
 * deploy from `before` to `after` needs, since both versions run while traffic shifts.
 */
export function readsCoverWrites(before: ListVersionItems, after: ListVersionItems): boolean {
  return Math.min(before.read, after.read) >= Math.max(before.write, after.write);
}

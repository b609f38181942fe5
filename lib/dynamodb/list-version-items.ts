/**
 * How many of the list's version items (./tables.ts, LIST_VERSION_SLOTS) a stage uses: the
 * functions mark one of the first `write` at random for each write of orders, and every reader
 * reads the first `read`. A stage's `listVersionItems` setting (infra/config.ts) gives both, and
 * the stack hands them to the functions in LIST_VERSION_ITEMS (`4`, or `4/0`: write 4, read none).
 *
 * The trade (docs/architecture.md, "Scale notes"): n items bound a stage's cancels at
 * n × 500 a second (each takes 2 WCU of one item, whose limit is 1,000 WCU/s) and cost each
 * conditional hit (304) n read units. Four: 2,000 cancels a second, production's stage throttle,
 * and a 304 of 5 request units with the key's allowance.
 *
 * While a deploy shifts traffic, the old version and the new one run side by side, and a reader
 * must read every item any running writer may mark, or a write in flight goes unseen and a 304
 * follows a change (`readsCoverWrites`; test/infra checks each step of a documented sequence).
 * A reader that reads none (`read` 0) tags nothing by version: v1's list is answered without an
 * ETag and v2's pages are tagged by their content — what a stage runs while code that marks no
 * version item may still write (release 1.0.0's, during the upgrade from it:
 * docs/upgrade-from-1.0.0.md). To change the count, raise `read` first and lower it last. The
 * operator's CLI marks item 0 only, which every reader reads.
 */
import { LIST_VERSION_SLOTS } from './tables.ts';

export const LIST_VERSION_ITEMS_ENV = 'LIST_VERSION_ITEMS';

export interface ListVersionItems {
  /** The first `write` items are the ones a function's write marks (one of them, at random). */
  readonly write: number;
  /** The first `read` items are the ones a reader reads: at least `write`, or none (0). */
  readonly read: number;
}

/** What a stage uses unless its settings say otherwise (see above). */
export const DEFAULT_LIST_VERSION_ITEMS: ListVersionItems = { write: 4, read: 4 };

/**
 * What the operator's CLI uses: its writes (an import's batches, a ship) mark item 0, which every
 * stage reads whatever its setting; were it to read, it would read every slot.
 */
export const OPERATOR_LIST_VERSION_ITEMS: ListVersionItems = { write: 1, read: LIST_VERSION_SLOTS };

/** The problem with a setting, or undefined when it is one a stage may have. */
export function listVersionItemsProblem(items: ListVersionItems): string | undefined {
  const whole = (n: number, min: number) =>
    Number.isInteger(n) && n >= min && n <= LIST_VERSION_SLOTS;
  if (!whole(items.write, 1) || !whole(items.read, 0)) {
    return `write must be a whole number from 1 to ${LIST_VERSION_SLOTS}, read 0 or from write to ${LIST_VERSION_SLOTS}`;
  }
  if (items.read !== 0 && items.read < items.write) {
    return 'read must be at least write (every marked item is read), or 0 (none read)';
  }
  return undefined;
}

/** Whether a reader with this setting tags by version (it reads the items). */
export function readsVersion(items: ListVersionItems): boolean {
  return items.read > 0;
}

/** The environment's form of a setting: `4`, or `4/0` when the count read differs from the count written. */
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
 * Whether every reader of either template that reads the version reads every item a writer of
 * either may mark: what a deploy from `before` to `after` needs, since both versions run while
 * traffic shifts. Code that writes orders without marking any item (release 1.0.0: `{ write: 0,
 * read: 0 }`) is seen by no reader: beside it, no reader may read the version.
 */
export function readsCoverWrites(before: ListVersionItems, after: ListVersionItems): boolean {
  const both = [before, after];
  const reads = both.filter((items) => items.read > 0);
  if (reads.length === 0) return true;
  if (both.some((items) => items.write === 0)) return false;
  const most = Math.max(before.write, after.write);
  return reads.every((items) => items.read >= most);
}

/**
 * The list's version on DynamoDB: what the ETag of GET /store/orders is made of, and how every
 * write of orders changes it, without a hot item and without a transaction.
 *
 * The version is a few small items in the orders table (./tables.ts; how many a stage uses:
 * ./list-version-items.ts). A write of orders (a cancel, a ship, one BatchWriteItem request of an
 * import) goes mark → write → release: the mark puts an in-flight entry `w_<random>` (with
 * `#<id>` when the write is of one order) on one version item, valued at its lease (a time by
 * which the write has surely landed or never will); the release removes it and, when the write
 * changed something (or its outcome is unknown), gives the item's nonce `n` a new random value,
 * records when in `c`, and notes which order changed (`r_<id>`, its time; or `o`, the time, when
 * the write was of many orders or the item already notes RECENT_WRITES_CAP of them), dropping
 * the notes older than INDEX_SETTLE_MS that its mark saw. A reader reads every item in one
 * strongly consistent BatchGetItem: no tag while a lease runs, else a hash of everything the
 * items hold but `c` (which changes only with the nonce, or from absent to present: see
 * stampChangeTimes); the time of the last change; and which orders were written less than
 * INDEX_SETTLE_MS ago, or are being written (`recentWrites`): the ones whose entries in the
 * eventually consistent indexes may lag, which the v2 list's pages read again by key
 * (lib/orders/page-tag.ts).
 *
 * The invariant: a tag read before a list's first page covers no write that the list lacks, so
 * no 304 follows a change. The proof, its one assumption, what a tag does not promise, and why
 * not a transaction: docs/architecture.md, "The list's version".
 */
import { randomBytes, randomInt, createHash } from 'node:crypto';
import {
  BatchGetCommand,
  NumberValue,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { TIME_BUDGETS } from '../config/budgets.ts';
import type { ListVersion, RecentWrites } from '../orders/order-store.ts';
import { INDEX_SETTLE_MS } from '../orders/page-tag.ts';
import { numberText } from './attributes.ts';
import { isConditionFailure, send } from './errors.ts';
import { DEFAULT_LIST_VERSION_ITEMS, type ListVersionItems } from './list-version-items.ts';
import { LIST_VERSION_SLOTS, listVersionKey } from './tables.ts';

/** How failures of the version items are named in logs. */
const DEPENDENCY = 'orders table (list version)';

/** The prefix of an in-flight entry's attribute name; `#` then the order's id, for one order. */
const ENTRY_PREFIX = 'w_';
const ENTRY_ID_SEPARATOR = '#';
/** The prefix of a note of a recent write of one order (`r_<id>`: when its release came). */
const RECENT_PREFIX = 'r_';
/** When a write of many orders, or one past the cap, was released: every order may lag. */
const OVERFLOW = 'o';
/**
 * The most notes of recent writes one version item keeps: past them a write notes `o` instead,
 * and the pages of the next INDEX_SETTLE_MS read each of their orders again by key. Twelve notes
 * of about 30 bytes keep an item under 1 KB (a write of it costs 1 WCU), and at one write a
 * second a stage's four items hold about 2.5 each.
 */
export const RECENT_WRITES_CAP = 12;

/** The nonce, and when it last changed (ms since the epoch). */
const NONCE = 'n';
const CHANGED_AT = 'c';

/**
 * What changes every tag at once: the version of the list's representation (bump it when the
 * list's JSON changes for the same stored orders, so that no client keeps an old body).
 */
const REPRESENTATION = 'orders-list-1';

/**
 * The release's own time when the write used up the request's budget (it stalled, or was
 * retried until its deadline): within what is left of the answer's budget (TIME_BUDGETS).
 */
const RELEASE_GRACE_MS = (TIME_BUDGETS.answerMs - TIME_BUDGETS.requestMs) / 2;

/** How long a function's write may still land: its request budget, then the margin. */
export const FUNCTION_WRITE_LEASE_MS = TIME_BUDGETS.requestMs + TIME_BUDGETS.lateWriteMarginMs;

export interface DynamoDbListVersionOptions {
  /** How long after its mark a write is assumed to have landed, if ever (FUNCTION_WRITE_LEASE_MS). */
  readonly leaseMs?: number;
  /** The items written and read (the stage's setting); DEFAULT_LIST_VERSION_ITEMS by default. */
  readonly items?: ListVersionItems;
  readonly now?: () => number;
  /** Told when a release failed: the write stands, the list has no tag until the lease ends. */
  readonly onReleaseFailure?: (error: unknown) => void;
  /** The key of version item `index`: the list's (listVersionKey) unless another is given. */
  readonly versionKey?: (index: number) => VersionKey;
}

type Item = Record<string, unknown>;
type VersionKey = ReturnType<typeof listVersionKey>;

/** A version item's new nonce: every tag that covered it changes. */
const nonce = (): string => randomBytes(12).toString('base64url');

/** A stored value as text that says what it is: numbers by their digits, never through a JS number. */
function valueText(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      if (v instanceof NumberValue) return `N:${v.toString()}`;
      if (typeof v === 'bigint') return `N:${v.toString()}`;
      if (v instanceof Set) return [...(v as Set<unknown>)];
      return v;
    }) ?? 'undefined'
  );
}

/**
 * Everything an item holds but its key, in one canonical line. An item that holds nothing else
 * (its first mark was released without a change) reads as an absent one: the same version.
 */
function canonical(item: Item | undefined): string {
  const names = Object.keys(item ?? {}).filter(
    (name) => name !== 'shard' && name !== 'id' && name !== CHANGED_AT,
  );
  if (!item || names.length === 0) return '-';
  return names
    .sort()
    .map((name) => `${JSON.stringify(name)}=${valueText(item[name])}`)
    .join(',');
}

/** Whether an item holds an in-flight entry whose lease has not ended at `now`. */
function hasRunningLease(item: Item | undefined, now: number): boolean {
  if (!item) return false;
  return Object.entries(item).some(([name, value]) => {
    if (!name.startsWith(ENTRY_PREFIX)) return false;
    const until = Number(numberText(value));
    // An entry whose lease cannot be read counts as ended (else it would hold the tag forever).
    return Number.isFinite(until) && until > now;
  });
}

/**
 * When the writes an item covers changed the list, at the latest: its `c`, or the lease of an
 * entry whose release never came (its write landed by then, if ever); 0 for an item no write
 * changed; undefined when unknown (a nonce without `c`, or an unreadable lease).
 */
function lastChangeOf(item: Item | undefined): number | undefined {
  if (!item) return 0;
  let last = 0;
  for (const [name, value] of Object.entries(item)) {
    if (name !== CHANGED_AT && !name.startsWith(ENTRY_PREFIX)) continue;
    const at = Number(numberText(value));
    if (!Number.isFinite(at)) return undefined;
    last = Math.max(last, at);
  }
  return item[NONCE] !== undefined && item[CHANGED_AT] === undefined ? undefined : last;
}

/** The order a note or an entry names: its id's text after the prefix, if any. */
function namedOrder(name: string): string | undefined {
  if (name.startsWith(RECENT_PREFIX)) return name.slice(RECENT_PREFIX.length) || undefined;
  const separator = name.indexOf(ENTRY_ID_SEPARATOR);
  return separator < 0 ? undefined : name.slice(separator + 1) || undefined;
}

/**
 * The orders written less than INDEX_SETTLE_MS before `now`, or being written: every note and
 * entry that names one; `all` when some write of that time names none (a write of many orders, a
 * note past the cap, an entry of code that did not name its order) or a time cannot be read.
 */
function recentWritesOf(items: readonly (Item | undefined)[], now: number): RecentWrites {
  const since = now - INDEX_SETTLE_MS;
  const ids = new Set<string>();
  for (const item of items) {
    for (const [name, value] of Object.entries(item ?? {})) {
      const noted =
        name.startsWith(ENTRY_PREFIX) || name.startsWith(RECENT_PREFIX) || name === OVERFLOW;
      if (!noted) continue;
      // An entry's value is its lease: a write in flight, or one that landed by then, if ever.
      const at = Number(numberText(value));
      if (Number.isFinite(at) && at <= since) continue;
      const id = name === OVERFLOW || !Number.isFinite(at) ? undefined : namedOrder(name);
      if (id === undefined) return 'all';
      ids.add(id);
    }
  }
  return ids;
}

/** The tag of the items read: a hash of what they hold, or undefined while a write is in flight. */
export function listVersionOf(items: readonly (Item | undefined)[], now: number): ListVersion {
  let lastChangeAt: number | undefined = 0;
  for (const item of items) {
    const changed = lastChangeOf(item);
    lastChangeAt =
      lastChangeAt === undefined || changed === undefined
        ? undefined
        : Math.max(lastChangeAt, changed);
  }
  const recentWrites = lastChangeAt === undefined ? 'all' : recentWritesOf(items, now);
  const when = lastChangeAt === undefined ? {} : { lastChangeAt };
  if (items.some((item) => hasRunningLease(item, now))) {
    return { tag: undefined, recentWrites };
  }
  const hash = createHash('sha256').update(REPRESENTATION);
  for (const item of items) hash.update(`\n${canonical(item)}`);
  // 132 bits, base64url: every character is an etagc.
  const tag = hash.digest('base64url').slice(0, 22);
  return { tag, ...when, recentWrites };
}

export class DynamoDbListVersion {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly leaseMs: number;
  private readonly items: ListVersionItems;
  private readonly now: () => number;
  private readonly onReleaseFailure: (error: unknown) => void;
  private readonly keys: readonly VersionKey[];

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: DynamoDbListVersionOptions = {},
  ) {
    this.client = client;
    this.tableName = tableName;
    this.leaseMs = options.leaseMs ?? FUNCTION_WRITE_LEASE_MS;
    this.items = options.items ?? DEFAULT_LIST_VERSION_ITEMS;
    this.now = options.now ?? Date.now;
    this.onReleaseFailure = options.onReleaseFailure ?? (() => undefined);
    const keyOf = options.versionKey ?? listVersionKey;
    // Every slot a stage may use (LIST_VERSION_SLOTS): a retag writes them all.
    this.keys = Array.from({ length: LIST_VERSION_SLOTS }, (_, index) => keyOf(index));
  }

  /** The index of a version item read back, by its key. */
  private indexOf(item: Item): number {
    const [shard, id] = [numberText(item.shard), numberText(item.id)];
    return this.keys.findIndex((key) => String(key.shard) === shard && String(key.id) === id);
  }

  /** The version now: the items read (`items.read`), strongly consistent (one BatchGetItem). */
  async read(signal?: AbortSignal): Promise<ListVersion> {
    const byIndex = new Map<number, Item>();
    let pending: VersionKey[] = this.keys.slice(0, this.items.read);
    while (pending.length > 0) {
      const keys = pending;
      const result = await send(
        DEPENDENCY,
        (abortSignal) =>
          this.client.send(
            new BatchGetCommand({
              RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } },
            }),
            { abortSignal },
          ),
        signal,
      );
      for (const item of result.Responses?.[this.tableName] ?? []) {
        byIndex.set(this.indexOf(item), item);
      }
      pending = (result.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof pending;
    }
    return listVersionOf(
      Array.from({ length: this.items.read }, (_, index) => byIndex.get(index)),
      this.now(),
    );
  }

  /**
   * Runs one write of orders between a mark and a release of a version item (see above), one of
   * the first `items.write` at random. A failed mark fails the write before it is sent. `changed`
   * says from the write's result whether it changed the list; a write that failed counts as
   * changed (it may have landed). A failed release is reported, not thrown: the write stands.
   * `orderId`: the one order the write is of, noted for the pages (none: a write of many).
   */
  async around<T>(
    write: () => Promise<T>,
    changed: (result: T) => boolean,
    options: { readonly signal?: AbortSignal; readonly orderId?: bigint } = {},
  ): Promise<T> {
    const key = this.keys[randomInt(this.items.write)]!;
    const id = options.orderId === undefined ? '' : `${ENTRY_ID_SEPARATOR}${options.orderId}`;
    const entry = `${ENTRY_PREFIX}${randomBytes(9).toString('base64url')}${id}`;
    const until = { ':until': this.now() + this.leaseMs };
    const marked = await this.update(
      key,
      'SET #e = :until',
      { '#e': entry },
      until,
      options.signal,
    );
    const release = (changedList: boolean) =>
      this.release(
        key,
        entry,
        changedList ? notesOf(marked, options.orderId, this.now()) : undefined,
        options.signal,
      );
    let result: T;
    try {
      result = await write();
    } catch (error) {
      await release(true);
      throw error;
    }
    await release(changed(result));
    return result;
  }

  /**
   * Removes a write's entry and, when the list changed (`notes`), gives the item a new nonce and
   * the notes of its recent writes. A write that used up the request's budget still gets its
   * release; a failed release is reported.
   */
  private async release(
    key: VersionKey,
    entry: string,
    notes: ReleaseNotes | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const names: Record<string, string> = { '#e': entry };
    const values: Record<string, unknown> = {};
    let expression = 'REMOVE #e';
    if (notes) {
      notes.drop.forEach((name, i) => {
        names[`#d${i}`] = name;
        expression += `, #d${i}`;
      });
      Object.assign(names, { '#n': NONCE, '#c': CHANGED_AT, '#r': notes.note });
      Object.assign(values, { ':n': nonce(), ':c': notes.at });
      expression += ' SET #n = :n, #c = :c, #r = :c';
    }
    try {
      await this.update(
        key,
        expression,
        names,
        notes ? values : undefined,
        signal?.aborted ? AbortSignal.timeout(RELEASE_GRACE_MS) : signal,
      );
    } catch (error) {
      this.onReleaseFailure(error);
    }
  }

  /**
   * A new nonce in every version item, of every stage's setting (LIST_VERSION_SLOTS): every tag
   * changes (after writes made by hand).
   */
  async retag(signal?: AbortSignal): Promise<void> {
    await Promise.all(
      this.keys.map((key) =>
        this.update(
          key,
          'SET #n = :n, #c = :c',
          { '#n': NONCE, '#c': CHANGED_AT },
          { ':n': nonce(), ':c': this.now() },
          signal,
        ),
      ),
    );
  }

  /**
   * Records now as the change time of every version item that has a nonce but no change time
   * (its changes were made by code that did not record them), without changing any tag (`c` is
   * not hashed). Only true once no such code writes any more: the reindex command runs it, after
   * the deploy that brings this code has finished. Returns how many items it stamped.
   */
  async stampChangeTimes(signal?: AbortSignal): Promise<number> {
    const stamped = await Promise.all(
      this.keys.map((key) =>
        send(
          DEPENDENCY,
          (abortSignal) =>
            this.client.send(
              new UpdateCommand({
                TableName: this.tableName,
                Key: key,
                UpdateExpression: 'SET #c = :c',
                ConditionExpression: 'attribute_exists(#n) AND attribute_not_exists(#c)',
                ExpressionAttributeNames: { '#n': NONCE, '#c': CHANGED_AT },
                ExpressionAttributeValues: { ':c': this.now() },
              }),
              { abortSignal },
            ),
          signal,
        ).then(
          () => 1,
          (error: unknown) => {
            if (isConditionFailure(error)) return 0;
            throw error;
          },
        ),
      ),
    );
    return stamped.reduce((a, b) => a + b, 0);
  }

  /** One UpdateItem of a version item; what the item holds after it. */
  private async update(
    key: VersionKey,
    expression: string,
    names: Record<string, string>,
    values: Record<string, unknown> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Item | undefined> {
    const result = await send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: expression,
            ExpressionAttributeNames: names,
            ...(values ? { ExpressionAttributeValues: values } : {}),
            ReturnValues: 'ALL_NEW',
          }),
          { abortSignal },
        ),
      signal,
    );
    return result.Attributes;
  }
}

/** What a release that changed the list writes besides its nonce: its note, and notes to drop. */
interface ReleaseNotes {
  /** `r_<id>`, or `o` (many orders, or the cap reached). */
  readonly note: string;
  /** The release's time: `c` and the note's value. */
  readonly at: number;
  /** The notes older than INDEX_SETTLE_MS that the mark saw on the item. */
  readonly drop: readonly string[];
}

/**
 * The notes of a release at `now` that changed the list, from what its mark saw of the item
 * (`marked`): its own (`r_<id>` for one order, else `o`), and the stale ones to remove. Writes
 * released at once may each add a note past the cap: the cap bounds the item's size, give or take
 * what a moment's concurrent writes add.
 */
function notesOf(marked: Item | undefined, orderId: bigint | undefined, now: number): ReleaseNotes {
  const since = now - INDEX_SETTLE_MS;
  const drop: string[] = [];
  let fresh = 0;
  for (const [name, value] of Object.entries(marked ?? {})) {
    if (!name.startsWith(RECENT_PREFIX) && name !== OVERFLOW) continue;
    const at = Number(numberText(value));
    if (Number.isFinite(at) && at <= since) drop.push(name);
    else if (name !== OVERFLOW) fresh++;
  }
  const own = orderId === undefined ? undefined : `${RECENT_PREFIX}${orderId}`;
  const note = own !== undefined && fresh < RECENT_WRITES_CAP ? own : OVERFLOW;
  return { note, at: now, drop: drop.filter((name) => name !== note) };
}

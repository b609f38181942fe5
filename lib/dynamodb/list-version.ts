/**
 * The list's version on DynamoDB: what the ETag of GET /store/orders is made of, and how every
 * write of orders changes it, without a hot item and without a transaction. This file reads and
 * writes the version items; what one holds and what a reader makes of them is
 * ./list-version-item.ts.
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
 * items hold but `c` (which changes only with the nonce); the time of the last change; and which orders were written less than
 * INDEX_SETTLE_MS ago, or are being written (`recentWrites`): the ones whose entries in the
 * eventually consistent indexes may lag, which the v2 list's pages read again by key
 * (lib/orders/page-tag.ts).
 *
 * The invariant: a tag read before a list's first page covers no write that the list lacks, so
 * no 304 follows a change. The proof, its one assumption, what a tag does not promise, and why
 * not a transaction: docs/architecture.md, "The list's version".
 */
import { randomBytes, randomInt } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TIME_BUDGETS } from '../config/budgets.ts';
import { getInBatches } from './batch-write.ts';
import type { ListVersion } from '../orders/order-store.ts';
import { numberText } from './attributes.ts';
import { send } from './errors.ts';
import {
  CHANGED_AT,
  ENTRY_ID_SEPARATOR,
  ENTRY_PREFIX,
  listVersionOf,
  NONCE,
  notesOf,
  type ReleaseNotes,
} from './list-version-item.ts';
import {
  DEFAULT_LIST_VERSION_ITEMS,
  readsVersion,
  type ListVersionItems,
} from './list-version-items.ts';
import { LIST_VERSION_SLOTS, listVersionKey } from './tables.ts';

/** How failures of the version items are named in logs. */
const DEPENDENCY = 'orders table (list version)';

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
  /**
   * How far this writer's clock may be from AWS's, either way (0 for the functions, whose clock
   * Lambda keeps; the operator's CLI: SigV4's tolerance). Readers compare its change times (`c`,
   * the notes) with their own clock: it stamps them that far ahead, and drops another writer's
   * notes only once they are old by the earliest its clock may be (notesOf), so that no change is
   * taken for older than it is, and no order for settled in the indexes too soon.
   */
  readonly clockSkewMs?: number;
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

/** What a reader that reads no version item knows: nothing (no tag; any order may lag). */
const UNKNOWN_VERSION: ListVersion = { tag: undefined, recentWrites: 'all' };

/** A version item's new nonce: every tag that covered it changes. */
const nonce = (): string => randomBytes(12).toString('base64url');

/**
 * The list's version items (see above): `read` before a list, `around` a write of orders,
 * `retag` after writes made by hand.
 *
 * @example
 * ```typescript
 * import { createDocumentClient } from './client.ts';
 * import { DynamoDbListVersion } from './list-version.ts';
 *
 * const version = new DynamoDbListVersion(createDocumentClient(), 'store-orders-dev-orders');
 * const signal = AbortSignal.timeout(2_000);
 * const before = await version.read(signal); // before.tag: the list's ETag (none while a write runs)
 * const cancelled = await version.around(
 *   async () => ({ changed: true }), // the write of one order, conditional
 *   (result) => result.changed, // whether it changed the list (a failed write counts as changed)
 *   { signal, orderId: 9n },
 * );
 * console.log(before.tag, cancelled, (await version.read(signal)).tag); // another tag
 * ```
 */
export class DynamoDbListVersion {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly leaseMs: number;
  private readonly clockSkewMs: number;
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
    this.clockSkewMs = options.clockSkewMs ?? 0;
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

  /**
   * The version now: the items read (`items.read`), strongly consistent (one BatchGetItem). A
   * stage that reads none knows no version: no tag, and every order may have been written just now.
   */
  async read(signal?: AbortSignal): Promise<ListVersion> {
    if (!readsVersion(this.items)) return UNKNOWN_VERSION;
    const byIndex = new Map<number, Item>();
    const found = await getInBatches(
      this.client,
      this.tableName,
      this.keys.slice(0, this.items.read),
      { dependency: DEPENDENCY, concurrency: 1, ...(signal ? { signal } : {}) },
    );
    for (const item of found) byIndex.set(this.indexOf(item), item);
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
        changedList ? notesOf(marked, options.orderId, this.now(), this.clockSkewMs) : undefined,
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
          { ':n': nonce(), ':c': this.changeTime() },
          signal,
        ),
      ),
    );
  }

  /** The time a change is stamped with: this writer's clock, ahead by how far it may be off. */
  private changeTime(): number {
    return this.now() + this.clockSkewMs;
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

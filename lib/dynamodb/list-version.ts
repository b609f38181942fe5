/**
 * The list's version on DynamoDB: what the ETag of GET /store/orders is made of, and how every
 * write of orders changes it, without a hot item and without a transaction.
 *
 * The version is LIST_VERSION_ITEMS small items in the orders table (tables.ts). A write of
 * orders (a cancel, a ship, one BatchWriteItem request of an import) goes mark → write → release:
 * the mark puts an in-flight entry `w_<random>` on one version item chosen at random, valued at
 * its lease (a time by which the write has surely landed or never will); the release removes it
 * and, when the write changed something (or its outcome is unknown), gives the item's nonce `n`
 * a new random value and records when in `c`. A reader reads every item in one strongly
 * consistent BatchGetItem: no tag while a lease runs, else a hash of everything the items hold
 * but `c` (which changes only with the nonce, or from absent to present: see stampChangeTimes);
 * and the time of the last change, for the v2 list's pages read from eventually consistent
 * indexes (lib/orders/page-tag.ts).
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
import type { ListVersion } from '../orders/order-store.ts';
import { numberText } from './attributes.ts';
import { isConditionFailure, send } from './errors.ts';
import { LIST_VERSION_ITEMS, listVersionKey } from './tables.ts';

/** How failures of the version items are named in logs. */
const DEPENDENCY = 'orders table (list version)';

/** The prefix of an in-flight entry's attribute name. */
const ENTRY_PREFIX = 'w_';

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

/** The tag of the items read: a hash of what they hold, or undefined while a write is in flight. */
export function listVersionOf(items: readonly (Item | undefined)[], now: number): ListVersion {
  if (items.some((item) => hasRunningLease(item, now))) return { tag: undefined };
  const hash = createHash('sha256').update(REPRESENTATION);
  let lastChangeAt: number | undefined = 0;
  for (const item of items) {
    hash.update(`\n${canonical(item)}`);
    const changed = lastChangeOf(item);
    lastChangeAt =
      lastChangeAt === undefined || changed === undefined
        ? undefined
        : Math.max(lastChangeAt, changed);
  }
  // 132 bits, base64url: every character is an etagc.
  const tag = hash.digest('base64url').slice(0, 22);
  return lastChangeAt === undefined ? { tag } : { tag, lastChangeAt };
}

export class DynamoDbListVersion {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly leaseMs: number;
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
    this.now = options.now ?? Date.now;
    this.onReleaseFailure = options.onReleaseFailure ?? (() => undefined);
    const keyOf = options.versionKey ?? listVersionKey;
    this.keys = Array.from({ length: LIST_VERSION_ITEMS }, (_, index) => keyOf(index));
  }

  /** The index of a version item read back, by its key. */
  private indexOf(item: Item): number {
    const [shard, id] = [numberText(item.shard), numberText(item.id)];
    return this.keys.findIndex((key) => String(key.shard) === shard && String(key.id) === id);
  }

  /** The version now: every version item, read strongly consistent (one BatchGetItem). */
  async read(signal?: AbortSignal): Promise<ListVersion> {
    const byIndex = new Map<number, Item>();
    let pending: VersionKey[] = [...this.keys];
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
      Array.from({ length: LIST_VERSION_ITEMS }, (_, index) => byIndex.get(index)),
      this.now(),
    );
  }

  /**
   * Runs one write of orders between a mark and a release of a version item (see above). A
   * failed mark fails the write before it is sent. `changed` says from the write's result whether
   * it changed the list; a write that failed counts as changed (it may have landed). A failed
   * release is reported, not thrown: the write stands.
   */
  async around<T>(
    write: () => Promise<T>,
    changed: (result: T) => boolean,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<T> {
    const key = this.keys[randomInt(LIST_VERSION_ITEMS)]!;
    const entry = `${ENTRY_PREFIX}${randomBytes(9).toString('base64url')}`;
    const until = { ':until': this.now() + this.leaseMs };
    await this.update(key, 'SET #e = :until', { '#e': entry }, until, options.signal);
    const release = (changedList: boolean) => this.release(key, entry, changedList, options.signal);
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
   * Removes a write's entry and, when the list changed, gives the item a new nonce. A write that
   * used up the request's budget still gets its release; a failed release is reported.
   */
  private async release(
    key: VersionKey,
    entry: string,
    changed: boolean,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const names: Record<string, string> = changed
      ? { '#e': entry, '#n': NONCE, '#c': CHANGED_AT }
      : { '#e': entry };
    try {
      await this.update(
        key,
        changed ? 'REMOVE #e SET #n = :n, #c = :c' : 'REMOVE #e',
        names,
        changed ? { ':n': nonce(), ':c': this.now() } : undefined,
        signal?.aborted ? AbortSignal.timeout(RELEASE_GRACE_MS) : signal,
      );
    } catch (error) {
      this.onReleaseFailure(error);
    }
  }

  /** A new nonce in every version item: every tag changes (after writes made by hand). */
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

  private async update(
    key: VersionKey,
    expression: string,
    names: Record<string, string>,
    values: Record<string, unknown> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    await send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: expression,
            ExpressionAttributeNames: names,
            ...(values ? { ExpressionAttributeValues: values } : {}),
          }),
          { abortSignal },
        ),
      signal,
    );
  }
}

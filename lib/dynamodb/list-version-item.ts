/**
 * What one of the list's version items holds, and what a reader makes of them (./list-version.ts
 * reads and writes them): the nonce `n` and its change time `c`; an in-flight entry
 * `w_<random>[#<id>]` per write between its mark and its release, valued at its lease; the notes
 * of the orders its releases changed in the last INDEX_SETTLE_MS (`r_<id>`, or `o` for a write of
 * many). From the items read: the tag (a hash of everything but `c`; none while a lease runs),
 * when the list last changed, and which orders were written too recently for an eventually
 * consistent index to show (`recentWrites`). And what a release writes of the notes
 * (`notesOf`). No I/O here.
 */
import { createHash } from 'node:crypto';
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import type { ListVersion, RecentWrites } from '../orders/order-store.ts';
import { INDEX_SETTLE_MS } from '../orders/page-tag.ts';
import { numberText } from './attributes.ts';

/** The prefix of an in-flight entry's attribute name; `#` then the order's id, for one order. */
export const ENTRY_PREFIX = 'w_';
export const ENTRY_ID_SEPARATOR = '#';
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
export const NONCE = 'n';
export const CHANGED_AT = 'c';

/**
 * What changes every tag at once: the version of the list's representation (bump it when the
 * list's JSON changes for the same stored orders, so that no client keeps an old body).
 */
const REPRESENTATION = 'orders-list-1';

type Item = Record<string, unknown>;

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

/** What a release that changed the list writes besides its nonce: its note, and notes to drop. */
export interface ReleaseNotes {
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
 * what a moment's concurrent writes add. A writer whose clock may be `skewMs` off (either way)
 * stamps its note that far ahead and drops only the notes older than INDEX_SETTLE_MS by the
 * earliest its clock may be: neither its own note nor another's is taken for older than it is.
 */
export function notesOf(
  marked: Item | undefined,
  orderId: bigint | undefined,
  now: number,
  skewMs = 0,
): ReleaseNotes {
  const since = now - skewMs - INDEX_SETTLE_MS;
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
  return { note, at: now + skewMs, drop: drop.filter((name) => name !== note) };
}

/**
 * The entity tags of one page of the v2 list.
 *
 * **By version** (`pageEntityTag`): a hash of the list's version (the version items of
 * lib/dynamodb/list-version.ts, read strongly consistent before the page, as v1's list does), the
 * filters, the page's start and its size. Same version, same request: the same page. So a
 * conditional request needs only the version read: If-None-Match with the current tag is
 * answered 304 without reading an order. What makes that true, and when it is not:
 * - A page read strongly consistent (the table) after the version read shows every write the
 *   version covers: the same guarantee as v1's list (docs/architecture.md, "The list's version").
 * - A page read from an index may not: index reads are eventually consistent, so a write that
 *   the version already covers can be missing from the index for a moment. Such a page is tagged
 *   by version only when the store is settled: no write in flight, and the version's last change
 *   older than INDEX_SETTLE_MS (`isSettled`). **Assumed: an index reflects a write within
 *   INDEX_SETTLE_MS of its acknowledgement.** AWS documents no bound: its knowledge center says
 *   writes "propagate to a GSI within 1 second" and that a longer lag can happen ("If you wait
 *   several seconds and the GSI still doesn't show your updates…", re:Post,
 *   dynamodb-missing-table-items-gsi); 10 s is ten times that. The version's change time is
 *   written by the release of each write (its clock: Lambda's, NTP-synchronized) and compared
 *   with this reader's clock; a version whose change time is unknown (a nonce item with no `c`)
 *   is not settled.
 *
 * **By content** (`pageContentTag`): a hash of the page's body, for a page read from an index
 * while the store is not settled. Its 304 needs the page read again (the body is what it
 * compares), and is never wrong: it is answered only when the page now is the page the client
 * has.
 */
import { createHash } from 'node:crypto';
import { canonicalFilterV1, type OrderFilter, type PagePosition } from './order-filter.ts';
import type { PagePlan } from './order-pages.ts';
import type { ListVersion } from './order-store.ts';

/** How long after the list's last change an index-served page may be tagged (see above). */
export const INDEX_SETTLE_MS = 10_000;

/** Whether the store is settled at `now`: no write in flight, the last change known and old. */
export function isSettled(version: ListVersion, now: number): boolean {
  const changed = version.lastChangeAt;
  return version.tag !== undefined && changed !== undefined && now - changed >= INDEX_SETTLE_MS;
}

/**
 * What changes every page tag at once: bump it when a page's JSON changes for the same stored
 * orders, so that no client keeps an old body.
 */
const REPRESENTATION = 'orders-page-2';

export interface PageTagInput {
  /** The list's version, read before the page (strongly consistent). */
  readonly version: ListVersion;
  readonly filter: OrderFilter;
  /** Where the page starts (the request's token); absent on a first page. */
  readonly start?: PagePosition;
  /** The page size served. */
  readonly pageSize: number;
  readonly plan: Pick<PagePlan, 'consistent'>;
  /** Now, as the reader's clock reads it (ms since the epoch). */
  readonly now: number;
}

/** What changes every content tag at once (a tag of another page's body is never this one's). */
const CONTENT_REPRESENTATION = 'orders-page-content-1';

/**
 * The tag of a page's body (22 base64url characters, weak as the caller sends it): the same body,
 * the same tag, whatever the store's version.
 */
export function pageContentTag(body: string): string {
  return createHash('sha256')
    .update(`${CONTENT_REPRESENTATION}\n${body}`)
    .digest('base64url')
    .slice(0, 22);
}

/**
 * The page's opaque tag (22 base64url characters: every one an etagc; the caller sends it weak,
 * `W/"…"`), or undefined when the page cannot have one now: a write is in flight, or the page is
 * read from an index and the list changed less than INDEX_SETTLE_MS ago (or when, is unknown).
 */
export function pageEntityTag(input: PageTagInput): string | undefined {
  const { version } = input;
  if (version.tag === undefined) return undefined;
  if (!input.plan.consistent && !isSettled(version, input.now)) return undefined;
  const start = input.start
    ? `${input.start.instant === undefined ? '' : `${input.start.instant}:`}${input.start.id}`
    : '-';
  return createHash('sha256')
    .update(
      [REPRESENTATION, version.tag, canonicalFilterV1(input.filter), start, input.pageSize].join(
        '\n',
      ),
    )
    .digest('base64url')
    .slice(0, 22);
}

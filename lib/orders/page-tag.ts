/**
 * The entity tags of one page of the v2 list, and the one bound the page reader assumes of an
 * index (INDEX_SETTLE_MS).
 *
 * **By version** (`pageEntityTag`), a page read from the table: a hash of the list's version (the
 * version items of lib/dynamodb/list-version.ts, read strongly consistent before the page, as
 * v1's list does), the filters, the page's start and its size. Same version, same request: the
 * same page, because the page is read strongly consistent after the version: the guarantee of
 * v1's list (docs/architecture.md, "The list's version"). A conditional request needs only the
 * version read: If-None-Match with the current tag is answered 304 without reading an order.
 *
 * **By content** (`pageContentTag`), a page read from an index: a hash of the page's body. An
 * index is eventually consistent, and AWS documents no bound on how far it may trail its table
 * (the developer guide: "within a fraction of a second, under normal conditions"; "in some
 * unlikely failure scenarios, longer propagation delays might occur"). Were such a page tagged by
 * version, a page read while the index lagged would keep its 304s after the index caught up, for
 * as long as nothing else was written: the same tag for two bodies. So its 304 reads the page
 * again (the same reads as a 200) and is answered only when the page now is the page the client
 * holds: never wrong, whatever the lag.
 *
 * What a page shows while an index lags is the page reader's business: it reads again by key the
 * orders written less than INDEX_SETTLE_MS ago (the version's notes), so a page is exact as long
 * as an index reflects a write within INDEX_SETTLE_MS; past it, a page can show an order as it
 * was before a write or miss it (docs/architecture.md, "Exactness"), never with a tag that
 * outlives the lag.
 */
import { createHash } from 'node:crypto';
import { canonicalFilterText, type OrderFilter, type PagePosition } from './order-filter.ts';
import type { PagePlan } from './order-page-reader.ts';
import type { ListVersion } from './order-store.ts';

/**
 * How long after its acknowledgement a write is assumed to be in every index: the orders written
 * more recently are read again by key by every page that lists them (see above). Ten times the
 * second AWS's knowledge center gives ("within 1 second"); no bound is documented.
 */
export const INDEX_SETTLE_MS = 10_000;

/**
 * Whether the store is settled at `now`: no write in flight, the last change known and older
 * than INDEX_SETTLE_MS (then a page reads again by key, eventually consistent, only what an index
 * may hold as it no longer is: lib/dynamodb/page-check.ts).
 */
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
 * The page's opaque tag by version (22 base64url characters: every one an etagc; the caller sends
 * it weak, `W/"…"`), or undefined when the page has none: it is read from an index (its tag is
 * its content's), or a write is in flight.
 */
export function pageEntityTag(input: PageTagInput): string | undefined {
  const { version } = input;
  if (version.tag === undefined || !input.plan.consistent) return undefined;
  const start = input.start
    ? `${input.start.instant === undefined ? '' : `${input.start.instant}:`}${input.start.id}`
    : '-';
  return createHash('sha256')
    .update(
      [REPRESENTATION, version.tag, canonicalFilterText(input.filter), start, input.pageSize].join(
        '\n',
      ),
    )
    .digest('base64url')
    .slice(0, 22);
}

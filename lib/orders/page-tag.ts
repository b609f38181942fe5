/**
 * The entity tag of one page of the v2 list: a hash of the list's version (the version items of
 * lib/dynamodb/list-version.ts, read strongly consistent before the page, as v1's list does), the
 * filters, the page's start and its size. Same version, same request: the same page, wherever it
 * is read (where a page ends, a page served short by its read budget included, follows from the
 * store and the request alone: lib/dynamodb/order-pages.ts). So a conditional request needs only
 * the version read: If-None-Match with the current tag is answered 304 without reading an order.
 *
 * What makes that true, and when it is not:
 * - A page read strongly consistent (the table) after the version read shows every write the
 *   version covers: the same guarantee as v1's list (docs/architecture.md, "The list's version").
 * - A page read from an index may not: index reads are eventually consistent, so a write that
 *   the version already covers can be missing from the index for a moment. Such a page gets a
 *   tag only when the version's last change is older than INDEX_SETTLE_MS. **Assumed: an index
 *   reflects a write within INDEX_SETTLE_MS of its acknowledgement.** AWS documents no bound:
 *   its knowledge center says writes "propagate to a GSI within 1 second" and that a longer lag
 *   can happen ("If you wait several seconds and the GSI still doesn't show your updates…",
 *   re:Post, dynamodb-missing-table-items-gsi); 10 s is ten times that, and a page whose tag is
 *   withheld is still served, only not conditionally. The version's change time is written by
 *   the release of each write (its clock: Lambda's, NTP-synchronized) and compared with this
 *   reader's clock; a version whose change time is unknown (a nonce item with no `c`) gives
 *   index pages no tag.
 */
import { createHash } from 'node:crypto';
import { canonicalFilterV1, type OrderFilter, type PagePosition } from './order-filter.ts';
import type { PagePlan } from './order-pages.ts';
import type { ListVersion } from './order-store.ts';

/** How long after the list's last change an index-served page may be tagged (see above). */
export const INDEX_SETTLE_MS = 10_000;

/**
 * What changes every page tag at once: bump it when a page's JSON changes for the same stored
 * orders, so that no client keeps an old body.
 */
const REPRESENTATION = 'orders-page-1';

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

/**
 * The page's opaque tag (22 base64url characters: every one an etagc; the caller sends it weak,
 * `W/"…"`), or undefined when the page cannot have one now: a write is in flight, or the page is
 * read from an index and the list changed less than INDEX_SETTLE_MS ago (or when, is unknown).
 */
export function pageEntityTag(input: PageTagInput): string | undefined {
  const { version } = input;
  if (version.tag === undefined) return undefined;
  if (!input.plan.consistent) {
    const changed = version.lastChangeAt;
    if (changed === undefined || input.now - changed < INDEX_SETTLE_MS) return undefined;
  }
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

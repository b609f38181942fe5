import type { CallOptions } from '../failures.ts';
import type { Order } from './order.ts';

/** What a cancel did, or why it could not: decided by one conditional write. */
export type CancelOutcome = 'cancelled' | 'already-cancelled' | 'shipped' | 'not-found';

/**
 * Who cancelled an order, when, and in which request: the trail the write that cancels records
 * on the order (and only that write: a cancel that changes nothing records nothing). What an
 * operator reads to answer "who cancelled order N?" (the request id leads to the request's log
 * lines, the key id to the key).
 */
export interface Cancellation {
  /** When, in milliseconds since the epoch. */
  readonly at: number;
  /** The public id of the API key that asked (`key_…`: not a secret; never the key). */
  readonly keyId: string;
  /** The id of the request, as its client saw it (API Gateway's `x-amzn-RequestId`). */
  readonly requestId: string;
}

/** What a ship did, or why it could not: decided by one conditional write. */
export type ShipOutcome = 'shipped' | 'already-shipped' | 'cancelled' | 'not-found';

/**
 * A write of many orders stopped by a failure: `written` of `total` orders were stored before
 * it (nothing was still being written when this was thrown); `cause` is the failure.
 */
export class OrdersPartlyWritten extends Error {
  readonly written: number;
  readonly total: number;
  constructor(written: number, total: number, cause: unknown) {
    super(`${written} of ${total} orders written before a failure`, { cause });
    this.name = 'OrdersPartlyWritten';
    this.written = written;
    this.total = total;
  }
}

export interface PutOrdersOptions {
  /** Called as batches complete, with the number of orders written so far. */
  readonly onProgress?: (written: number) => void;
}

/**
 * A stored order the store could not read whole: `fields` were left out of it (a value of the
 * wrong type), or, when `skipped`, the item was left out of the list (its id is unreadable).
 */
export interface UnreadableOrder {
  /** The id as stored (digits), when it could be read. */
  readonly id?: string;
  readonly fields: readonly string[];
  readonly skipped: boolean;
}

export interface OrderStreamOptions extends CallOptions {
  /** Told of every stored order that could not be read whole; the list goes on. */
  readonly onUnreadable?: (problem: UnreadableOrder) => void;
}

/**
 * The orders written less than INDEX_SETTLE_MS ago or being written (./page-tag.ts), by their
 * ids' decimal text: the ones an eventually consistent index may show as they were. `all` when
 * that is not known of every such write (a write of many orders, for one).
 */
export type RecentWrites = ReadonlySet<string> | 'all';

/**
 * The list's version, for conditional requests: an opaque tag that stays the same for as long as
 * no write changes the list, or no tag while a write is in flight (the list is changing).
 */
export interface ListVersion {
  readonly tag: string | undefined;
  /**
   * When the last write the tag covers changed the list (ms since the epoch; 0 when none ever
   * did); undefined when a write in flight leaves no tag, or when the time is unknown (a change
   * recorded without its time). Pages read from eventually consistent indexes wait for it to
   * settle before they are tagged by version (./page-tag.ts).
   */
  readonly lastChangeAt?: number;
  /** Which orders' index entries may lag now. */
  readonly recentWrites: RecentWrites;
}

/** The port the order operations need from storage. */
export interface OrderStore {
  /**
   * The list's version now, by `signal`'s deadline. Read before the list's first page, its tag
   * covers no write that the list lacks: every write the tag covers was acknowledged before it
   * was read, and the pages are read strongly consistent after it.
   */
  readListVersion(options?: CallOptions): Promise<ListVersion>;
  /**
   * Every order, sorted by id ascending, in batches (a batch is at most a page's worth; the
   * orders of a batch are handed over at once). The promise settles once the first page of every
   * partition has been read (by `signal`'s deadline), so a storage failure surfaces before any
   * byte is answered; each later page has a time budget of its own, and the iteration fails
   * when one does not come.
   */
  openOrderStream(options?: OrderStreamOptions): Promise<AsyncIterable<readonly Order[]>>;
  /**
   * pending (or no status) → cancelled in one conditional write, which records `cancellation`
   * on the order. Like every write below, it changes the list's version when it changes the list
   * — and only then: a cancel that changes nothing leaves the version (and the order's trail)
   * as it is.
   */
  cancel(id: bigint, cancellation: Cancellation, options?: CallOptions): Promise<CancelOutcome>;
  /** pending (or no status) → shipped (and complete) in one conditional write. */
  ship(id: bigint, options?: CallOptions): Promise<ShipOutcome>;
  /**
   * Inserts or replaces orders (seeding, imports): an order whose id is stored already is
   * replaced, so writing the same orders twice leaves the same table. A failure midway throws
   * OrdersPartlyWritten once no write is in flight any more.
   */
  putOrders(orders: readonly Order[], options?: PutOrdersOptions): Promise<void>;
}

export interface FindOrdersOptions {
  /** Called as reads complete, with the number of ids looked up so far. */
  readonly onProgress?: (checked: number) => void;
}

/** What an import needs besides: which of many ids are stored, and as what. */
export interface OrderImportStore extends OrderStore {
  /**
   * The stored orders among these ids (each at most once), read strongly consistent, in no
   * particular order; ids with no order are left out.
   */
  findOrders(ids: readonly bigint[], options?: FindOrdersOptions): Promise<Order[]>;
}

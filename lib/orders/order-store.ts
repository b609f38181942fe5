import type { Order } from './order.ts';

/** What a cancel did, or why it could not: decided by one conditional write. */
export type CancelOutcome = 'cancelled' | 'already-cancelled' | 'shipped' | 'not-found';

/** The port the order operations need from storage. */
export interface OrderStore {
  /**
   * Every order, sorted by id ascending. The promise settles once the first page of every
   * partition has been read, so a storage failure surfaces before any byte is answered.
   */
  openOrderStream(): Promise<AsyncIterable<Order>>;
  /** pending → cancelled in one conditional write. */
  cancel(id: bigint): Promise<CancelOutcome>;
  /** Inserts or replaces orders (seeding, imports). */
  putOrders(orders: readonly Order[]): Promise<void>;
}

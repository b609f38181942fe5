/**
 * The largest order item the service writes: int64 extremes, a 35-character ship date (in every
 * date index), and, once cancelled through the API, the longest key id there is (`key_` and 64
 * characters) with a request id of 36: what a write's size (and so its units) is checked on.
 */
import type { Order } from '../../lib/orders/order.ts';

export const LARGEST_ORDER: Order = {
  id: 9223372036854775807n,
  petId: -9223372036854775808n,
  quantity: 2147483647,
  shipDate: '2026-11-28T09:30:15.123456789+05:30',
  complete: false,
  status: 'pending',
};

export const LONGEST_KEY_ID = `key_${'K'.repeat(64)}`;

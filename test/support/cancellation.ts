/** The trail tests give a cancel they make on the order store itself (no request behind it). */
import type { Cancellation } from '../../lib/orders/order-store.ts';

export const TEST_CANCELLATION: Cancellation = {
  at: Date.UTC(2026, 10, 28, 9, 0, 0),
  keyId: 'key_test',
  requestId: 'test',
};

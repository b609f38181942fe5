/**
 * DELETE /store/orders/{orderId} — pending → cancelled in one conditional write, once the rate
 * limiter has admitted the request (./shared/http-function.ts): a refused request reads and writes
 * nothing of the orders. The write records when, by which key and in which request (the id
 * API Gateway gave the client). A cancel that changes nothing (an order already cancelled,
 * shipped, or unknown) is answered from one strongly consistent read and leaves the list's
 * version alone (lib/dynamodb/orders-table.ts): it takes no conditional list's 304 from another
 * client. The deploy check's cancels (lib/deploy-check.ts) go to its own partition of the orders
 * table, with the same code: never to an order a client has.
 */
import { noContent } from '../lib/api/responses.ts';
import { isDeployCheck } from '../lib/deploy-check.ts';
import { cancelOrder, parseOrderId } from '../lib/orders/operations.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { httpStoresFromEnv } from './shared/stores.ts';
import { httpFunction } from './shared/http-function.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

export interface CancelOrderDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
  /**
   * The deploy check's partition of the orders (lib/deploy-check.ts); without it, the deploy
   * check's cancels fail (500): they never reach `orders`.
   */
  readonly deployCheckOrders?: () => OrderStore;
}

export function createCancelOrderHandler(deps: CancelOrderDependencies) {
  const deployCheckOrders = (): OrderStore => {
    if (!deps.deployCheckOrders) throw new Error("No store of the deploy check's orders");
    return deps.deployCheckOrders();
  };
  return httpFunction(deps, {
    permission: 'cancel',
    // A malformed id is answered 400 INVALID_ORDER_ID once the request is counted.
    parse: ({ event }) => parseOrderId(event.pathParameters?.orderId),
    act: async (id, { event, signal, caller, now }) => {
      const requestId = event.requestContext?.requestId;
      // API Gateway gives every request one: without it, the cancel could not be traced.
      if (!requestId) throw new Error('No request id in the request context');
      const store = isDeployCheck(caller.keyId) ? deployCheckOrders() : deps.orders();
      await cancelOrder(store, id, { at: now, keyId: caller.keyId, requestId }, { signal });
      return noContent();
    },
  });
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
export const handler = createCancelOrderHandler(httpStoresFromEnv());

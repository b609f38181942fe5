/** DELETE /store/orders/{orderId} — pending → cancelled in one conditional write. */
import middy from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { noContent } from '../lib/api/http.ts';
import { cancelOrder, parseOrderId } from '../lib/orders/operations.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { orderStoreFromEnv } from './shared/dependencies.ts';
import { httpErrors } from './shared/http-errors.ts';

export interface CancelOrderDependencies {
  readonly orders: () => OrderStore;
}

export function createCancelOrderHandler(deps: CancelOrderDependencies) {
  return middy<APIGatewayProxyEvent>()
    .use(httpErrors())
    .handler(async (event) => {
      const id = parseOrderId(event.pathParameters?.orderId);
      await cancelOrder(deps.orders(), id);
      return noContent();
    });
}

let store: OrderStore | undefined;
export const handler = createCancelOrderHandler({ orders: () => (store ??= orderStoreFromEnv()) });

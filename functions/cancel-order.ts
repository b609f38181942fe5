/** DELETE /store/orders/{orderId} — pending → cancelled in one conditional write. */
import middy from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { noContent } from '../lib/api/http.ts';
import type { RateLimiter } from '../lib/limits/limiter.ts';
import { cancelOrder, parseOrderId } from '../lib/orders/operations.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { requestSignal } from './shared/budget.ts';
import { orderStoreFromEnv, rateLimiterFromEnv } from './shared/dependencies.ts';
import { httpMiddlewares } from './shared/http-function.ts';
import { traceClient, traceHandler } from './shared/tracer.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

export interface CancelOrderDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
}

export function createCancelOrderHandler(deps: CancelOrderDependencies) {
  return middy<APIGatewayProxyEvent>()
    .use(httpMiddlewares(deps, [traceHandler()]))
    .handler(async (event, context) => {
      const id = parseOrderId(event.pathParameters?.orderId);
      await cancelOrder(deps.orders(), id, { signal: requestSignal(event, context) });
      return noContent();
    });
}

let store: OrderStore | undefined;
let limiter: RateLimiter | undefined;
export const handler = createCancelOrderHandler({
  orders: () => (store ??= orderStoreFromEnv(traceClient)),
  limiter: () => (limiter ??= rateLimiterFromEnv(traceClient)),
});

/**
 * DELETE /store/orders/{orderId} — pending → cancelled in one conditional write. The write's mark
 * of the list's version (lib/dynamodb/list-version.ts) is sent as the request arrives, beside the
 * rate limiter's count, so that it costs no time of its own; when the request goes no further
 * (refused, or failed before the write), the mark is released unchanged.
 */
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { noContent } from '../lib/api/http.ts';
import type { RateLimiter } from '../lib/limits/limiter.ts';
import { cancelOrder, parseOrderId, readOrderId } from '../lib/orders/operations.ts';
import type { OrderStore, PreparedWrite } from '../lib/orders/order-store.ts';
import { requestSignal } from './shared/budget.ts';
import {
  limiterClientFromEnv,
  orderStoreFromEnv,
  rateLimiterFromEnv,
} from './shared/dependencies.ts';
import { httpMiddlewares } from './shared/http-function.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

export interface CancelOrderDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
}

export function createCancelOrderHandler(deps: CancelOrderDependencies) {
  const prepared = new WeakMap<object, PreparedWrite>();
  /** Prepares the write of a well-formed id (a malformed one is answered 400 and writes nothing). */
  const prepare: MiddlewareObj<APIGatewayProxyEvent> = {
    before: (request) => {
      if (readOrderId(request.event.pathParameters?.orderId).id === undefined) return;
      const signal = requestSignal(request.event, request.context);
      prepared.set(request.event, deps.orders().prepareWrite({ signal }));
    },
    after: (request) => prepared.get(request.event)?.abandon(),
    onError: (request) => prepared.get(request.event)?.abandon(),
  };
  return middy<APIGatewayProxyEvent>()
    .use(httpMiddlewares(deps, [prepare as MiddlewareObj]))
    .handler(async (event, context) => {
      const id = parseOrderId(event.pathParameters?.orderId);
      await cancelOrder(deps.orders(), id, {
        signal: requestSignal(event, context),
        prepared: prepared.get(event),
      });
      return noContent();
    });
}

// Created at load (Lambda's init, outside the handler); the stores at the first call.
const limiterClient = limiterClientFromEnv();
let store: OrderStore | undefined;
let limiter: RateLimiter | undefined;
export const handler = createCancelOrderHandler({
  orders: () => (store ??= orderStoreFromEnv()),
  limiter: () => (limiter ??= rateLimiterFromEnv(limiterClient)),
});

/** GET /store/orders — every order, sorted by id, streamed as one JSON array. */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import { Readable } from 'node:stream';
import { jsonStream } from '../lib/api/http.ts';
import { listOrders } from '../lib/orders/operations.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { orderStoreFromEnv, rateLimiterFromEnv } from './shared/dependencies.ts';
import { httpMiddlewares } from './shared/http-function.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';
import type { RateLimiter } from '../lib/limits/limiter.ts';

export interface ListOrdersDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  return middy({ executionMode: executionModeStreamifyResponse })
    .use(httpMiddlewares(deps))
    .handler(async () => {
      const orders = await listOrders(deps.orders());
      return jsonStream(200, Readable.from(ordersJsonArray(orders), { objectMode: false }));
    });
}

let store: OrderStore | undefined;
let limiter: RateLimiter | undefined;
export const handler = createListOrdersHandler({
  orders: () => (store ??= orderStoreFromEnv()),
  limiter: () => (limiter ??= rateLimiterFromEnv()),
});

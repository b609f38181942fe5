/** GET /store/orders — every order, sorted by id, streamed as one JSON array. */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import { Readable } from 'node:stream';
import { jsonStream } from '../lib/api/http.ts';
import { listOrders } from '../lib/orders/operations.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { orderStoreFromEnv } from './shared/dependencies.ts';
import { httpErrors } from './shared/http-errors.ts';

export interface ListOrdersDependencies {
  readonly orders: () => OrderStore;
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  return middy({ executionMode: executionModeStreamifyResponse })
    .use(httpErrors())
    .handler(async () => {
      const orders = await listOrders(deps.orders());
      return jsonStream(200, Readable.from(ordersJsonArray(orders), { objectMode: false }));
    });
}

let store: OrderStore | undefined;
export const handler = createListOrdersHandler({ orders: () => (store ??= orderStoreFromEnv()) });

/** GET /store/orders — every order, sorted by id, streamed as one JSON array. */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { Readable } from 'node:stream';
import { jsonStream } from '../lib/api/http.ts';
import { DependencyFailure } from '../lib/failures.ts';
import type { RateLimiter } from '../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../lib/metrics.ts';
import { listOrders } from '../lib/orders/operations.ts';
import type { Order } from '../lib/orders/order.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { OrderStore, UnreadableOrder } from '../lib/orders/order-store.ts';
import { requestSignal } from './shared/budget.ts';
import { orderStoreFromEnv, rateLimiterFromEnv } from './shared/dependencies.ts';
import { httpMiddlewares } from './shared/http-function.ts';
import { logger } from './shared/logger.ts';
import { metrics } from './shared/metrics.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

export interface ListOrdersDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
}

/** Stored orders that could not be read whole in one list: one warning per request. */
class UnreadableReport {
  private count = 0;
  private first: UnreadableOrder | undefined;

  readonly add = (problem: UnreadableOrder): void => {
    this.count++;
    this.first ??= problem;
  };

  publish(): void {
    if (this.count === 0) return;
    logger.warn('Stored orders could not be read whole: listed without the unreadable fields', {
      unreadableOrders: this.count,
      first: this.first,
    });
    metrics.addMetric(METRIC_NAMES.unreadableOrders, MetricUnit.Count, this.count);
  }
}

/**
 * The orders as they are sent. A failure after the status line can only cut the body short
 * (the array is never closed, so it cannot parse as complete JSON): it is logged with the
 * request id and the orders already sent, and counted. The list's metrics are published when
 * the stream ends, which is after the middy chain has run.
 */
async function* observed(orders: AsyncIterable<Order>, report: UnreadableReport) {
  let sent = 0;
  try {
    for await (const order of orders) {
      yield order;
      sent++;
    }
  } catch (error) {
    logger.error('List failed after its status line: the body was cut off', {
      ordersSent: sent,
      ...(error instanceof DependencyFailure
        ? { failure: { kind: error.kind, dependency: error.dependency, reason: error.reason } }
        : {}),
      error: error as Error,
    });
    metrics.addMetric(METRIC_NAMES.listStreamFailures, MetricUnit.Count, 1);
    throw error;
  } finally {
    report.publish();
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  }
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  return middy<APIGatewayProxyEvent>({ executionMode: executionModeStreamifyResponse })
    .use(httpMiddlewares(deps))
    .handler(async (event) => {
      const report = new UnreadableReport();
      const orders = await listOrders(deps.orders(), {
        signal: requestSignal(event),
        onUnreadable: report.add,
      });
      return jsonStream(200, Readable.from(ordersJsonArray(observed(orders, report))));
    });
}

let store: OrderStore | undefined;
let limiter: RateLimiter | undefined;
export const handler = createListOrdersHandler({
  orders: () => (store ??= orderStoreFromEnv()),
  limiter: () => (limiter ??= rateLimiterFromEnv()),
});

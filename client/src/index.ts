/**
 * @store-orders/client: the Store Orders API from TypeScript, in Node 20+ and in browsers.
 * This is the whole public API (README.md documents each name); everything else is internal.
 */
export { StoreOrdersClient } from './client.ts';
export type {
  CallOptions,
  HeadersInput,
  ListCallOptions,
  OrderList,
  PageCallOptions,
  StoreOrdersClientOptions,
} from './client.ts';
export type { OrderFilter, OrderPage } from './order-page.ts';
export { ApiError, isApiError, OrderListParseError } from './errors.ts';
export type { ApiErrorCode, ErrorCode } from './errors.ts';
export type { Order, OrderStatus } from './order.ts';
export type { PacerSnapshot } from './pacer.ts';
export type { RateLimitInfo } from './rate-limit-headers.ts';

/** @store-orders/client: the Store Orders API from TypeScript, in Node 24 and in browsers. */
export { StoreOrdersClient, orderIdSegment } from './client.ts';
export type {
  CallOptions,
  HeadersInput,
  ListCallOptions,
  OrderList,
  StoreOrdersClientOptions,
} from './client.ts';
export {
  API_ERROR_STATUS,
  ApiError,
  isApiError,
  isApiErrorCode,
  OrderListParseError,
  UNEXPECTED_RESPONSE,
} from './errors.ts';
export type { ApiErrorCode, ApiErrorInit, ErrorCode } from './errors.ts';
export { INT64_MAX, INT64_MIN, ORDER_STATUSES, parseInt64 } from './order.ts';
export type { Order, OrderStatus } from './order.ts';
export {
  DEFAULT_MAX_ORDER_LENGTH,
  OrderListParser,
  parseOrder,
  parseOrderList,
} from './order-list-parser.ts';
export type { OrderListParserOptions } from './order-list-parser.ts';
export { parsePolicy, parseRetryAfter, parseWindows, readRateLimit } from './rate-limit.ts';
export type {
  PacerSnapshot,
  RateLimitInfo,
  RateLimitPolicyItem,
  RateLimitWindow,
} from './rate-limit.ts';

/**
 * The order model. Ids and pet ids are int64 and live as `bigint` from the moment they are
 * parsed to the moment their digits are written: they never pass through a JS `number`.
 */
import { parseWholeNumber } from '../config/integers.ts';

export const ORDER_STATUSES = ['pending', 'shipped', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** The fields of an order, in schema order (the order of the JSON the API writes). */
export const ORDER_FIELDS = ['id', 'petId', 'quantity', 'shipDate', 'complete', 'status'] as const;
export type OrderField = (typeof ORDER_FIELDS)[number];

export interface Order {
  readonly id: bigint;
  readonly petId?: bigint;
  readonly quantity?: number;
  readonly shipDate?: string;
  readonly complete?: boolean;
  /**
   * Always set by the service (an order stored without one is `pending`, one a cancel through the
   * API recorded itself on is `cancelled`: lib/dynamodb/order-item.ts); absent only on an order
   * read from storage whose stored status is not one of ORDER_STATUSES.
   */
  readonly status?: OrderStatus;
}

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
/** Bounds of `quantity` (a count of units: int32, not negative). */
export const QUANTITY_MIN = 0;
export const QUANTITY_MAX = 2 ** 31 - 1;

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Parses a base-10 integer in the int64 range: optional minus sign, digits only (no `+`, no
 * exponent, no fraction, no hex, no spaces). Leading zeros are accepted (`007` is 7).
 * Returns undefined for anything else.
 */
export function parseInt64(text: string): bigint | undefined {
  // 64 characters is far beyond any int64 with leading zeros a client would send.
  if (text.length === 0 || text.length > 64 || !DECIMAL_INTEGER.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
}

export function isOrderStatus(value: unknown): value is OrderStatus {
  return typeof value === 'string' && (ORDER_STATUSES as readonly string[]).includes(value);
}

/**
 * An RFC 3339 date-time (as OpenAPI's `format: date-time` means it) with at most nine digits of
 * fractions of a second: at most 35 characters, the document's `maxLength`.
 */
const SHIP_DATE = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

export function isShipDate(value: unknown): value is string {
  return typeof value === 'string' && SHIP_DATE.test(value) && !Number.isNaN(Date.parse(value));
}

/** One field's value, or undefined when the value cannot be one (see readOrderFields). */
function readField(
  field: OrderField,
  value: unknown,
  numberText: (value: unknown) => string | undefined,
) {
  switch (field) {
    case 'id':
    case 'petId': {
      const digits = numberText(value);
      return digits === undefined ? undefined : parseInt64(digits);
    }
    case 'quantity':
      return parseWholeNumber(numberText(value), { min: QUANTITY_MIN, max: QUANTITY_MAX });
    case 'shipDate':
      return isShipDate(value) ? value : undefined;
    case 'complete':
      return typeof value === 'boolean' ? value : undefined;
    case 'status':
      return isOrderStatus(value) ? value : undefined;
  }
}

/**
 * The fields of an order in a record from outside — a seed or import file, a stored item —
 * each checked by the same rule whatever the source. A number is read from its decimal text
 * (`numberText` gives it, or undefined for a value that is not a number), never through a JS
 * `number`. Fields absent from the record are absent from the result; the fields present but
 * unreadable are listed, in schema order. Defaults (a missing status) are the caller's. Fields
 * are added in schema order and never deleted, so orders with the same fields share one object
 * shape (this runs once per order of every list).
 */
export function readOrderFields(
  record: Readonly<Record<string, unknown>>,
  numberText: (value: unknown) => string | undefined,
): { fields: Partial<Order>; unreadable: OrderField[] } {
  const fields: Partial<Record<OrderField, unknown>> = {};
  const unreadable: OrderField[] = [];
  for (const field of ORDER_FIELDS) {
    const value = record[field];
    if (value === undefined) continue;
    const read = readField(field, value, numberText);
    if (read === undefined) unreadable.push(field);
    else fields[field] = read;
  }
  return { fields: fields as Partial<Order>, unreadable };
}

export function compareIds(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The JSON text of one order, fields in schema order (ORDER_FIELDS), absent fields omitted, int64
 * digits exact. Written out field by field rather than looped over ORDER_FIELDS: it runs once per
 * order of every list, where a loop over the fields is markedly slower.
 */
export function orderToJson(order: Order): string {
  let json = `{"id":${order.id}`;
  if (order.petId !== undefined) json += `,"petId":${order.petId}`;
  if (order.quantity !== undefined) json += `,"quantity":${order.quantity}`;
  if (order.shipDate !== undefined) json += `,"shipDate":${JSON.stringify(order.shipDate)}`;
  if (order.complete !== undefined) json += `,"complete":${order.complete}`;
  if (order.status !== undefined) json += `,"status":"${order.status}"`;
  return `${json}}`;
}

/**
 * The JSON text of one order in v2: v1's, field for field. Not the cancel's trail (when, which key,
 * which request): that is the operators' record (`orders show`), and a page read from an index
 * would need it in the index, which every cancel would then rewrite (docs/architecture.md).
 */
export const orderToJsonV2: (order: Order) => string = orderToJson;

/** The Order resource, with its int64 fields as `bigint`, and int64 helpers. */

export const ORDER_STATUSES = ['pending', 'shipped', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/**
 * An order as the API lists it. Fields absent in storage are absent here. `id` and `petId` are
 * exact: they are read from their digits, never through a JS `number`.
 */
export interface Order {
  readonly id: bigint;
  readonly petId?: bigint;
  readonly quantity?: number;
  /** ISO 8601 / RFC 3339 date-time, as stored. */
  readonly shipDate?: string;
  readonly complete?: boolean;
  /** One of ORDER_STATUSES in v1; a later version may add others. */
  readonly status?: OrderStatus | (string & {});
}

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * A base-10 integer in the int64 range, as the API accepts it in a path (optional minus sign,
 * digits only, leading zeros allowed); undefined for anything else.
 */
export function parseInt64(text: string): bigint | undefined {
  if (text.length === 0 || text.length > 64 || !DECIMAL_INTEGER.test(text)) return undefined;
  const value = BigInt(text);
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined;
}

export function isInt64(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

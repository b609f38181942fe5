/** Reading numbers from items unmarshalled with `wrapNumbers: true`, without losing digits. */
import { NumberValue } from '@aws-sdk/lib-dynamodb';

export function readBigInt(value: unknown, attribute: string): bigint {
  if (value instanceof NumberValue) return value.toBigInt();
  if (typeof value === 'bigint') return value;
  throw new Error(`Attribute ${attribute} is not a number`);
}

export function readOptionalBigInt(value: unknown, attribute: string): bigint | undefined {
  return value === undefined ? undefined : readBigInt(value, attribute);
}

export function readOptionalNumber(value: unknown, attribute: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value instanceof NumberValue ? value.toString() : value);
  if (!Number.isFinite(n)) throw new Error(`Attribute ${attribute} is not a number`);
  return n;
}

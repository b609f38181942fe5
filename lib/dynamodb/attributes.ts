/**
 * Reading numbers from items unmarshalled with `wrapNumbers: true`, without losing digits, and
 * naming what a stored item gets wrong: stored data the service cannot read is a permanent
 * failure (lib/failures.ts), never a crash.
 */
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { DependencyFailure } from '../failures.ts';

/** The decimal text of a stored number, or undefined when the value is not a number. */
export function numberText(value: unknown): string | undefined {
  if (value instanceof NumberValue) return value.toString();
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** The failure for a stored item the service cannot use: permanent, and named. */
export function malformedItem(dependency: string, what: string): DependencyFailure {
  return new DependencyFailure('permanent', dependency, 'malformed-item', {
    message: `${dependency}: a stored item is malformed: ${what} (permanent)`,
  });
}

/** An optional stored number (finite), or a permanent failure when it is not one. */
export function readOptionalNumber(
  value: unknown,
  attribute: string,
  dependency: string,
): number | undefined {
  if (value === undefined) return undefined;
  const text = numberText(value);
  const n = text === undefined ? NaN : Number(text);
  if (!Number.isFinite(n)) throw malformedItem(dependency, `${attribute} is not a number`);
  return n;
}

/**
 * A stored item as JSON text, attributes in name order, every number with its stored digits
 * (a NumberValue is written as it is, never through a JS number); what an operator reads of an
 * item as stored.
 */
export function itemToJson(item: Readonly<Record<string, unknown>>): string {
  const value = (v: unknown): string => {
    const digits = numberText(v);
    if (digits !== undefined) return digits;
    if (Array.isArray(v)) return `[${v.map(value).join(',')}]`;
    if (v instanceof Set) return value([...(v as Set<unknown>)]);
    if (typeof v === 'object' && v !== null && !(v instanceof Uint8Array)) {
      return itemToJson(v as Record<string, unknown>);
    }
    return JSON.stringify(v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v);
  };
  const names = Object.keys(item).sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${value(item[name])}`).join(',')}}`;
}

/**
 * Whole numbers given as settings — command-line flags, environment variables, CDK context —
 * read one way everywhere: decimal digits only (no sign, exponent, fraction or spaces), within a
 * range. Each caller says in its own words what was wrong.
 */

export interface IntegerRange {
  readonly min: number;
  /** Default: Number.MAX_SAFE_INTEGER. */
  readonly max?: number;
}

/**
 * The value as a whole number within the range, or undefined when it is not one. A number is
 * taken as it is (CDK context can hold numbers); a string must be decimal digits only.
 */
export function parseWholeNumber(value: unknown, range: IntegerRange): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= range.min && n <= max
    ? n
    : undefined;
}

/**
 * A whole-number setting: `fallback` when it is not given (undefined), the number when it is a
 * whole number in the range, else the error `invalid` makes of what was expected (`an integer
 * from 0 to 65535`): the caller names the setting, in its own words.
 */
export function wholeNumberSetting(
  value: unknown,
  range: IntegerRange,
  fallback: number,
  invalid: (expected: string) => Error,
): number {
  if (value === undefined) return fallback;
  const n = parseWholeNumber(value, range);
  if (n !== undefined) return n;
  throw invalid(
    range.max === undefined
      ? `an integer ≥ ${range.min}`
      : `an integer from ${range.min} to ${range.max}`,
  );
}

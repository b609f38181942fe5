/**
 * RFC 3339 date-times as instants: nanoseconds since 1970-01-01T00:00:00Z, as a `bigint`, so
 * that two ship dates written with other offsets or other fractions compare as the moments they
 * name (`2026-03-01T01:00:00+01:00` and `2026-03-01T00:00:00.000Z` are the same instant). Exact
 * to the nanosecond, the finest a ship date may be written to (nine fraction digits, as the
 * OpenAPI document allows); a JS Date keeps milliseconds only.
 *
 * Strict: the calendar is checked (no 30 February, no hour 24), a leap second (`:60`) is refused
 * (no time scale here knows where one falls), and so is anything RFC 3339's `date-time` does not
 * allow (a space for the `T`, a missing offset, more than nine fraction digits).
 */

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const NANOS_PER_SECOND = 1_000_000_000n;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Days from 1970-01-01 to a date of the proleptic Gregorian calendar (year 0 is 1 BC), by Howard
 * Hinnant's `days_from_civil`: exact for every year a date-time can write (0000 to 9999).
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The instant an RFC 3339 date-time names, in nanoseconds since the epoch; undefined if it is not one. */
export function parseInstant(text: string): bigint | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, sign, oh, om] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetSeconds = 0;
  if (sign !== undefined) {
    const [offsetHours, offsetMinutes] = [Number(oh), Number(om)];
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offsetSeconds = (sign === '-' ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60);
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
  const nanos = BigInt((fraction ?? '').padEnd(9, '0'));
  return BigInt(seconds - offsetSeconds) * NANOS_PER_SECOND + nanos;
}

/** The earliest and the latest instant a date-time can write (0000-01-01 at +23:59, 9999-12-31 at −23:59). */
export const INSTANT_MIN = parseInstant('0000-01-01T00:00:00+23:59')!;
export const INSTANT_MAX = parseInstant('9999-12-31T23:59:59.999999999-23:59')!;

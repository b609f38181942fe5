/**
 * An incremental parser of the order list: text goes in chunk by chunk, as it arrives, and each
 * order comes out as soon as its closing brace has been read. It holds at most one order's text
 * (plus the chunk being read), never the list. Numbers of `id` and `petId` become `bigint` from
 * their digits; no int64 passes through a JS `number`.
 *
 * Two layers: a scanner that follows the array (`[`, orders separated by `,`, `]`) and finds
 * where each order ends (tracking strings and escapes, so a `}` inside a string does not end
 * it), and JSON.parse of one order's text, its known fields checked.
 */
import { OrderListParseError } from './errors.ts';
import { INT64_MAX, INT64_MIN, type Order } from './order.ts';

/** Longest order text accepted (characters): a bound on memory whatever the body holds. */
export const DEFAULT_MAX_ORDER_LENGTH = 64 * 1024;

export interface OrderListParserOptions {
  readonly maxOrderLength?: number;
}

// Scanner states.
const BEFORE_ARRAY = 0;
const FIRST_OR_END = 1;
const IN_ORDER = 2;
const AFTER_ORDER = 3;
const NEXT_ORDER = 4;
const DONE = 5;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export class OrderListParser {
  readonly #maxOrderLength: number;
  #state = BEFORE_ARRAY;
  /** Characters consumed before the current chunk. */
  #offset = 0;
  /** Text of the order being read that came in earlier chunks. */
  #pending = '';
  /** Absolute position where the order being read starts. */
  #orderStart = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;
  #orders = 0;

  constructor(options: OrderListParserOptions = {}) {
    this.#maxOrderLength = options.maxOrderLength ?? DEFAULT_MAX_ORDER_LENGTH;
  }

  /** Orders read so far. */
  get count(): number {
    return this.#orders;
  }

  /** Characters read so far. */
  get position(): number {
    return this.#offset;
  }

  /**
   * Reads one chunk of the body, yielding each order it completes. Consume the generator fully
   * before pushing the next chunk.
   */
  *push(chunk: string): Generator<Order, void, undefined> {
    const length = chunk.length;
    let i = 0;
    let start = 0; // where the current order's text starts in this chunk
    while (i < length) {
      if (this.#state === IN_ORDER) {
        const end = this.#scanOrder(chunk, i);
        if (end < 0) break;
        const text = this.#pending + chunk.slice(start, end + 1);
        this.#pending = '';
        this.#state = AFTER_ORDER;
        this.#checkLength(text.length);
        i = end + 1;
        const order = parseOrder(text, this.#orderStart);
        this.#orders++;
        yield order;
        continue;
      }
      const c = chunk.charCodeAt(i);
      if (isWhitespace(c)) {
        i++;
        continue;
      }
      const position = this.#offset + i;
      switch (this.#state) {
        case BEFORE_ARRAY:
          if (c !== OPEN_BRACKET) this.#fail(`expected '[' (the start of the list)`, chunk, i);
          this.#state = FIRST_OR_END;
          break;
        case FIRST_OR_END:
          if (c === CLOSE_BRACKET) this.#state = DONE;
          else if (c === OPEN_BRACE) start = this.#beginOrder(i, position);
          else this.#fail(`expected an order ('{') or the end of the list (']')`, chunk, i);
          break;
        case AFTER_ORDER:
          if (c === COMMA) this.#state = NEXT_ORDER;
          else if (c === CLOSE_BRACKET) this.#state = DONE;
          else this.#fail(`expected ',' or ']' after an order`, chunk, i);
          break;
        case NEXT_ORDER:
          if (c === OPEN_BRACE) start = this.#beginOrder(i, position);
          else this.#fail(`expected an order ('{') after ','`, chunk, i);
          break;
        default:
          this.#fail('unexpected text after the end of the list', chunk, i);
      }
      i++;
    }
    if (this.#state === IN_ORDER) {
      this.#pending += chunk.slice(start);
      this.#checkLength(this.#pending.length);
    }
    this.#offset += length;
  }

  /** Says the body has ended: throws if the list is not complete. */
  end(): void {
    if (this.#state === DONE) return;
    const message =
      this.#state === BEFORE_ARRAY
        ? 'the body is empty, expected a JSON array'
        : `the list ended early, after ${this.#orders} order(s): the response was cut short`;
    throw new OrderListParseError(message, this.#offset);
  }

  #beginOrder(index: number, position: number): number {
    this.#state = IN_ORDER;
    this.#orderStart = position;
    this.#depth = 1; // the '{' at `index`, which the caller steps over
    this.#inString = false;
    this.#escaped = false;
    return index;
  }

  /**
   * Follows an order's text from `from`; returns the index of its closing brace, or -1 when the
   * chunk ends first (the scanner's state is kept for the next chunk).
   */
  #scanOrder(chunk: string, from: number): number {
    let depth = this.#depth;
    let inString = this.#inString;
    let escaped = this.#escaped;
    const length = chunk.length;
    for (let i = from; i < length; i++) {
      const c = chunk.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) {
        inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        depth++;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) {
          this.#depth = 0;
          return i;
        }
      }
    }
    this.#depth = depth;
    this.#inString = inString;
    this.#escaped = escaped;
    return -1;
  }

  #checkLength(length: number): void {
    if (length > this.#maxOrderLength) {
      throw new OrderListParseError(
        `an order is longer than ${this.#maxOrderLength} characters`,
        this.#orderStart,
      );
    }
  }

  #fail(message: string, chunk: string, index: number): never {
    throw new OrderListParseError(
      `${message}, found ${JSON.stringify(chunk[index])}`,
      this.#offset + index,
    );
  }
}

/** Parses a whole body at once (tests, small lists): the same rules as the incremental parser. */
export function parseOrderList(text: string, options?: OrderListParserOptions): Order[] {
  const parser = new OrderListParser(options);
  const orders = [...parser.push(text)];
  parser.end();
  return orders;
}

// ---------------------------------------------------------------------------------------------
// One order: JSON.parse (native, fast), then the known fields checked. An int64 beyond 2^53
// does not survive a JS number: for an order that has one, its digits are read from the text.

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
/** What follows a key: the colon, then a number's text (sticky: matched where the key ends). */
const NUMBER_AFTER_KEY = /[ \t\n\r]*:[ \t\n\r]*(-?[0-9][0-9eE.+-]*)/y;

/**
 * The int64 fields at the start of an order, as the API writes them (`{"id":…,"petId":…,`):
 * keys read from the object's first one on are top-level keys.
 */
const LEADING_INT64 =
  /[ \t\n\r]*"(id|petId)"[ \t\n\r]*:[ \t\n\r]*(-?[0-9][0-9eE.+-]*)[ \t\n\r]*,?/y;

/**
 * The source text of the number of a top-level int64 field whose value JSON.parse gave as
 * `value`: from the fields at the start of the order when one there is that number (the common
 * case, and cheap), else from a walk through the whole order.
 */
function int64Source(text: string, key: string, value: number): string | undefined {
  LEADING_INT64.lastIndex = 1;
  for (let match = LEADING_INT64.exec(text); match; match = LEADING_INT64.exec(text)) {
    if (match[1] === key && Number(match[2]) === value) return match[2];
  }
  return int64Sources(text).get(key);
}

/**
 * The source text of the numbers of an order's top-level `id` and `petId` (the last one of a key
 * that appears twice, as JSON.parse keeps), from a walk through the order's text.
 */
function int64Sources(text: string): Map<string, string> {
  const found = new Map<string, string>();
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escapes = false;
      for (let d = text.charCodeAt(end); end < text.length && d !== QUOTE;) {
        if (d === BACKSLASH) escapes = true;
        end += d === BACKSLASH ? 2 : 1;
        d = text.charCodeAt(end);
      }
      if (depth === 1) {
        const key = escapes
          ? (JSON.parse(text.slice(i, end + 1)) as string)
          : text.slice(i + 1, end);
        if (key === 'id' || key === 'petId') {
          NUMBER_AFTER_KEY.lastIndex = end + 1;
          const number = NUMBER_AFTER_KEY.exec(text)?.[1];
          if (number !== undefined) found.set(key, number);
        }
      }
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return found;
}

/** `value` as an error message shows it. */
function describe(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return JSON.stringify(value); // a number or a boolean
}

/** Parses the text of one order (an object): exact int64 fields, the known fields checked. */
export function parseOrder(text: string, position = 0): Order {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // V8's message, without the order's text it may quote or the position it gives.
    const message = (error as Error).message;
    const at = /at position (\d+)/.exec(message);
    const reason = message.replace(/ in JSON at position.*$|, ".*" is not valid JSON$/s, '');
    throw new OrderListParseError(
      `an order is not valid JSON (${reason})`,
      position + (at ? Number(at[1]) : 0),
    );
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new OrderListParseError(
      `expected an order (an object), found ${describe(raw)}`,
      position,
    );
  }
  const fields = raw as Record<string, unknown>;
  if (fields.id === undefined) throw new OrderListParseError('an order has no "id"', position);
  // Only the fields this client knows; others (a later API version) are left out.
  const order: { -readonly [K in keyof Order]: Order[K] } = {
    id: int64(text, fields, 'id', position),
  };
  if (fields.petId !== undefined) order.petId = int64(text, fields, 'petId', position);
  const { quantity, shipDate, complete, status } = fields;
  if (quantity !== undefined) order.quantity = checked(quantity, 'quantity', position);
  if (shipDate !== undefined) order.shipDate = checked(shipDate, 'shipDate', position);
  if (complete !== undefined) order.complete = checked(complete, 'complete', position);
  if (status !== undefined) order.status = checked(status, 'status', position);
  return order;
}

/** What each of the other known fields must be. */
const FIELD_TYPES = {
  quantity: { is: (value: unknown) => Number.isSafeInteger(value), expected: 'an integer' },
  shipDate: { is: (value: unknown) => typeof value === 'string', expected: 'a string' },
  complete: { is: (value: unknown) => typeof value === 'boolean', expected: 'a boolean' },
  status: { is: (value: unknown) => typeof value === 'string', expected: 'a string' },
} as const;

function checked<K extends keyof typeof FIELD_TYPES>(
  value: unknown,
  key: K,
  position: number,
): NonNullable<Order[K]> {
  const { is, expected } = FIELD_TYPES[key];
  if (is(value)) return value as NonNullable<Order[K]>;
  throw new OrderListParseError(`"${key}" must be ${expected}, found ${describe(value)}`, position);
}

/** An int64 field: from the JS number when it holds it exactly, else from the order's text. */
function int64(
  text: string,
  fields: Record<string, unknown>,
  key: 'id' | 'petId',
  position: number,
): bigint {
  const value = fields[key];
  let parsed: bigint | undefined;
  let shown = describe(value);
  if (typeof value === 'number' && Number.isSafeInteger(value)) parsed = BigInt(value);
  else if (typeof value === 'number') {
    // Past 2^53 (or not an integer): the digits, from the text.
    const source = int64Source(text, key, value) ?? shown;
    shown = source.slice(0, 40);
    if (INTEGER.test(source)) parsed = BigInt(source);
  }
  if (parsed !== undefined && parsed >= INT64_MIN && parsed <= INT64_MAX) return parsed;
  throw new OrderListParseError(
    `"${key}" must be an integer in the int64 range, found ${shown}`,
    position,
  );
}

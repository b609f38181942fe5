/**
 * An incremental parser of the order list: text goes in chunk by chunk, as it arrives, and each
 * order comes out as soon as its closing brace has been read. It holds at most one order's text
 * (plus the chunk being read), never the list. Numbers of `id` and `petId` become `bigint` from
 * their digits; no int64 passes through a JS `number`.
 *
 * Two layers: a scanner that follows the array (`[`, orders separated by `,`, `]`) and finds
 * where each order ends (tracking strings and escapes, so a `}` inside a string does not end
 * it), and a strict parser of one order's text.
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
const COLON = 0x3a;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function describeChar(text: string, index: number): string {
  if (index >= text.length) return 'the end of the order';
  const c = text.codePointAt(index) as number;
  return JSON.stringify(String.fromCodePoint(c));
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
// One order: a strict JSON object parser that keeps number literals as text.

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const MAX_NESTING = 64;

type Scalar =
  | { kind: 'number'; text: string }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'other'; text: string };

interface MutableOrder {
  id?: bigint;
  petId?: bigint;
  quantity?: number;
  shipDate?: string;
  complete?: boolean;
  status?: string;
}

class OrderReader {
  readonly #text: string;
  readonly #base: number;
  #pos = 0;

  constructor(text: string, base: number) {
    this.#text = text;
    this.#base = base;
  }

  read(): Order {
    const order: MutableOrder = {};
    this.#expect(OPEN_BRACE, `'{'`);
    this.#skipWhitespace();
    if (this.#peek() === CLOSE_BRACE) {
      this.#pos++;
    } else {
      for (;;) {
        this.#skipWhitespace();
        const keyAt = this.#pos;
        const key = this.#readString();
        this.#skipWhitespace();
        this.#expect(COLON, `':'`);
        this.#skipWhitespace();
        this.#readField(order, key, keyAt);
        this.#skipWhitespace();
        const c = this.#peek();
        this.#pos++;
        if (c === COMMA) continue;
        if (c === CLOSE_BRACE) break;
        this.#pos--;
        this.#fail(`expected ',' or '}' in an order`);
      }
    }
    if (this.#pos !== this.#text.length) this.#fail('unexpected text after an order');
    if (order.id === undefined) this.#fail('an order has no "id"', 0);
    return order as Order;
  }

  #readField(order: MutableOrder, key: string, keyAt: number): void {
    switch (key) {
      case 'id':
      case 'petId':
        order[key] = this.#int64(key, keyAt);
        return;
      case 'quantity': {
        const value = this.#scalar();
        const integer = value.kind === 'number' && INTEGER.test(value.text) && Number(value.text);
        if (integer === false || !Number.isSafeInteger(integer))
          this.#wrongType(key, 'an integer', value, keyAt);
        order.quantity = integer;
        return;
      }
      case 'shipDate':
      case 'status': {
        const value = this.#scalar();
        if (value.kind !== 'string') this.#wrongType(key, 'a string', value, keyAt);
        order[key] = value.value;
        return;
      }
      case 'complete': {
        const value = this.#scalar();
        if (value.kind !== 'boolean') this.#wrongType(key, 'a boolean', value, keyAt);
        order.complete = value.value;
        return;
      }
      default:
        // A field this client does not know (a later API version): read and left out.
        this.#skipValue(1);
    }
  }

  #int64(key: string, keyAt: number): bigint {
    const value = this.#scalar();
    if (value.kind === 'number' && INTEGER.test(value.text)) {
      const parsed = BigInt(value.text);
      if (parsed >= INT64_MIN && parsed <= INT64_MAX) return parsed;
    }
    return this.#wrongType(key, 'an integer in the int64 range', value, keyAt);
  }

  #wrongType(key: string, expected: string, value: Scalar, at: number): never {
    const found =
      value.kind === 'string'
        ? `the string ${JSON.stringify(value.value.slice(0, 40))}`
        : value.kind === 'boolean'
          ? String(value.value)
          : value.text.slice(0, 40);
    return this.#fail(`"${key}" must be ${expected}, found ${found}`, at);
  }

  /** A value where a known field's value is expected (objects and arrays are reported). */
  #scalar(): Scalar {
    const c = this.#peek();
    if (c === QUOTE) return { kind: 'string', value: this.#readString() };
    const start = this.#pos;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.#skipValue(1);
      return { kind: 'other', text: c === OPEN_BRACE ? 'an object' : 'an array' };
    }
    if (this.#literal('true')) return { kind: 'boolean', value: true };
    if (this.#literal('false')) return { kind: 'boolean', value: false };
    if (this.#literal('null')) return { kind: 'other', text: 'null' };
    NUMBER.lastIndex = start;
    const match = NUMBER.exec(this.#text);
    if (match === null) this.#fail('expected a value');
    this.#pos = start + match[0].length;
    return { kind: 'number', text: match[0] };
  }

  #skipValue(depth: number): void {
    if (depth > MAX_NESTING) this.#fail(`values nested deeper than ${MAX_NESTING} levels`);
    const c = this.#peek();
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const close = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      this.#pos++;
      this.#skipWhitespace();
      if (this.#peek() === close) {
        this.#pos++;
        return;
      }
      for (;;) {
        this.#skipWhitespace();
        if (close === CLOSE_BRACE) {
          this.#readString();
          this.#skipWhitespace();
          this.#expect(COLON, `':'`);
          this.#skipWhitespace();
        }
        this.#skipValue(depth + 1);
        this.#skipWhitespace();
        const next = this.#peek();
        if (next === COMMA) {
          this.#pos++;
          continue;
        }
        if (next === close) {
          this.#pos++;
          return;
        }
        this.#fail(`expected ',' or '${close === CLOSE_BRACE ? '}' : ']'}'`);
      }
    }
    this.#scalar();
  }

  #literal(word: string): boolean {
    if (!this.#text.startsWith(word, this.#pos)) return false;
    this.#pos += word.length;
    return true;
  }

  /** A JSON string at the position: its value, escapes decoded and checked. */
  #readString(): string {
    const text = this.#text;
    const start = this.#pos;
    if (text.charCodeAt(start) !== QUOTE) this.#fail('expected a string');
    let escapes = false;
    let i = start + 1;
    for (;;) {
      if (i >= text.length) this.#fail('unterminated string', start);
      const c = text.charCodeAt(i);
      if (c === QUOTE) break;
      if (c < 0x20) this.#fail('control character in a string (it must be escaped)', i);
      if (c === BACKSLASH) {
        escapes = true;
        i += 2;
      } else {
        i++;
      }
    }
    this.#pos = i + 1;
    if (!escapes) return text.slice(start + 1, i);
    try {
      return JSON.parse(text.slice(start, i + 1)) as string;
    } catch {
      return this.#fail('invalid escape sequence in a string', start);
    }
  }

  #skipWhitespace(): void {
    while (this.#pos < this.#text.length && isWhitespace(this.#text.charCodeAt(this.#pos)))
      this.#pos++;
  }

  #peek(): number {
    return this.#text.charCodeAt(this.#pos);
  }

  #expect(c: number, what: string): void {
    if (this.#peek() !== c) this.#fail(`expected ${what}`);
    this.#pos++;
  }

  #fail(message: string, at: number = this.#pos): never {
    const found = at === this.#pos ? `, found ${describeChar(this.#text, at)}` : '';
    throw new OrderListParseError(`${message}${found}`, this.#base + at);
  }
}

/** Parses the text of one order (an object): exact int64 fields, strict JSON. */
export function parseOrder(text: string, position = 0): Order {
  return new OrderReader(text, position).read();
}

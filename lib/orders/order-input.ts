/**
 * Reading orders from JSON text (seed files, imports) without losing an int64 digit: number
 * literals are taken from their source text, never from a parsed JS `number`.
 */
import { quotableInput } from '../keys/api-key.ts';
import {
  ORDER_FIELDS,
  ORDER_STATUSES,
  QUANTITY_MAX,
  QUANTITY_MIN,
  readOrderFields,
  type Order,
  type OrderField,
} from './order.ts';

export interface RecordProblem {
  /** Position of the record in the array (0-based). */
  readonly index: number;
  readonly message: string;
  /** Line (1-based) of the text where the record starts, when asked for. */
  readonly line?: number;
}

export type OrdersParseResult =
  | { readonly ok: true; readonly orders: Order[] }
  | { readonly ok: false; readonly problems: RecordProblem[] };

/** A JSON number as it was written in the source text. */
class NumberLiteral {
  readonly source: string;
  constructor(source: string) {
    this.source = source;
  }
}

/** A JSON.parse reviver with Node's `context.source`: the literal text of a primitive value. */
export type SourceReviver = (
  this: unknown,
  key: string,
  value: unknown,
  context?: { source?: string },
) => unknown;

function parseKeepingNumberLiterals(text: string): unknown {
  const reviver: SourceReviver = (_key, value, context) =>
    typeof value === 'number' ? new NumberLiteral(context?.source ?? String(value)) : value;
  return JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
}

/** What each field must hold, as a problem says it. */
const EXPECTED: Readonly<Record<OrderField, string>> = {
  id: 'an integer (int64)',
  petId: 'an integer (int64)',
  quantity: `an integer from ${QUANTITY_MIN} to ${QUANTITY_MAX}`,
  shipDate: 'an ISO 8601 date-time string',
  complete: 'true or false',
  status: `one of ${ORDER_STATUSES.join(', ')}`,
};

function fieldProblem(field: OrderField, value: unknown): string {
  // A number that is no int64 (too large, a fraction, an exponent) is named by its text.
  if ((field === 'id' || field === 'petId') && value instanceof NumberLiteral) {
    return `${field} ${describe(value)} is not an integer in the int64 range`;
  }
  return `${field} must be ${EXPECTED[field]}, got ${describe(value)}`;
}

function describe(value: unknown): string {
  if (value instanceof NumberLiteral) return quotableInput(value.source);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  // A key pasted into a record is not echoed whole; nothing long is echoed whole.
  return typeof value === 'string' ? `"${quotableInput(value)}"` : typeof value;
}

/**
 * The text of a JSON file: a UTF-8 byte-order mark at its start (some editors write one) is
 * not part of the JSON, and is dropped.
 */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/** A JSON syntax error in one readable line: where, without echoing the file's text. */
export function jsonSyntaxProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // V8 quotes a snippet of the text (`…, "[{"id": x}]" is not valid JSON`): not worth echoing.
  const reason = message.replace(/,? ".*" is not valid JSON$/s, '').replace(/^JSON\.parse: /, '');
  return `not valid JSON: ${quotableInput(reason, 120)}`;
}

function readRecord(record: unknown, problems: string[]): Order | undefined {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    problems.push(`must be an object, got ${describe(record)}`);
    return undefined;
  }
  const fields = record as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!(ORDER_FIELDS as readonly string[]).includes(name)) {
      problems.push(`unknown field "${quotableInput(name)}" (allowed: ${ORDER_FIELDS.join(', ')})`);
    }
  }
  const { fields: read, unreadable } = readOrderFields(fields, (value) =>
    value instanceof NumberLiteral ? value.source : undefined,
  );
  if (fields.id === undefined) problems.push('id is required');
  for (const field of unreadable) problems.push(fieldProblem(field, fields[field]));
  return { id: 0n, status: 'pending', ...read };
}

/**
 * The line (1-based) on which each element of a top-level JSON array starts, found by scanning
 * the text (strings and nesting skipped). Meant for text that JSON.parse accepted.
 */
export function recordLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x0a) {
      line++;
      continue;
    }
    if (c === 0x20 || c === 0x09 || c === 0x0d) continue;
    if (depth === 1 && expectElement && c !== 0x5d) {
      lines.push(line);
      expectElement = false;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth === 1) expectElement = true;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x2c && depth === 1) expectElement = true;
  }
  return lines;
}

/**
 * Validates a JSON array of orders in the API's shape. Every record is checked and every
 * problem reported; the orders are returned only when all records are valid. `status` defaults
 * to `pending`; ids must be unique. With `lines`, each record's problems carry the line where
 * the record starts (formatProblem then shows it).
 */
export function parseOrders(text: string, options: { lines?: boolean } = {}): OrdersParseResult {
  let parsed: unknown;
  try {
    parsed = parseKeepingNumberLiterals(withoutByteOrderMark(text));
  } catch (error) {
    return { ok: false, problems: [{ index: -1, message: jsonSyntaxProblem(error) }] };
  }
  if (!Array.isArray(parsed)) {
    return { ok: false, problems: [{ index: -1, message: 'expected a JSON array of orders' }] };
  }
  const orders: Order[] = [];
  const problems: RecordProblem[] = [];
  const seen = new Map<bigint, number>();
  parsed.forEach((record: unknown, index) => {
    const recordProblems: string[] = [];
    const order = readRecord(record, recordProblems);
    if (order && recordProblems.length === 0) {
      const first = seen.get(order.id);
      if (first !== undefined) {
        recordProblems.push(`id ${order.id} repeats the id of record ${first}`);
      } else {
        seen.set(order.id, index);
        orders.push(order);
      }
    }
    for (const message of recordProblems) problems.push({ index, message });
  });
  if (problems.length === 0) return { ok: true, orders };
  if (!options.lines) return { ok: false, problems };
  const lines = recordLines(text);
  return {
    ok: false,
    problems: problems.map((problem) => {
      const line = lines[problem.index];
      return line === undefined ? problem : { ...problem, line };
    }),
  };
}

/** `line L (record I): …` when the line is known, else `record I: …`. */
export function formatProblem(problem: RecordProblem): string {
  if (problem.index < 0) return problem.message;
  const where =
    problem.line === undefined
      ? `record ${problem.index}`
      : `line ${problem.line} (record ${problem.index})`;
  return `${where}: ${problem.message}`;
}

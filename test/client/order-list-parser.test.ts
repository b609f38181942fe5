/**
 * The client's incremental order-list parser: whatever way the body is cut into chunks, the same
 * orders come out, int64 exact; malformed or truncated bodies fail with a clear error.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OrderListParseError, type Order } from '../../client/src/index.ts';
import { OrderListParser, parseOrderList } from '../../client/src/order-list-parser.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Parses `text` pushed in the given pieces. */
function parseInChunks(text: string, cuts: readonly number[]): Order[] {
  const parser = new OrderListParser();
  const points = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
  const orders: Order[] = [];
  let from = 0;
  for (const to of [...points, text.length]) {
    orders.push(...parser.push(text.slice(from, to)));
    from = to;
  }
  parser.end();
  return orders;
}

/** An order's JSON as the API could write it, with whitespace and an escape-laden status. */
function writeOrder(order: Order, space: string): string {
  const parts = [`"id"${space}:${space}${order.id}`];
  if (order.petId !== undefined) parts.push(`"petId":${space}${order.petId}`);
  if (order.quantity !== undefined) parts.push(`"quantity":${order.quantity}`);
  if (order.shipDate !== undefined) parts.push(`"shipDate":${JSON.stringify(order.shipDate)}`);
  if (order.complete !== undefined) parts.push(`"complete":${order.complete}`);
  if (order.status !== undefined) parts.push(`"status":${jsonWithEscapes(order.status)}`);
  return `{${space}${parts.join(`,${space}`)}${space}}`;
}

/** JSON for a string with every character \u-escaped half the time (still the same value). */
function jsonWithEscapes(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) as number;
    if (code > 0xffff || Math.random() < 0.5) {
      out += JSON.stringify(char).slice(1, -1);
    } else {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    }
  }
  return `${out}"`;
}

const int64 = fc.bigInt({ min: INT64_MIN, max: INT64_MAX });
const orderArb: fc.Arbitrary<Order> = fc.record(
  {
    id: fc.oneof(int64, fc.constantFrom(9007199254740993n, INT64_MAX, INT64_MIN, 0n)),
    petId: int64,
    quantity: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    shipDate: fc.string({ unit: 'binary' }),
    complete: fc.boolean(),
    status: fc.oneof(
      fc.constantFrom('pending', 'shipped', 'cancelled'),
      fc.string({ unit: 'binary' }),
    ),
  },
  { requiredKeys: ['id'] },
);
const whitespace = fc.constantFrom('', ' ', '\n', '\r\n\t ', '  ');

describe('the order list parser', () => {
  it('reads the same orders however the body is cut into chunks', () => {
    fc.assert(
      fc.property(
        fc.array(orderArb, { maxLength: 12 }),
        whitespace,
        fc.array(fc.nat({ max: 4000 }), { maxLength: 30 }),
        (orders, space, cuts) => {
          const text = `${space}[${space}${orders.map((o) => writeOrder(o, space)).join(`${space},${space}`)}${space}]${space}`;
          expect(parseInChunks(text, cuts)).toEqual(orders);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('cuts inside escapes, surrogate pairs and numbers change nothing (one-character chunks)', () => {
    const text =
      '[{"id":9223372036854775807,"petId":-9223372036854775808,"shipDate":"a\\"}]\\\\\\u00e9\\ud83d\\ude00 😀 é","status":"pending"},' +
      '{"id":9007199254740993,"quantity":0,"complete":false,"status":"}{]["}]';
    const cuts = Array.from({ length: text.length }, (_, i) => i);
    expect(parseInChunks(text, cuts)).toEqual([
      {
        id: INT64_MAX,
        petId: INT64_MIN,
        shipDate: 'a"}]\\é😀 😀 é',
        status: 'pending',
      },
      { id: 9007199254740993n, quantity: 0, complete: false, status: '}{][' },
    ]);
  });

  it('keeps int64 digits exact where a JS number would not', () => {
    const [order] = parseOrderList('[{"id":9007199254740993,"petId":9223372036854775806}]');
    expect(order?.id).toBe(9007199254740993n);
    expect(order?.petId).toBe(9223372036854775806n);
    expect(JSON.parse('9007199254740993')).toBe(9007199254740992); // what JSON.parse would give
  });

  it('reads a number whose value is an integer as that integer (1e3, 1.0), exact past 2^53', () => {
    expect(parseOrderList('[{"id":1e3,"petId":1.0,"quantity":2E1}]')).toEqual([
      { id: 1000n, petId: 1n, quantity: 20 },
    ]);
    expect(parseOrderList('[{"id":-9223372036854775808,"petId":9007199254740993}]')).toEqual([
      { id: INT64_MIN, petId: 9007199254740993n },
    ]);
  });

  it('finds the digits of an int64 past 2^53 wherever the order puts it', () => {
    expect(
      parseOrderList(
        '[{"id":9007199254740993,"id":9007199254740995},' + // the last of a key, as JSON.parse
          '{"status":"\\"id\\":1","x":{"id":3},"petId":-9007199254740993,"id":9007199254740997},' +
          '{"\\u0069d" : 9223372036854775807}]',
      ),
    ).toEqual([
      { id: 9007199254740995n },
      { id: 9007199254740997n, petId: -9007199254740993n, status: '"id":1' },
      { id: INT64_MAX },
    ]);
  });

  it('reads an empty array, with or without whitespace', () => {
    expect(parseOrderList('[]')).toEqual([]);
    expect(parseOrderList(' \n[ \t\r\n] \n')).toEqual([]);
  });

  it('skips fields it does not know, whatever their shape, and keeps the ones it knows', () => {
    expect(
      parseOrderList(
        '[{"id":1,"note":"x","tags":["a",{"b":[1e3,-0.5,null,true]}],"extra":{},"status":"shipped"}]',
      ),
    ).toEqual([{ id: 1n, status: 'shipped' }]);
  });

  it.each([
    ['', 0, /the body is empty/],
    ['{"id":1}', 0, /expected '\[' \(the start of the list\), found "\{"/],
    ['[{"id":1}', 9, /the list ended early, after 1 order\(s\)/],
    ['[{"id":1},', 10, /the list ended early/],
    ['[{"id":1,"status":"pen', 22, /the list ended early, after 0 order/],
    ['[{"id":1},]', 10, /expected an order \('\{'\) after ',', found "]"/],
    ['[{"id":1} {"id":2}]', 10, /expected ',' or ']' after an order/],
    ['[1,2]', 1, /expected an order/],
    ['[{"id":1}] x', 11, /unexpected text after the end of the list/],
    ['[{"id":1.5}]', 1, /"id" must be an integer in the int64 range, found 1.5/],
    ['[{"id":"7"}]', 1, /"id" must be an integer in the int64 range, found the string "7"/],
    ['[{"id":9223372036854775808}]', 1, /int64 range, found 9223372036854775808/],
    ['[{"id":9223372036854775807e0}]', 1, /int64 range, found 9223372036854775807e0/],
    ['[{"id":1,"petId":-9223372036854775809}]', 1, /"petId" must be an integer in the int64/],
    ['[{"id":01}]', 8, /an order is not valid JSON \(Unexpected number\)/],
    ['[{"id":1,"quantity":"2"}]', 1, /"quantity" must be an integer, found the string "2"/],
    ['[{"id":1,"quantity":2.5}]', 1, /"quantity" must be an integer, found 2.5/],
    ['[{"id":1,"complete":1}]', 1, /"complete" must be a boolean, found 1/],
    ['[{"id":1,"status":null}]', 1, /"status" must be a string, found null/],
    ['[{"id":1,"status":{"a":1}}]', 1, /"status" must be a string, found an object/],
    ['[{"petId":1}]', 1, /an order has no "id"/],
    ['[{"id":1,"s":"a\\x"}]', 16, /not valid JSON \(Bad escaped character\)/],
    ['[{"id":1,"s":"a\nb"}]', 15, /not valid JSON \(Bad control character in string literal\)/],
    ['[{"id":1,}]', 9, /not valid JSON \(Expected double-quoted property name\)/],
    ['[{"id":1 "x":2}]', 9, /not valid JSON \(Expected ',' or '}' after property value\)/],
    ['[{"id":1,"x":[1,}]}]', 1, /not valid JSON \(Unexpected token '}'\)$/],
    ['[{"id":1,"x":tru}]', 1, /not valid JSON \(Unexpected token '}'\)$/],
    ["[{'id':1}]", 2, /not valid JSON \(Expected property name or '}'\)/],
  ])('refuses %j with a clear error at character %i', (text, position, message) => {
    const error = catchError(() => parseOrderList(text));
    expect(error).toBeInstanceOf(OrderListParseError);
    expect((error as OrderListParseError).message).toMatch(message);
    expect((error as OrderListParseError).message).toMatch(/^Malformed order list at character/);
    expect((error as OrderListParseError).position).toBe(position);
  });

  it('finds the same fault at the same position whatever the chunks', () => {
    const text = '[{"id":1},{"id":2,"complete":"yes"},{"id":3}]';
    fc.assert(
      fc.property(fc.array(fc.nat({ max: text.length }), { maxLength: 10 }), (cuts) => {
        const error = catchError(() => parseInChunks(text, cuts));
        expect(error).toBeInstanceOf(OrderListParseError);
        expect((error as OrderListParseError).position).toBe(10);
      }),
    );
  });

  it('yields each order as soon as its closing brace arrives', () => {
    const parser = new OrderListParser();
    expect([...parser.push('[{"id":1},{"id"')]).toEqual([{ id: 1n }]);
    expect([...parser.push(':2')]).toEqual([]);
    expect([...parser.push('}')]).toEqual([{ id: 2n }]);
    expect([...parser.push(']')]).toEqual([]);
    parser.end();
    expect(parser.count).toBe(2);
  });

  it('holds one order at a time: an order longer than the limit is refused, a long list is not', () => {
    const parser = new OrderListParser({ maxOrderLength: 100 });
    const orders = [...parser.push('[')];
    for (let i = 0; i < 10_000; i++) orders.push(...parser.push(`${i ? ',' : ''}{"id":${i}}`));
    orders.push(...parser.push(']'));
    parser.end();
    expect(orders).toHaveLength(10_000);

    const long = new OrderListParser({ maxOrderLength: 100 });
    const error = catchError(() => {
      return [
        ...long.push(`[{"id":1},{"id":2,"shipDate":"${'x'.repeat(60)}`),
        ...long.push(`${'y'.repeat(60)}"}]`),
      ];
    });
    expect(error).toBeInstanceOf(OrderListParseError);
    expect((error as Error).message).toMatch(/at character 10: an order is longer than 100/);
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INT64_MAX, INT64_MIN, orderToJson, parseInt64 } from '../../lib/orders/order.ts';
import { InvalidOrderId, parseOrderId } from '../../lib/orders/operations.ts';

describe('parseInt64', () => {
  it.each([
    ['0', 0n],
    ['42', 42n],
    ['-7', -7n],
    ['007', 7n],
    ['9223372036854775807', INT64_MAX],
    ['-9223372036854775808', INT64_MIN],
    ['9007199254740993', 9007199254740993n],
  ])('reads %s exactly', (text, expected) => {
    expect(parseInt64(text)).toBe(expected);
  });

  it.each([
    'abc',
    '1.5',
    '1e3',
    '0x10',
    '+5',
    ' 5',
    '5 ',
    '',
    '-',
    '9223372036854775808',
    '-9223372036854775809',
    '99999999999999999999999',
    '１２',
  ])('refuses %j', (text) => {
    expect(parseInt64(text)).toBeUndefined();
  });

  it('round-trips every int64 through its decimal text', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), (value) => {
        expect(parseInt64(value.toString())).toBe(value);
      }),
    );
  });
});

describe('parseOrderId', () => {
  it('refuses a malformed id with InvalidOrderId, quoting it', () => {
    expect(() => parseOrderId('1e3')).toThrow(new InvalidOrderId('1e3').message);
    expect(new InvalidOrderId('1e3').message).toBe(
      'The order id "1e3" is not a base-10 integer in the int64 range.',
    );
  });

  it('refuses a missing parameter with InvalidOrderId', () => {
    expect(() => parseOrderId(undefined)).toThrow(InvalidOrderId);
  });
});

describe('orderToJson', () => {
  it('writes int64 digits exactly and omits absent fields', () => {
    const json = orderToJson({ id: INT64_MAX, petId: 9007199254740993n, status: 'pending' });
    expect(json).toBe('{"id":9223372036854775807,"petId":9007199254740993,"status":"pending"}');
  });

  it('writes every field in schema order, escaping strings', () => {
    const json = orderToJson({
      id: 1n,
      petId: 2n,
      quantity: 3,
      shipDate: '2026-01-01T00:00:00Z',
      complete: true,
      status: 'shipped',
    });
    expect(JSON.parse(json)).toEqual({
      id: 1,
      petId: 2,
      quantity: 3,
      shipDate: '2026-01-01T00:00:00Z',
      complete: true,
      status: 'shipped',
    });
    expect(Object.keys(JSON.parse(json) as object)).toEqual([
      'id',
      'petId',
      'quantity',
      'shipDate',
      'complete',
      'status',
    ]);
  });

  it('produces JSON whose ids read back exactly with a source-text reviver', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
        fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
        (id, petId) => {
          const json = orderToJson({ id, petId, status: 'cancelled' });
          const ids: string[] = [];
          JSON.parse(json, (key, value, context?: { source?: string }) => {
            if (key === 'id' || key === 'petId') ids.push(context?.source ?? '');
            return value as unknown;
          });
          expect(ids).toEqual([id.toString(), petId.toString()]);
        },
      ),
    );
  });
});

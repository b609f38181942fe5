import { describe, expect, it } from 'vitest';
import { formatProblem, parseOrders } from '../../lib/orders/order-input.ts';

describe('parseOrders', () => {
  it('reads int64 ids digit for digit and defaults status to pending', () => {
    const result = parseOrders(
      '[{"id": 9223372036854775807, "petId": 9007199254740993, "quantity": 2}]',
    );
    expect(result).toEqual({
      ok: true,
      orders: [
        { id: 9223372036854775807n, petId: 9007199254740993n, quantity: 2, status: 'pending' },
      ],
    });
  });

  it('keeps every allowed field', () => {
    const result = parseOrders(
      '[{"id":1,"petId":2,"quantity":0,"shipDate":"2026-11-22T10:00:00.5+01:00","complete":true,"status":"shipped"}]',
    );
    expect(result.ok && result.orders[0]).toEqual({
      id: 1n,
      petId: 2n,
      quantity: 0,
      shipDate: '2026-11-22T10:00:00.5+01:00',
      complete: true,
      status: 'shipped',
    });
  });

  it('reports every problem of every record with its index, and returns no orders', () => {
    const result = parseOrders(
      JSON.stringify([
        { id: 1 },
        { id: 1.5 },
        { petId: 3 },
        { id: 4, status: 'lost', colour: 'red' },
        { id: 1 },
        'nope',
      ]).replace('1.5', '1.5'),
    );
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems.map(formatProblem);
    expect(problems).toEqual([
      'record 1: id 1.5 is not an integer in the int64 range',
      'record 2: id is required',
      'record 3: unknown field "colour" (allowed: id, petId, quantity, shipDate, complete, status)',
      'record 3: status must be one of pending, shipped, cancelled, got "lost"',
      'record 4: id 1 repeats the id of record 0',
      'record 5: must be an object, got "nope"',
    ]);
  });

  it.each([
    [
      '[{"id": 9223372036854775808}]',
      'id 9223372036854775808 is not an integer in the int64 range',
    ],
    ['[{"id": "12"}]', 'id must be an integer (int64), got "12"'],
    ['[{"id": 1e3}]', 'id 1e3 is not an integer in the int64 range'],
    ['[{"id": 1, "quantity": -1}]', 'quantity must be an integer from 0 to 2147483647, got -1'],
    ['[{"id": 1, "quantity": 2.0}]', 'quantity must be an integer from 0 to 2147483647, got 2.0'],
    [
      '[{"id": 1, "shipDate": "tomorrow"}]',
      'shipDate must be an ISO 8601 date-time string, got "tomorrow"',
    ],
    ['[{"id": 1, "complete": "yes"}]', 'complete must be true or false, got "yes"'],
  ])('refuses %s', (text, message) => {
    const result = parseOrders(text);
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual([message]);
  });

  it('refuses text that is not JSON, or not an array', () => {
    expect(parseOrders('[{').ok).toBe(false);
    const notArray = parseOrders('{"id": 1}');
    expect(notArray.ok ? '' : formatProblem(notArray.problems[0]!)).toBe(
      'expected a JSON array of orders',
    );
  });
});

/**
 * The v2 list's query (lib/orders/list-query.ts), filters (order-filter.ts) and page tokens
 * (page-token.ts): what a request may ask, what it is refused with, and tokens that never read
 * as another page.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../lib/api/errors.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import {
  fromMultiValue,
  nextPageParameters,
  parseListQuery,
  type ListQuery,
  type ListQueryError,
  type ListQueryErrorCode,
} from '../../lib/orders/list-query.ts';
import {
  comparePositions,
  orderMatches,
  positionOf,
  type OrderFilter,
  type PagePosition,
} from '../../lib/orders/order-filter.ts';
import { INT64_MAX, INT64_MIN, ORDER_STATUSES, type Order } from '../../lib/orders/order.ts';
import { decodePageToken, encodePageToken } from '../../lib/orders/page-token.ts';

const instant = (text: string) => parseInstant(text)!;

function ok(query: string): ListQuery {
  const result = parseListQuery(new URLSearchParams(query));
  if ('error' in result) throw new Error(`refused: ${result.error.message}`);
  return result.ok;
}

function refused(query: string | [string, string][]): ListQueryError {
  const result = parseListQuery(typeof query === 'string' ? new URLSearchParams(query) : query);
  if ('ok' in result) throw new Error(`accepted: ${query.toString()}`);
  return result.error;
}

describe('the list query', () => {
  it('is every order, 50 a page, from the start, when nothing is given', () => {
    expect(ok('')).toEqual({ filter: {}, pageSize: 50 });
  });

  it('reads every filter: statuses once each in their own order, petId to the last digit, dates as instants', () => {
    expect(
      ok(
        'status=shipped&status=pending&status=shipped&petId=9223372036854775807' +
          '&shipDateFrom=2026-11-01T01:00:00%2B01:00&shipDateTo=2026-12-01T00:00:00.000000001Z&complete=false&pageSize=7',
      ),
    ).toEqual({
      filter: {
        statuses: ['pending', 'shipped'],
        petId: INT64_MAX,
        shipDate: {
          from: instant('2026-11-01T00:00:00Z'),
          to: instant('2026-12-01T00:00:00Z') + 1n,
        },
        complete: false,
      },
      pageSize: 7,
    });
    expect(ok('shipDateTo=2026-12-01T00:00:00Z').filter).toEqual({
      shipDate: { to: instant('2026-12-01T00:00:00Z') },
    });
    expect(ok('complete=true&petId=-5').filter).toEqual({ petId: -5n, complete: true });
  });

  it.each([
    ['1', 1],
    ['007', 7],
    ['100', 100],
    ['101', 100],
    ['99999999999999999999999999', 100],
  ])('serves pageSize=%s as %i', (size, served) => {
    expect(ok(`pageSize=${size}`).pageSize).toBe(served);
  });

  it.each(['0', '00', '-1', '1.5', '1e2', '+5', '', ' 5', 'ten'])(
    'refuses pageSize=%j with INVALID_PARAMETER',
    (size) => {
      expect(refused(`pageSize=${encodeURIComponent(size)}`)).toMatchObject({
        code: 'INVALID_PARAMETER',
        message: expect.stringContaining('pageSize must be a whole number from 1') as unknown,
      });
    },
  );

  it.each([
    ['status=lost', 'status', 'status must be pending, shipped, cancelled'],
    ['status=', 'status', 'got ""'],
    ['status=Pending', 'status', 'got "Pending"'],
    ['petId=1e3', 'petId', 'petId must be a base-10 integer in the int64 range'],
    ['petId=9223372036854775808', 'petId', 'int64 range'],
    ['petId=1&petId=1', 'petId', 'petId may be given once'],
    ['shipDateFrom=2026-02-30T00:00:00Z', 'shipDateFrom', 'RFC 3339 date-time'],
    ['shipDateFrom=2026-11-01', 'shipDateFrom', 'RFC 3339 date-time'],
    ['shipDateTo=2026-11-01T00:00:00', 'shipDateTo', 'RFC 3339 date-time'],
    ['complete=TRUE', 'complete', 'complete must be true or false, got "TRUE"'],
    ['complete=true&complete=false', 'complete', 'complete may be given once'],
    ['pageToken=a&pageToken=b', 'pageToken', 'pageToken may be given once'],
  ])('refuses %s with INVALID_PARAMETER', (query, parameter, message) => {
    const error = refused(query);
    expect(error.code).toBe('INVALID_PARAMETER');
    // The message names the parameter at fault, first.
    expect(error.message.startsWith(parameter)).toBe(true);
    expect(error.message).toContain(message);
  });

  it('says how to send a + when an offset arrived as a space', () => {
    expect(refused('shipDateFrom=2026-11-01T00:00:00+01:00').message).toContain(
      'a + in a query string must be sent as %2B',
    );
  });

  it('refuses a parameter it does not take, before anything else, naming it', () => {
    for (const name of ['limit', 'Status', 'page_size', '']) {
      const error = refused([
        ['status', 'lost'],
        [name, 'x'],
      ]);
      expect(error.code).toBe('UNKNOWN_PARAMETER');
      expect(error.message).toContain(`Unknown query parameter "${name}"`);
    }
  });

  it('refuses an empty or inverted date range, comparing instants, not texts', () => {
    const empty = refused(
      'shipDateFrom=2026-11-01T01:00:00%2B01:00&shipDateTo=2026-11-01T00:00:00Z',
    );
    expect(empty.code).toBe('INVALID_DATE_RANGE');
    expect(empty.message).toContain('this range is empty');
    expect(
      refused('shipDateFrom=2026-12-01T00:00:00Z&shipDateTo=2026-11-01T00:00:00Z').message,
    ).toContain('this range is inverted');
    // Earlier as text, later as an instant: inverted.
    expect(
      refused('shipDateFrom=2026-11-01T00:30:00-01:00&shipDateTo=2026-11-01T01:00:00Z').code,
    ).toBe('INVALID_DATE_RANGE');
  });

  it('starts after the token’s position, with the same filters in any order and any page size', () => {
    const token = encodePageToken(ok('status=pending&status=cancelled').filter, { id: 42n });
    const query = ok(
      `status=cancelled&status=pending&status=pending&pageSize=3&pageToken=${token}`,
    );
    expect(query).toEqual({
      filter: { statuses: ['pending', 'cancelled'] },
      pageSize: 3,
      start: { id: 42n },
    });
    // An empty token is no token (AIP-158): the first page.
    expect(ok('pageToken=').start).toBeUndefined();
  });

  it('refuses a token made for other filters, or damaged, with INVALID_PAGE_TOKEN saying which', () => {
    const token = encodePageToken({ statuses: ['pending'] }, { id: 42n });
    expect(refused(`status=shipped&pageToken=${token}`)).toMatchObject({
      code: 'INVALID_PAGE_TOKEN',
      message: expect.stringContaining('issued for other filters') as unknown,
    });
    expect(refused(`pageToken=${token}`).message).toContain('issued for other filters');
    expect(refused(`status=pending&pageToken=${token.slice(0, -2)}`).message).toContain(
      'altered or cut short',
    );
    expect(refused('status=pending&pageToken=not%20a%20token').message).toContain(
      'not a page token of this list',
    );
  });

  it('takes API Gateway’s multi-value parameters, and keeps the request’s own for the next link', () => {
    const pairs = fromMultiValue({
      status: ['pending', 'shipped'],
      petId: ['7'],
      empty: undefined,
    });
    expect(pairs).toEqual([
      ['status', 'pending'],
      ['status', 'shipped'],
      ['petId', '7'],
    ]);
    expect(fromMultiValue(null)).toEqual([]);
    expect(nextPageParameters([...pairs, ['pageToken', 'old'], ['pageSize', '5']], 'new')).toEqual([
      ['status', 'pending'],
      ['status', 'shipped'],
      ['petId', '7'],
      ['pageSize', '5'],
      ['pageToken', 'new'],
    ]);
  });

  it('writes a repeated status once in the next link: 600 repeats make no longer a link than one', () => {
    const repeated: [string, string][] = Array.from({ length: 600 }, (_, i) => [
      'status',
      i % 2 ? 'pending' : 'cancelled',
    ]);
    const query = parseListQuery(repeated);
    expect(query).toMatchObject({ ok: { filter: { statuses: ['pending', 'cancelled'] } } });
    expect(nextPageParameters([...repeated, ['pageSize', '1']], 'next')).toEqual([
      ['status', 'cancelled'],
      ['status', 'pending'],
      ['pageSize', '1'],
      ['pageToken', 'next'],
    ]);
  });
});

describe('the codes of a refused query', () => {
  it('are in the error catalogue, each a 400', () => {
    // A code the catalogue lacks does not compile here.
    const codes: Record<ListQueryErrorCode, ErrorCode> = {
      UNKNOWN_PARAMETER: 'UNKNOWN_PARAMETER',
      INVALID_PARAMETER: 'INVALID_PARAMETER',
      INVALID_DATE_RANGE: 'INVALID_DATE_RANGE',
      INVALID_PAGE_TOKEN: 'INVALID_PAGE_TOKEN',
    };
    for (const code of Object.values(codes)) expect(ERROR_CATALOGUE[code].status).toBe(400);
  });
});

describe('which orders a filter matches', () => {
  const order: Order = {
    id: 5n,
    petId: 7n,
    shipDate: '2026-11-01T01:00:00+01:00',
    complete: false,
    status: 'pending',
  };

  it('ANDs the filters, ORs the statuses, compares ship dates as instants (from inclusive, to exclusive)', () => {
    const at = instant('2026-11-01T00:00:00Z');
    expect(orderMatches({}, order)).toBe(true);
    expect(
      orderMatches({ statuses: ['shipped', 'pending'], petId: 7n, complete: false }, order),
    ).toBe(true);
    expect(orderMatches({ statuses: ['shipped'] }, order)).toBe(false);
    expect(orderMatches({ petId: 8n }, order)).toBe(false);
    expect(orderMatches({ complete: true }, order)).toBe(false);
    expect(orderMatches({ shipDate: { from: at } }, order)).toBe(true);
    expect(orderMatches({ shipDate: { to: at } }, order)).toBe(false);
    expect(orderMatches({ shipDate: { from: at + 1n } }, order)).toBe(false);
  });

  it('matches a filter on a field only when the order has the field', () => {
    const bare: Order = { id: 1n, status: 'shipped' };
    expect(orderMatches({ petId: 0n }, bare)).toBe(false);
    expect(orderMatches({ complete: false }, bare)).toBe(false);
    expect(orderMatches({ shipDate: { to: INT64_MAX } }, bare)).toBe(false);
    expect(
      orderMatches({ shipDate: { from: 0n } }, { ...bare, shipDate: '2026-02-30T00:00:00Z' }),
    ).toBe(false);
    expect(positionOf(bare, 'shipDate')).toBeUndefined();
    expect(positionOf(order, 'shipDate')).toEqual({
      instant: instant('2026-11-01T00:00:00Z'),
      id: 5n,
    });
  });
});

describe('page tokens', () => {
  const int64 = fc.bigInt({ min: INT64_MIN, max: INT64_MAX });
  const someInstant = fc.bigInt({
    min: instant('0000-01-01T00:00:00Z'),
    max: instant('9999-12-31T23:59:59Z'),
  });
  const filterArb: fc.Arbitrary<OrderFilter> = fc.record(
    {
      statuses: fc.subarray([...ORDER_STATUSES], { minLength: 1 }),
      petId: int64,
      shipDate: fc.oneof(
        fc.record({ from: someInstant }),
        fc.record({ to: someInstant }),
        fc.record({ from: someInstant, to: someInstant }),
      ),
      complete: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const tokenCase = filterArb.chain((filter) =>
    fc.record({
      filter: fc.constant(filter),
      position: filter.shipDate
        ? fc.record({ instant: someInstant, id: int64 })
        : fc.record({ id: int64 }),
    }),
  ) as fc.Arbitrary<{ filter: OrderFilter; position: PagePosition }>;

  it('decode to the position they were made with, for the filters they were made for', () => {
    fc.assert(
      fc.property(tokenCase, ({ filter, position }) => {
        const token = encodePageToken(filter, position);
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodePageToken(token, filter)).toEqual({ position });
      }),
    );
  });

  it('are refused when any byte is altered, or the token is cut short, or a character changed', () => {
    fc.assert(
      fc.property(
        tokenCase,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.nat(),
        ({ filter, position }, at, flip, cut) => {
          const token = encodePageToken(filter, position);
          const bytes = Buffer.from(token, 'base64url');
          const altered = Buffer.from(bytes);
          altered[at % bytes.length]! ^= flip;
          expect(decodePageToken(altered.toString('base64url'), filter)).not.toHaveProperty(
            'position',
          );
          expect(decodePageToken(token.slice(0, cut % token.length), filter)).not.toHaveProperty(
            'position',
          );
          const i = at % token.length;
          const other = token[i] === 'A' ? 'B' : 'A';
          const changed = `${token.slice(0, i)}${other}${token.slice(i + 1)}`;
          expect(decodePageToken(changed, filter)).not.toHaveProperty('position');
        },
      ),
    );
  });

  it('are refused for any other filters', () => {
    fc.assert(
      fc.property(tokenCase, filterArb, ({ filter, position }, other) => {
        fc.pre(JSON.stringify(filter, big) !== JSON.stringify(other, big));
        expect(decodePageToken(encodePageToken(filter, position), other)).toEqual({
          problem: 'other-filters',
        });
      }),
    );
  });

  it('of version 1, as issued, keep decoding in every later release', () => {
    expect(
      decodePageToken('AduQLajxQUeigAAAAAAAACqS-lkIUV6GmQ', { statuses: ['pending'] }),
    ).toEqual({
      position: { id: 42n },
    });
    const filter = { petId: 7n, shipDate: { from: instant('2026-11-01T00:00:00Z') } };
    expect(decodePageToken('Ac5WI12av0MtgAAAABjkMG35wFUAAAAAAAAAAADXS1TRevFyrw', filter)).toEqual({
      position: { instant: instant('2026-11-02T10:30:00.5+01:00'), id: INT64_MIN },
    });
  });

  it('of a version never issued are refused as such', () => {
    const body = Buffer.from(encodePageToken({}, { id: 1n }), 'base64url').subarray(0, -8);
    body[0] = 9;
    const token = Buffer.concat([body, createHash('sha256').update(body).digest().subarray(0, 8)]);
    expect(decodePageToken(token.toString('base64url'), {})).toEqual({
      problem: 'unknown-version',
    });
  });

  it('order positions by instant, then id', () => {
    expect(comparePositions({ instant: 1n, id: 9n }, { instant: 2n, id: 1n })).toBe(-1);
    expect(comparePositions({ instant: 2n, id: 1n }, { instant: 2n, id: 1n })).toBe(0);
    expect(comparePositions({ id: 3n }, { id: -3n })).toBe(1);
  });
});

function big(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}

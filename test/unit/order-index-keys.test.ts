/**
 * The v2 list's keys: RFC 3339 date-times as exact instants, and the derived index attributes;
 * which indexes ORDERS_INDEXES names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseInstant } from '../../lib/orders/instant.ts';
import {
  derivedIndexAttributes,
  effectiveStatus,
  statusOfShard,
  statusShard,
} from '../../lib/dynamodb/order-index-keys.ts';
import { deployedOrderIndexes, ordersIndexesEnv } from '../../lib/dynamodb/order-indexes.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';

/** An instant written as an RFC 3339 date-time at an offset of `minutes`, to the nanosecond. */
function writeAt(ns: bigint, minutes: number): string {
  const local = ns + BigInt(minutes) * 60_000_000_000n;
  const second = local / 1_000_000_000n - (local % 1_000_000_000n < 0n ? 1n : 0n);
  const nanos = local - second * 1_000_000_000n;
  const text = new Date(Number(second) * 1000).toISOString().slice(0, 19);
  const hours = String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0');
  const offset =
    minutes === 0
      ? 'Z'
      : `${minutes < 0 ? '-' : '+'}${hours}:${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
  return `${text}.${nanos.toString().padStart(9, '0')}${offset}`;
}

describe('parseInstant', () => {
  it.each([
    ['1970-01-01T00:00:00Z', 0n],
    ['1970-01-01T00:00:00.5Z', 500_000_000n],
    ['1970-01-01T00:00:00.123456789Z', 123_456_789n],
    ['1970-01-01T01:00:00+01:00', 0n],
    ['1969-12-31T23:00:00-01:00', 0n],
    ['1970-01-01t00:00:01z', 1_000_000_000n],
    ['1970-01-01T00:00:00-00:00', 0n],
    ['2024-02-29T00:00:00Z', 1_709_164_800_000_000_000n],
    ['0000-01-01T00:00:00Z', -62_167_219_200_000_000_000n],
    ['9999-12-31T23:59:59Z', 253_402_300_799_000_000_000n],
  ])('reads %s as %s ns', (text, expected) => {
    expect(parseInstant(text)).toBe(expected);
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-12-31T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+01:60',
    '2026-01-01T00:00:00',
    '2026-01-01 00:00:00Z',
    '2026-01-01T00:00:00.1234567891Z',
    '2026-01-01T00:00:00.Z',
    '2026-01-01T00:00Z',
    '2026-01-01',
    '+2026-01-01T00:00:00Z',
    '2026-01-01T00:00:00+0100',
    '２０２６-01-01T00:00:00Z',
  ])('refuses %j', (text) => {
    expect(parseInstant(text)).toBeUndefined();
  });

  it('reads every instant a Date writes, to the millisecond', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => {
        expect(parseInstant(new Date(ms).toISOString())).toBe(BigInt(ms) * 1_000_000n);
      }),
    );
  });

  it('reads the same instant whatever the offset and however many fraction digits it is written with', () => {
    // Instants whose local time at any offset is in the years 0000 to 9999.
    const inner = fc.bigInt({
      min: parseInstant('0000-01-02T00:00:00Z')!,
      max: parseInstant('9999-12-30T23:59:59.999999999Z')!,
    });
    fc.assert(
      fc.property(inner, fc.integer({ min: -1439, max: 1439 }), (ns, minutes) => {
        expect(parseInstant(writeAt(ns, minutes))).toBe(ns);
      }),
    );
  });
});

describe('the derived index keys', () => {
  it('are the effective status and the shard, and an instant only for an RFC 3339 ship date', () => {
    expect(
      derivedIndexAttributes({ id: 9n, status: 'shipped', shipDate: '1970-01-01T00:00:01Z' }),
    ).toEqual({ s: 's1', t: 1_000_000_000n });
    // No status is pending; a negative id's shard is taken non-negative.
    expect(derivedIndexAttributes({ id: -1n })).toEqual({ s: 'p7' });
    // A cancel's trail makes an order cancelled, whatever its status.
    expect(derivedIndexAttributes({ id: 2n, status: 'pending', cancelled: true })).toEqual({
      s: 'c2',
    });
    // A status the service does not know is in no status index; a ship date Date.parse rolls
    // over is in no date index.
    expect(
      derivedIndexAttributes({ id: 1n, status: 'lost', shipDate: '2026-02-30T00:00:00Z' }),
    ).toEqual({});
    expect(derivedIndexAttributes({ id: 1n, status: 'pending', shipDate: 7 })).toEqual({
      s: 'p1',
    });
  });

  it('name a status by its initial, read back as the status', () => {
    for (const status of ['pending', 'shipped', 'cancelled'] as const) {
      expect(statusOfShard(statusShard(status, 5))).toBe(status);
    }
    expect(statusOfShard('x3')).toBeUndefined();
    expect(statusOfShard(3)).toBeUndefined();
    expect(effectiveStatus({ status: 'shipped' })).toBe('shipped');
    expect(effectiveStatus({ status: 'lost' })).toBeUndefined();
    expect(effectiveStatus({})).toBe('pending');
    expect(effectiveStatus({ status: 'pending', cancelled: true })).toBe('cancelled');
  });

  it('order a date index as (instant, id): the instants are numbers, exact', () => {
    // Nanoseconds of year 9999 pass 2^53 by far: a bigint, never a JS number.
    const late = derivedIndexAttributes({ id: 1n, shipDate: '9999-12-31T23:59:59.999999999Z' });
    expect(late.t).toBe(253_402_300_799_999_999_999n);
  });
});

describe('ORDERS_INDEXES', () => {
  it('names every index by default, or some of them, or none', () => {
    expect([...deployedOrderIndexes(ordersIndexesEnv())]).toEqual(ORDER_INDEX_NAMES);
    expect(ordersIndexesEnv([])).toEqual({ ORDERS_INDEXES: 'none' });
    expect(ordersIndexesEnv(['ordersByPet', 'ordersByStatus'])).toEqual({
      ORDERS_INDEXES: 'ordersByPet,ordersByStatus',
    });
    expect([...deployedOrderIndexes({ ORDERS_INDEXES: 'none' })]).toEqual([]);
  });

  it('fails fast, naming the variable, when it is unset or names an index the code does not know', () => {
    expect(() => deployedOrderIndexes({})).toThrow(
      'Environment variable ORDERS_INDEXES is not set',
    );
    // byPet: an index of an unreleased state of v2, which no stage has.
    expect(() => deployedOrderIndexes({ ORDERS_INDEXES: 'ordersByPet,byPet' })).toThrow(
      /ORDERS_INDEXES names unknown indexes \(byPet\)/,
    );
    expect([...deployedOrderIndexes({ ORDERS_INDEXES: ' ordersByStatus , ordersByPet ' })]).toEqual(
      ['ordersByStatus', 'ordersByPet'],
    );
  });
});

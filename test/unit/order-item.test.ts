/**
 * An order as an item (lib/dynamodb/order-item.ts): what a put writes, the status an item says
 * (a cancel's trail makes it cancelled, whatever its `status`), which indexes wait for the
 * readiness marker, and what the items weigh by DynamoDB's size rule (bench/item-size.ts).
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { indexNeedsReadiness } from '../../lib/dynamodb/index-readiness.ts';
import {
  departureUpdate,
  itemStatus,
  orderToItem,
  readCancelTrail,
  readOrderItem,
  type Departure,
} from '../../lib/dynamodb/order-item.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import type { Order } from '../../lib/orders/order.ts';
import { itemSize, type WireValue } from '../../bench/item-size.ts';
import { LARGEST_ORDER, LONGEST_KEY_ID } from '../support/largest-order.ts';

const SHIPPED: Order = {
  id: 1_000_000_000_004n,
  petId: 11_583n,
  quantity: 5,
  shipDate: '2025-06-27T14:21:29Z',
  complete: true,
  status: 'shipped',
};

describe('an order item', () => {
  it("holds s and t beside the order's fields", () => {
    expect(orderToItem(SHIPPED)).toEqual({
      shard: 4,
      ...SHIPPED,
      s: 's4',
      t: 1_751_034_089_000_000_000n,
    });
  });

  it('holds u (its shard) while its stored status is not shipped and it has a ship date-time', () => {
    const { id, shipDate } = SHIPPED;
    expect(orderToItem({ id, shipDate, status: 'pending' })).toMatchObject({ s: 'p4', u: 4 });
    expect(orderToItem({ id, shipDate })).toMatchObject({ s: 'p4', u: 4 });
    expect(orderToItem({ id, shipDate, status: 'cancelled' })).toMatchObject({ s: 'c4', u: 4 });
    expect(orderToItem(SHIPPED)).not.toHaveProperty('u');
    // No date-time, no date index: no u.
    expect(orderToItem({ id, status: 'pending' })).not.toHaveProperty('u');
    expect(orderToItem({ id, shipDate: 'soon', status: 'pending' })).not.toHaveProperty('u');
  });

  it('is taken out of the index of orders not shipped by a ship, and left in it by a cancel', () => {
    const write = (departure: Departure) => departureUpdate(departure, 7n, 7).input('orders', {});
    const shipped = write({ status: 'shipped' });
    expect(shipped.UpdateExpression).toMatch(/ REMOVE #\w+$/);
    expect(Object.values(shipped.ExpressionAttributeNames ?? {})).toContain('u');
    const cancelled = write({
      status: 'cancelled',
      cancellation: { at: 1, keyId: 'key_A', requestId: 'r' },
    });
    expect(Object.values(cancelled.ExpressionAttributeNames ?? {})).not.toContain('u');
    // A cancel leaves `status` as it was, on every stage: it writes its trail and `s` only.
    expect(Object.values(cancelled.ExpressionAttributeValues ?? {})).not.toContain('cancelled');
  });

  it('says cancelled when it holds a trail, whatever its status; else its status, pending when none', () => {
    expect(itemStatus({ id: 1 })).toBe('pending');
    expect(itemStatus({ id: 1, status: 'shipped' })).toBe('shipped');
    expect(itemStatus({ id: 1, status: 'pending', cancelledAt: 1 })).toBe('cancelled');
    expect(itemStatus({ id: 1, cancelledAt: 'not a time' })).toBe('cancelled');
    expect(itemStatus({ id: 1, status: 'lost' })).toBeUndefined();
    expect(readOrderItem({ id: 1, status: 'pending', cancelledAt: 1 })).toEqual({
      order: { id: 1n, status: 'cancelled' },
      unreadable: [],
    });
    // A status the service does not know is unreadable, unless a trail says what the order is.
    expect(readOrderItem({ id: 1, status: 'lost' })).toEqual({
      order: { id: 1n },
      unreadable: ['status'],
    });
    expect(readOrderItem({ id: 1, status: 'lost', cancelledAt: 1 })).toEqual({
      order: { id: 1n, status: 'cancelled' },
      unreadable: [],
    });
  });

  it('gives its trail, each part that is readable, and never in the order', () => {
    const item = {
      id: 1,
      cancelledAt: 1_795_858_215_250,
      cancelledBy: 'key_A',
      cancelRequestId: 7,
    };
    expect(readCancelTrail(item)).toEqual({ at: 1_795_858_215_250, keyId: 'key_A' });
    expect(readOrderItem(item).order).toEqual({ id: 1n, status: 'cancelled' });
  });
});

describe('the readiness marker', () => {
  it('is what the indexes keyed by s, t or u wait for; ordersByPet (petId, id) does not', () => {
    expect(ORDER_INDEX_NAMES.filter(indexNeedsReadiness)).toEqual([
      'ordersByStatus',
      'ordersByDate',
      'ordersByPetDate',
      'ordersUnshippedByDate',
    ]);
  });
});

describe('what an order item weighs (DynamoDB counts names and values)', () => {
  const size = (item: Record<string, unknown>) =>
    itemSize(marshall(item) as Record<string, WireValue>);
  const without = (item: Record<string, unknown>, names: readonly string[]) =>
    Object.fromEntries(Object.entries(item).filter(([name]) => !names.includes(name)));

  it("is 10 bytes more than the order's fields with s and t", () => {
    const fields = without(orderToItem(SHIPPED), ['s', 't']);
    expect(size(fields)).toBe(86);
    expect(size(orderToItem(SHIPPED))).toBe(96);
  });

  it('stays under 1 KB at its largest with a trail: a cancel writes 1 unit of the table', () => {
    const trail = {
      cancelledAt: 1_795_858_215_250,
      cancelledBy: LONGEST_KEY_ID,
      cancelRequestId: '6f1c1e64-0d8e-4a3e-9d51-5b0c9a3f2e10',
    };
    expect(size(orderToItem(LARGEST_ORDER))).toBe(133);
    expect(size({ ...orderToItem(LARGEST_ORDER), ...trail })).toBe(281);
  });
});

/**
 * An order as an item (lib/dynamodb/order-item.ts): what a put writes, the status an item says
 * (a cancel's trail makes it cancelled, whatever its `status`), which indexes wait for the
 * readiness marker, and what the items weigh by DynamoDB's size rule (bench/item-size.ts).
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { indexNeedsReadiness } from '../../lib/dynamodb/index-readiness.ts';
import {
  itemStatus,
  orderToItem,
  readCancelTrail,
  readOrderItem,
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
  it("holds s and t beside the order's fields; the first release's keys only when asked", () => {
    expect(orderToItem(SHIPPED)).toEqual({
      shard: 4,
      ...SHIPPED,
      s: 's4',
      t: 1_751_034_089_000_000_000n,
    });
    expect(orderToItem(SHIPPED, { status: true, keys: true })).toMatchObject({
      s: 's4',
      statusKey: 'shipped#4',
      dateKey: expect.stringMatching(/^\d{21}#\d{20}$/) as unknown,
    });
    expect(orderToItem(SHIPPED, { status: true, keys: false })).not.toHaveProperty('statusKey');
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
  it('is what the indexes keyed by s or t wait for; ordersByPet (petId, id) does not', () => {
    expect(ORDER_INDEX_NAMES.filter(indexNeedsReadiness)).toEqual([
      'ordersByStatus',
      'ordersByDate',
      'ordersByPetDate',
    ]);
  });
});

describe('what an order item weighs (DynamoDB counts names and values)', () => {
  const size = (item: Record<string, unknown>) =>
    itemSize(marshall(item) as Record<string, WireValue>);
  const without = (item: Record<string, unknown>, names: readonly string[]) =>
    Object.fromEntries(Object.entries(item).filter(([name]) => !names.includes(name)));

  it("is 10 bytes more than the order's fields with s and t, 67 with the first release's keys", () => {
    const fields = without(orderToItem(SHIPPED), ['s', 't']);
    const firstRelease = without(orderToItem(SHIPPED, { status: true, keys: true }), ['s', 't']);
    expect(size(fields)).toBe(86);
    expect(size(orderToItem(SHIPPED))).toBe(96);
    expect(size(firstRelease)).toBe(153);
  });

  it('stays under 1 KB at its largest with a trail: a cancel writes 1 unit of the table', () => {
    const trail = {
      cancelledAt: 1_795_858_215_250,
      cancelledBy: LONGEST_KEY_ID,
      cancelRequestId: '6f1c1e64-0d8e-4a3e-9d51-5b0c9a3f2e10',
    };
    expect(
      size(without(orderToItem(LARGEST_ORDER, { status: true, keys: true }), ['s', 't'])),
    ).toBe(182);
    expect(size(orderToItem(LARGEST_ORDER))).toBe(130);
    expect(size({ ...orderToItem(LARGEST_ORDER), ...trail })).toBe(278);
  });
});

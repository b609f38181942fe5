/** What an import changes (lib/orders/import.ts): new, unchanged and conflicting orders. */
import { describe, expect, it } from 'vitest';
import { orderDifferences, ordersToWrite, planImport } from '../../lib/orders/import.ts';
import type { Order } from '../../lib/orders/order.ts';

const BIG = 9_223_372_036_854_775_807n;

describe('planImport', () => {
  const stored: Order[] = [
    { id: BIG, petId: BIG - 1n, quantity: 2, status: 'shipped', complete: true },
    { id: 1n, status: 'pending' },
    { id: 2n, shipDate: '2026-01-01T00:00:00Z', status: 'pending' },
  ];

  it('skips orders stored exactly so, and sets apart new and changed ones', () => {
    const incoming: Order[] = [
      { id: BIG, petId: BIG - 1n, quantity: 2, status: 'shipped', complete: true },
      { id: 1n, status: 'pending', complete: false },
      { id: 2n, shipDate: '2026-01-01T00:00:00.000Z', status: 'pending' },
      { id: 3n, status: 'cancelled' },
    ];
    const plan = planImport(incoming, stored);
    expect(plan.unchanged).toBe(1);
    expect(plan.added).toEqual([{ id: 3n, status: 'cancelled' }]);
    expect(plan.conflicts.map((conflict) => conflict.differences)).toEqual([
      [{ field: 'complete', stored: undefined, incoming: false }],
      [
        {
          field: 'shipDate',
          stored: '2026-01-01T00:00:00Z',
          incoming: '2026-01-01T00:00:00.000Z',
        },
      ],
    ]);
    expect(ordersToWrite(plan, false).map((order) => order.id)).toEqual([3n]);
    expect(ordersToWrite(plan, true).map((order) => order.id)).toEqual([3n, 1n, 2n]);
  });

  it('compares int64 values exactly, beyond 2^53', () => {
    const a: Order = { id: BIG, petId: 9_007_199_254_740_993n, status: 'pending' };
    expect(orderDifferences(a, { ...a, petId: 9_007_199_254_740_993n })).toEqual([]);
    expect(orderDifferences(a, { ...a, petId: 9_007_199_254_740_992n })).toEqual([
      { field: 'petId', stored: 9_007_199_254_740_993n, incoming: 9_007_199_254_740_992n },
    ]);
  });
});

/**
 * `npm run bench:list-v2`'s floor (bench/page-floor.ts), without DynamoDB: where a page's reads
 * ended, and each partition's Query (the reader's, lib/dynamodb/page-plan.ts) bounded there.
 */
import { describe, expect, it } from 'vitest';
import { floorQuery, pageReadTo } from '../../bench/page-floor.ts';
import { planPages } from '../../lib/dynamodb/page-plan.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import type { Order } from '../../lib/orders/order.ts';

const MARCH = parseInstant('2026-03-01T00:00:00Z')!;
const APRIL = parseInstant('2026-04-01T00:00:00Z')!;
const COST = { evaluated: 0, fetched: 0, queries: 0, batchGets: 0, rounds: 0 };

describe("where a page's reads ended", () => {
  const plan = planPages({ shipDate: { from: MARCH } });
  const order = (id: bigint, shipDate: string): Order => ({ id, shipDate, status: 'pending' });

  it('is where its next page starts, when it has one', () => {
    const next = { instant: MARCH, id: 4n };
    const orders = [order(3n, '2026-03-01T00:00:00Z')];
    expect(pageReadTo({ orders, next, plan, cost: COST })).toBe(next);
  });

  it('on the last page, is its last order, in the plan’s order; nothing when it has none', () => {
    const orders = [order(3n, '2026-03-01T00:00:00Z'), order(9n, '2026-03-02T00:00:00Z')];
    expect(pageReadTo({ orders, plan, cost: COST })).toEqual({
      instant: parseInstant('2026-03-02T00:00:00Z'),
      id: 9n,
    });
    expect(pageReadTo({ orders, plan: planPages({}), cost: COST })).toEqual({ id: 9n });
    expect(pageReadTo({ orders: [], plan, cost: COST })).toBeUndefined();
  });
});

describe("the floor's Query of a partition", () => {
  const table = planPages({});

  it('in id order: after the start, up to the end (inclusive); an empty range is no Query', () => {
    expect(floorQuery('orders', table, 0, { id: 41n }, { id: 90n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      ExpressionAttributeNames: { '#pk': 'shard', '#sk': 'id' },
      ExpressionAttributeValues: { ':pk': 0, ':lo': 42n, ':hi': 90n },
    });
    expect(floorQuery('orders', table, 0, undefined, { id: 90n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk <= :hi',
      ExpressionAttributeNames: { '#sk': 'id' },
      ExpressionAttributeValues: { ':hi': 90n },
    });
    expect(floorQuery('orders', table, 0, { id: 90n }, { id: 90n })).toBeUndefined();
  });

  it('keeps the rest of the reader’s Query: its index, filter and projection', () => {
    const plan = planPages({ statuses: ['shipped'], complete: true });
    const reader = {
      IndexName: 'ordersByStatus',
      FilterExpression: '#complete = :complete',
      ExpressionAttributeNames: { '#pk': 's', '#complete': 'complete' },
      ExpressionAttributeValues: { ':pk': 's2', ':complete': true },
    };
    expect(floorQuery('orders', plan, 's2', undefined, { id: 7n })).toMatchObject(reader);
    const complete = floorQuery(
      'orders',
      planPages({ complete: false }),
      1,
      { id: 1n },
      { id: 2n },
    );
    expect(complete).toMatchObject({
      ConsistentRead: true,
      FilterExpression: '#complete = :complete',
    });
    expect(complete).not.toHaveProperty('Limit');
  });

  it("in ship-date order: the end's instant bounds the filter's range; a start past it is no Query", () => {
    const plan = planPages({ shipDate: { from: MARCH, to: APRIL } });
    const start = { instant: MARCH, id: 5n };
    expect(floorQuery('orders', plan, 2, start, { instant: MARCH, id: 9n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':lo': MARCH, ':hi': MARCH },
      ExclusiveStartKey: { shard: 2, t: MARCH, id: 5n },
    });
    // The range's own end comes first where it is earlier (before `to` is at most `to` − 1).
    expect(floorQuery('orders', plan, 2, start, { instant: APRIL + 9n, id: 1n })).toMatchObject({
      ExpressionAttributeValues: { ':hi': APRIL - 1n },
    });
    expect(floorQuery('orders', plan, 2, start, { instant: MARCH - 1n, id: 9n })).toBeUndefined();
    const from = planPages({ shipDate: { from: MARCH } });
    expect(floorQuery('orders', from, 1, undefined, { instant: APRIL, id: 1n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':lo': MARCH, ':hi': APRIL },
    });
    const to = planPages({ shipDate: { to: APRIL } });
    expect(floorQuery('orders', to, 1, undefined, { instant: MARCH, id: 1n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk <= :hi',
      ExpressionAttributeNames: { '#sk': 't' },
      ExpressionAttributeValues: { ':hi': MARCH },
    });
  });
});

/**
 * The plan of the v2 list's pages (lib/dynamodb/page-plan.ts), without DynamoDB: which source
 * and partitions serve each filter, the key condition of each partition's Query, how a key reads
 * as a position, and how much a page asks for in each round; and where a page ends once it has
 * checked what it read (lib/dynamodb/order-pages.ts pageEnd). The reads themselves are tested on
 * DynamoDB Local (test/integration/order-pages.test.ts, page-ends.test.ts).
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DependencyFailure } from '../../lib/failures.ts';
import { GET_BATCH } from '../../lib/dynamodb/batch-write.ts';
import { CandidateStream } from '../../lib/dynamodb/candidate-stream.ts';
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { pageEnd, type PageSoFar } from '../../lib/dynamodb/order-pages.ts';
import {
  firstLimit,
  MAX_QUERY_LIMIT,
  PAGE_READ_BUDGET,
  READ_ON_MARGIN,
  readOnLimit,
  recheckCount,
  roundLimits,
} from '../../lib/dynamodb/page-limits.ts';
import {
  keyPosition,
  pageQueries,
  partitionQuery,
  planPages,
  storedStatusesOf,
} from '../../lib/dynamodb/page-plan.ts';
import { ORDER_INDEX_NAMES, ORDER_SHARDS } from '../../lib/dynamodb/tables.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import type { OrderFilter } from '../../lib/orders/order-filter.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

const MARCH = parseInstant('2026-03-01T00:00:00Z')!;
const APRIL = parseInstant('2026-04-01T00:00:00Z')!;
const shards = (initial: string) =>
  Array.from({ length: ORDER_SHARDS }, (_, s) => `${initial}${s}`);

describe("the plan of a filter's pages", () => {
  it.each([
    ['no filter', {}, 'table', 8],
    ['complete alone', { complete: false }, 'table', 8],
    ['one status', { statuses: ['pending'] }, 'ordersByStatus', 8],
    ['two statuses', { statuses: ['pending', 'shipped'] }, 'ordersByStatus', 16],
    ['a status and complete', { statuses: ['shipped'], complete: true }, 'ordersByStatus', 8],
    ['a date range', { shipDate: { from: MARCH } }, 'ordersByDate', 8],
    [
      'a date range and statuses not shipped',
      { shipDate: { to: APRIL }, statuses: ['cancelled', 'pending'] },
      'ordersUnshippedByDate',
      8,
    ],
    [
      'a date range and shipped',
      { shipDate: { to: APRIL }, statuses: ['pending', 'shipped'] },
      'ordersByDate',
      8,
    ],
    ['a pet', { petId: 7n }, 'ordersByPet', 1],
    ['a pet and a status', { petId: 7n, statuses: ['pending'] }, 'ordersByPet', 1],
    ['a pet and a date range', { petId: 7n, shipDate: { from: MARCH } }, 'ordersByPetDate', 1],
  ] as [string, OrderFilter, string, number][])(
    '%s: read from %s, %d partitions',
    (_, filter, source, partitions) => {
      const plan = planPages(filter);
      expect(plan).toMatchObject({ filter, source, partitions });
      expect(plan.partitionValues).toHaveLength(partitions);
      expect(plan.consistent).toBe(source === 'table');
    },
  );

  it('names the partitions: the table and the dates by shard, a status by its shards, a pet by its id', () => {
    expect(planPages({})).toMatchObject({
      partitionKey: 'shard',
      partitionValues: [0, 1, 2, 3, 4, 5, 6, 7],
      items: 'table',
      order: 'id',
      needsReadiness: false,
    });
    expect(planPages({ statuses: ['pending', 'cancelled'] })).toMatchObject({
      partitionKey: 's',
      partitionValues: [...shards('p'), ...shards('c')],
      items: 'fields',
      statusInKey: true,
      needsReadiness: true,
    });
    // A date range reads every status, in the table's shards.
    expect(planPages({ shipDate: { from: MARCH } })).toMatchObject({
      partitionKey: 'shard',
      partitionValues: [0, 1, 2, 3, 4, 5, 6, 7],
      statusInKey: false,
      order: 'shipDate',
      needsReadiness: true,
    });
    // Pending or cancelled in a date range: the orders not shipped, a partition (`u`) a shard.
    expect(planPages({ shipDate: { from: MARCH }, statuses: ['pending'] })).toMatchObject({
      partitionKey: 'u',
      partitionValues: [0, 1, 2, 3, 4, 5, 6, 7],
      statusInKey: false,
      storedStatuses: ['pending'],
      order: 'shipDate',
      needsReadiness: true,
    });
    // A stage that does not have that index yet reads them from ordersByDate.
    const withoutUnshipped = new Set(
      ORDER_INDEX_NAMES.filter((name) => name !== 'ordersUnshippedByDate'),
    );
    expect(
      planPages({ shipDate: { from: MARCH }, statuses: ['cancelled'] }, withoutUnshipped),
    ).toMatchObject({ source: 'ordersByDate', storedStatuses: ['pending', 'cancelled'] });
    // ordersByPet is keyed by the stored petId: it needs no readiness marker; the date one does.
    expect(planPages({ petId: -4n })).toMatchObject({
      partitionKey: 'petId',
      partitionValues: [-4n],
      needsReadiness: false,
    });
    expect(planPages({ petId: -4n, shipDate: { to: APRIL } }).needsReadiness).toBe(true);
  });

  it('keeps, where the key does not say the status, what an index may hold for the statuses asked: a cancelled order may be held as pending', () => {
    expect(planPages({ petId: 1n, statuses: ['shipped'] }).storedStatuses).toEqual(['shipped']);
    expect(planPages({ petId: 1n, statuses: ['pending'] }).storedStatuses).toEqual(['pending']);
    expect(
      planPages({ shipDate: { from: MARCH }, statuses: ['cancelled'] }).storedStatuses,
    ).toEqual(['pending', 'cancelled']);
    expect(storedStatusesOf(['shipped', 'cancelled'])).toEqual(['pending', 'shipped', 'cancelled']);
    expect(planPages({ statuses: ['pending'] }).storedStatuses).toBeUndefined();
    expect(planPages({ petId: 1n }).storedStatuses).toBeUndefined();
  });

  it('names the index a filter needs even when the stage lacks it (the reader then answers 503)', () => {
    expect(planPages({ petId: 7n }, new Set())).toMatchObject({
      source: 'ordersByPet',
      items: 'fields',
    });
    expect(planPages({ statuses: ['pending'] }, new Set(['ordersByPet'])).source).toBe(
      'ordersByStatus',
    );
  });
});

describe("a partition's Query", () => {
  const table = planPages({});
  const pending = planPages({ statuses: ['pending'] });

  it('of the table is strongly consistent, of its listed attributes, `complete` as its filter', () => {
    const query = partitionQuery('orders', planPages({ complete: true }), 3, undefined)!;
    expect(query).toMatchObject({
      TableName: 'orders',
      ConsistentRead: true,
      KeyConditionExpression: '#pk = :pk',
      FilterExpression: '#complete = :complete',
      ExpressionAttributeValues: { ':pk': 3, ':complete': true },
    });
    // The listed attributes: the key's shard, the order's fields and the trail's time (its status).
    const projected = query
      .ProjectionExpression!.split(', ')
      .map((name) => query.ExpressionAttributeNames![name]);
    expect(projected.sort()).toEqual(
      ['shard', 'id', 'petId', 'quantity', 'shipDate', 'complete', 'status', 'cancelledAt'].sort(),
    );
    expect(query).not.toHaveProperty('IndexName');
  });

  it('of an index names it, reads it eventually consistent, and filters on what it holds', () => {
    const query = partitionQuery(
      'orders',
      planPages({ statuses: ['shipped'], complete: true }),
      's2',
      undefined,
    )!;
    expect(query).toMatchObject({
      IndexName: 'ordersByStatus',
      KeyConditionExpression: '#pk = :pk',
      FilterExpression: '#complete = :complete',
      ExpressionAttributeNames: { '#pk': 's', '#complete': 'complete' },
    });
    expect(query).not.toHaveProperty('ConsistentRead');
    const pet = partitionQuery(
      'orders',
      planPages({ petId: 3n, statuses: ['cancelled'] }),
      3n,
      undefined,
    )!;
    expect(pet).toMatchObject({
      IndexName: 'ordersByPet',
      FilterExpression: '(attribute_not_exists(#status) OR #status IN (:status0, :status1))',
      ExpressionAttributeValues: { ':status0': 'pending', ':status1': 'cancelled' },
    });
  });

  it('in id order starts after the start', () => {
    expect(partitionQuery('orders', pending, 'p0', { id: 41n })).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk > :lo',
      ExpressionAttributeNames: { '#sk': 'id' },
      ExpressionAttributeValues: { ':lo': 41n },
    });
    const first = partitionQuery('orders', table, 0, undefined)!;
    expect(first.KeyConditionExpression).toBe('#pk = :pk');
    expect(first.ExpressionAttributeNames).not.toHaveProperty('#sk');
  });

  it('in ship-date order is the date range of instants, from `from` (inclusive) to `to` (exclusive)', () => {
    const plan = planPages({ shipDate: { from: MARCH, to: APRIL } });
    expect(partitionQuery('orders', plan, 1, undefined)).toMatchObject({
      IndexName: 'ordersByDate',
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
      ExpressionAttributeNames: { '#pk': 'shard', '#sk': 't' },
      // Instants are whole nanoseconds: before `to` is at most `to` − 1.
      ExpressionAttributeValues: { ':pk': 1, ':lo': MARCH, ':hi': APRIL - 1n },
    });
    const from = planPages({ shipDate: { from: MARCH } });
    expect(partitionQuery('orders', from, 1, undefined)).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk >= :lo',
    });
    const to = planPages({ shipDate: { to: APRIL } });
    expect(partitionQuery('orders', to, 1, undefined)).toMatchObject({
      KeyConditionExpression: '#pk = :pk AND #sk <= :hi',
    });
  });

  it('in ship-date order starts right after the start: its instant and id are where the Query begins', () => {
    const plan = planPages({ shipDate: { from: MARCH, to: APRIL } });
    // Many orders can share the start's instant: the next page begins after its id, at it.
    const start = { instant: MARCH, id: 5n };
    expect(partitionQuery('orders', plan, 2, start)).toMatchObject({
      ExpressionAttributeValues: { ':lo': MARCH, ':hi': APRIL - 1n },
      ExclusiveStartKey: { shard: 2, t: MARCH, id: 5n },
    });
    // A pet's: the table's key of the start's order too.
    const pet = planPages({ petId: 9n, shipDate: { from: MARCH } });
    expect(partitionQuery('orders', pet, 9n, { instant: MARCH, id: -11n })).toMatchObject({
      ExclusiveStartKey: { petId: 9n, t: MARCH, id: -11n, shard: 5 },
    });
    // A start before `from` (a token of a wider range cannot be sent; a position can) starts at from.
    const early = { instant: MARCH - 1n, id: 5n };
    const query = partitionQuery('orders', plan, 2, early)!;
    expect(query).toMatchObject({ ExpressionAttributeValues: { ':lo': MARCH } });
    expect(query).not.toHaveProperty('ExclusiveStartKey');
    // A start at or past `to`: nothing to read.
    expect(partitionQuery('orders', plan, 2, { instant: APRIL, id: 0n })).toBeUndefined();
  });
});

describe("a page's Queries, made once from its plan", () => {
  it("are every partition's Query from the page's start, each with its first round's Limit", () => {
    const plan = planPages({ statuses: ['pending', 'cancelled'] });
    const { partitions } = pageQueries('orders', plan, { id: 41n }, 50);
    expect(partitions.map(({ input }) => input)).toEqual(
      plan.partitionValues.map((value) => partitionQuery('orders', plan, value, { id: 41n })),
    );
    expect(partitions.map(({ limit }) => limit)).toEqual(Array(16).fill(firstLimit(16, 50)));
  });

  it('are none when no key can be in the range', () => {
    const plan = planPages({ shipDate: { from: MARCH, to: APRIL } });
    expect(pageQueries('orders', plan, { instant: APRIL, id: 0n }, 50).partitions).toEqual([]);
  });

  it("read a key as a position in the plan's order", () => {
    const dated = planPages({ shipDate: { from: MARCH } });
    const { positionOf } = pageQueries('orders', dated, undefined, 50);
    const key = { shard: 5, t: new NumberValue(String(MARCH)), id: -3n };
    expect(positionOf(key)).toEqual({ instant: MARCH, id: -3n });
  });
});

describe('a key as a position', () => {
  it('is the id in id order, the instant and the id in ship-date order', () => {
    expect(keyPosition(planPages({}), { shard: 1, id: 17n })).toEqual({ id: 17n });
    const dated = planPages({ shipDate: { from: MARCH } });
    expect(keyPosition(dated, { shard: 5, t: new NumberValue(String(MARCH)), id: -3n })).toEqual({
      instant: MARCH,
      id: -3n,
    });
  });

  it('that is not one is a permanent failure naming the source, not a crash', () => {
    const dated = planPages({ shipDate: { from: MARCH } });
    for (const [plan, key] of [
      [dated, { t: 'yesterday', id: 1n }],
      [dated, { id: 1n }],
      [dated, { t: new NumberValue('1.5'), id: 1n }],
      [planPages({ petId: 1n }), { id: 'seven' }],
    ] as const) {
      const read = () => keyPosition(plan, key);
      expect(read).toThrow(DependencyFailure);
      expect(read).toThrow(
        expect.objectContaining({ kind: 'permanent', reason: 'malformed-item' }),
      );
      expect(read).toThrow(plan.source);
    }
  });
});

describe('how much a page asks for', () => {
  it('first: N + 1 from one partition, 2N/k + 1 from each of k, 2 at least', () => {
    expect(firstLimit(1, 50)).toBe(51);
    expect(firstLimit(8, 50)).toBe(13);
    expect(firstLimit(24, 50)).toBe(5);
    expect(firstLimit(24, 1)).toBe(2);
  });

  it('first: at most 2N + k keys in all, wherever 2N is at least k', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 2, max: 48 }), (n, k) => {
        fc.pre(2 * n >= k);
        expect(k * firstLimit(k, n)).toBeLessThanOrEqual(2 * n + k);
      }),
    );
  });

  it('reading on: 1.5 times its share of what is missing, plus one, by its keys per match', () => {
    // An index partition: every key it evaluates is a candidate.
    expect(readOnLimit(10, 2, { evaluated: 13, matched: 13 })).toBe(9);
    // The table filtered by `complete`: 3 of 100 matched, so it reads about 25 keys a match.
    expect(readOnLimit(10, 2, { evaluated: 100, matched: 3 })).toBe(Math.ceil(8.5 * (101 / 4)));
    expect(readOnLimit(0, 1, { evaluated: 5, matched: 5 })).toBe(2);
    expect(readOnLimit(5_000, 1, { evaluated: 0, matched: 0 })).toBe(MAX_QUERY_LIMIT);
  });

  it("a round's Limits share out what is left of the budget, none past it", () => {
    expect(roundLimits([13, 13, 13], 10_000)).toEqual([13, 13, 13]);
    expect(roundLimits(Array(8).fill(13), 20)).toEqual([3, 3, 3, 3, 2, 2, 2, 2]);
    expect(roundLimits([13, 13], 0)).toEqual([0, 0]);
    expect(roundLimits([13, 13], -5)).toEqual([0, 0]);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 2, max: MAX_QUERY_LIMIT }), { minLength: 1, maxLength: 48 }),
        fc.integer({ min: 0, max: 20_000 }),
        (wanted, left) => {
          const limits = roundLimits(wanted, left);
          expect(limits.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(left);
          limits.forEach((limit, i) => expect(limit).toBeLessThanOrEqual(wanted[i]!));
        },
      ),
    );
  });

  it('a budget that cannot read every partition once is refused before any Query', () => {
    const send = () => Promise.reject(new Error('no Query may be sent'));
    const plan = planPages({ statuses: ['pending', 'shipped', 'cancelled'] });
    const stream = (evaluated: number) =>
      new CandidateStream({
        queries: pageQueries('orders', plan, undefined, 5),
        budget: { rounds: 10, evaluated, fetched: 100 },
        send,
      });
    expect(() => stream(23)).toThrow(RangeError);
    expect(() => stream(24)).not.toThrow();
  });

  it('a re-checked page reads on by the share that matched, 1.25 times, within its reads by key', () => {
    // Ten checked, nine listed, one more needed: about one in ten left out.
    expect(recheckCount(1, 9, 10, 2_490)).toBe(2);
    // A pet's pending orders, 1 in 100: the page reads far on, up to what its budget leaves.
    expect(recheckCount(49, 1, 100, 2_400)).toBe(2_400);
    // 49 needed at the rate seen so far (1 + 1 of 100 + 1), by the margin: ⌈49 ÷ (2 ÷ 101) × 1.25⌉.
    expect(recheckCount(49, 1, 100, 9_999)).toBe(3_094);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 3_000 }),
        (needed, listed, more) => {
          const count = recheckCount(needed, listed, listed + more, 1_000_000);
          expect(count).toBeGreaterThanOrEqual(needed);
        },
      ),
    );
  });
});

describe('where a page ends', () => {
  const at = (id: bigint) => ({ id });
  const base: PageSoFar = {
    full: false,
    leftOver: false,
    last: at(10n),
    taken: { more: true },
    fetchSpent: false,
  };

  it('full: at its last candidate, with a next page when anything may follow it', () => {
    expect(pageEnd({ ...base, full: true })).toEqual({ next: at(10n) });
    expect(pageEnd({ ...base, full: true, leftOver: true, taken: { more: false } })).toEqual({
      next: at(10n),
    });
    expect(pageEnd({ ...base, full: true, taken: { more: false } })).toEqual({});
  });

  it('at the end of the filter: no next page', () => {
    expect(pageEnd({ ...base, taken: { more: false } })).toEqual({});
    const nothingRead: PageSoFar = {
      full: false,
      leftOver: false,
      taken: { more: false },
      fetchSpent: false,
    };
    expect(pageEnd(nothingRead)).toEqual({});
  });

  it('at its budget, served short: where the partitions had read to, or after its last candidate', () => {
    expect(pageEnd({ ...base, taken: { more: true, cutAt: at(25n) } })).toEqual({
      next: at(25n),
    });
    expect(pageEnd({ ...base, fetchSpent: true })).toEqual({ next: at(10n) });
  });

  it('otherwise reads on', () => {
    expect(pageEnd(base)).toBeUndefined();
  });
});

describe("the docs' figures of the page reader", () => {
  /** A document's text, its lines joined (a figure may wrap). */
  const text = (file: string) =>
    readFileSync(join(PROJECT_ROOT, file), 'utf8').replace(/\s+/g, ' ');
  const figure = (n: number) => n.toLocaleString('en-US');
  const { rounds, evaluated, fetched } = PAGE_READ_BUDGET;

  it('are the code’s: the budget, what it costs at most, the batch size, the margins', () => {
    const architecture = text('docs/architecture.md');
    expect(architecture).toContain(
      `Every page stops at ${rounds} rounds of queries, ${figure(evaluated)} keys or items evaluated, or ${figure(fetched)} orders read by key`,
    );
    // An item of the table is about 150 B; a strongly consistent read unit is 4 KB.
    const rcu = Math.ceil((evaluated * 150) / 4096 / 10) * 10;
    expect(architecture).toContain(`about ${rcu} RCU of the table's items`);
    expect(architecture).toContain(`or ${figure(fetched)} RCU of reads by key`);
    expect(architecture).toContain(`BatchGetItem, ${GET_BATCH} keys a call`);
    expect(architecture).toContain(
      `⌈n/${GET_BATCH}⌉ calls for n candidates, up to the ${figure(fetched)} of the budget`,
    );
    expect(architecture).toContain(`${READ_ON_MARGIN} times it`);
    expect(text('bench/README.md')).toContain(`${READ_ON_MARGIN} times its share`);
    expect(text('bench/README.md')).toContain(`budget of ${figure(fetched)} orders read by key`);
    expect(text('lib/functions.ts')).toContain(`${GET_BATCH} keys a call`);
    expect(text('lib/functions.ts')).toContain(
      `up to ${fetched / GET_BATCH} for a re-checked filter's ${figure(fetched)}`,
    );
  });
});

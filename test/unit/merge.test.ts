import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeSortedBatches } from '../../lib/orders/merge.ts';
import { ordersJsonArray } from '../../lib/orders/order-json.ts';
import { compareIds } from '../../lib/orders/order.ts';

async function* from<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) {
    await Promise.resolve();
    yield item;
  }
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

/** A sorted list cut into batches at the given sizes (the rest in one last batch). */
function batched<T>(items: readonly T[], sizes: readonly number[]): T[][] {
  const batches: T[][] = [];
  let at = 0;
  for (const size of sizes) {
    if (at >= items.length) break;
    batches.push(items.slice(at, at + size));
    at += size;
  }
  if (at < items.length) batches.push(items.slice(at));
  return batches;
}

describe('mergeSortedBatches', () => {
  it('merges sorted sources, however batched, into one sorted sequence with every item', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            items: fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
            // Empty batches included: a page may hold nothing readable.
            cuts: fc.array(fc.nat({ max: 5 }), { maxLength: 10 }),
          }),
          { maxLength: 10 },
        ),
        fc.integer({ min: 1, max: 8 }),
        async (sources, maxBatch) => {
          const sorted = sources.map(({ items, cuts }) =>
            batched([...items].sort(compareIds), cuts),
          );
          const batches = await collect(mergeSortedBatches(sorted.map(from), compareIds, maxBatch));
          for (const batch of batches) {
            expect(batch.length).toBeGreaterThan(0);
            expect(batch.length).toBeLessThanOrEqual(maxBatch);
          }
          expect(batches.flat()).toEqual(sources.flatMap(({ items }) => items).sort(compareIds));
        },
      ),
    );
  });

  it('asks a source for its next batch only once what was merged before has been taken', async () => {
    const asked: string[] = [];
    async function* source(name: string, batches: number[][]): AsyncGenerator<number[]> {
      for (const [i, batch] of batches.entries()) {
        asked.push(`${name}${i}`);
        yield await Promise.resolve(batch);
      }
    }
    const merged = mergeSortedBatches(
      [source('a', [[1, 2], [5]]), source('b', [[3, 4], [6]])],
      (x, y) => x - y,
    );
    expect((await merged.next()).value).toEqual([1, 2]);
    expect(asked).toEqual(['a0', 'b0']);
    expect((await merged.next()).value).toEqual([3, 4]);
    expect(asked).toEqual(['a0', 'b0', 'a1']);
    expect(await collect(merged)).toEqual([[5], [6]]);
  });

  it('stops the other sources when one fails', async () => {
    let returned = false;
    async function* healthy(): AsyncGenerator<number[]> {
      try {
        for (let i = 0; ; i += 4) yield await Promise.resolve([i, i + 2]);
      } finally {
        returned = true;
      }
    }
    async function* failing(): AsyncGenerator<number[]> {
      yield [1];
      await Promise.resolve();
      throw new Error('boom');
    }
    await expect(
      collect(mergeSortedBatches([healthy(), failing()], (a: number, b: number) => a - b)),
    ).rejects.toThrow('boom');
    expect(returned).toBe(true);
  });
});

describe('ordersJsonArray', () => {
  it('writes an empty list as []', async () => {
    expect((await collect(ordersJsonArray(from([])))).join('')).toBe('[]');
    expect((await collect(ordersJsonArray(from([[], []])))).join('')).toBe('[]');
  });

  it('writes a valid JSON array in chunks of about the requested size', async () => {
    const orders = Array.from({ length: 1000 }, (_, i) => ({
      id: BigInt(i),
      status: 'pending' as const,
    }));
    const chunks = await collect(ordersJsonArray(from(batched(orders, [1, 7, 300])), 1024));
    expect(chunks[0]).toBe('[{"id":0,"status":"pending"}');
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBeLessThan(1024 + 100);
    const parsed = JSON.parse(chunks.join('')) as { id: number }[];
    expect(parsed.map((o) => o.id)).toEqual(orders.map((o) => Number(o.id)));
  });
});

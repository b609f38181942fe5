import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeSorted } from '../../lib/orders/merge.ts';
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

describe('mergeSorted', () => {
  it('merges sorted sources into one sorted sequence with every item', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })), {
          maxLength: 10,
        }),
        async (lists) => {
          const sorted = lists.map((list) => [...list].sort(compareIds));
          const merged = await collect(mergeSorted(sorted.map(from), compareIds));
          expect(merged).toEqual(lists.flat().sort(compareIds));
        },
      ),
    );
  });

  it('stops the other sources when one fails', async () => {
    let returned = false;
    async function* healthy(): AsyncGenerator<number> {
      try {
        for (let i = 0; ; i += 2) yield await Promise.resolve(i);
      } finally {
        returned = true;
      }
    }
    async function* failing(): AsyncGenerator<number> {
      yield 1;
      await Promise.resolve();
      throw new Error('boom');
    }
    await expect(collect(mergeSorted([healthy(), failing()], (a, b) => a - b))).rejects.toThrow(
      'boom',
    );
    expect(returned).toBe(true);
  });
});

describe('ordersJsonArray', () => {
  it('writes an empty list as []', async () => {
    expect((await collect(ordersJsonArray(from([])))).join('')).toBe('[]');
  });

  it('writes a valid JSON array in chunks of about the requested size', async () => {
    const orders = Array.from({ length: 1000 }, (_, i) => ({
      id: BigInt(i),
      status: 'pending' as const,
    }));
    const chunks = await collect(ordersJsonArray(from(orders), 1024));
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.length).toBeLessThan(1024 + 100);
    const parsed = JSON.parse(chunks.join('')) as { id: number }[];
    expect(parsed.map((o) => o.id)).toEqual(orders.map((o) => Number(o.id)));
  });
});

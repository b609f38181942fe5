/**
 * Merges sources that are each sorted into one sorted sequence, holding one item per source.
 * Sources are advanced lazily: a source is asked for its next item only after its current head
 * has been taken, so the consumer's pace (and back-pressure) reaches every source.
 */
export async function* mergeSorted<T>(
  sources: readonly AsyncIterable<T>[],
  compare: (a: T, b: T) => number,
): AsyncGenerator<T, void, undefined> {
  const iterators = sources.map((source) => source[Symbol.asyncIterator]());
  const heads = await Promise.all(iterators.map((iterator) => iterator.next()));
  try {
    for (;;) {
      let smallest = -1;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i] as IteratorResult<T>;
        if (head.done) continue;
        if (
          smallest < 0 ||
          compare(head.value, (heads[smallest] as IteratorYieldResult<T>).value) < 0
        ) {
          smallest = i;
        }
      }
      if (smallest < 0) return;
      const taken = heads[smallest] as IteratorYieldResult<T>;
      yield taken.value;
      heads[smallest] = await (iterators[smallest] as AsyncIterator<T>).next();
    }
  } finally {
    // Stop every source that has not finished (consumer gone or a source failed).
    await Promise.allSettled(
      iterators.map((iterator, i) =>
        heads[i]?.done ? Promise.resolve(undefined) : Promise.resolve(iterator.return?.()),
      ),
    );
  }
}

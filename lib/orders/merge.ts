/**
 * Merges sources of sorted batches (each source sorted across its batches) into one sorted
 * sequence, given out in batches of at most `maxBatch`. It holds the current batch of each
 * source and works through them synchronously — no promise per item, which is most of what a
 * merge of a large list would otherwise cost. A source is asked for its next batch only when its
 * current one is used up, and only after what was merged so far has been given out, so the
 * consumer's pace (and back-pressure) reaches every source.
 */
export async function* mergeSortedBatches<T>(
  sources: readonly AsyncIterable<readonly T[]>[],
  compare: (a: T, b: T) => number,
  maxBatch: number = 1_000,
): AsyncGenerator<T[], void, undefined> {
  const iterators = sources.map((source) => source[Symbol.asyncIterator]());
  const finished = iterators.map(() => false);
  /** The source's next non-empty batch; undefined when it has no more. */
  const nextBatch = async (i: number): Promise<readonly T[] | undefined> => {
    for (;;) {
      const result = await iterators[i]!.next();
      if (result.done) {
        finished[i] = true;
        return undefined;
      }
      if (result.value.length > 0) return result.value;
    }
  };
  try {
    const batches = await Promise.all(iterators.map((_, i) => nextBatch(i)));
    const positions = batches.map(() => 0);
    let out: T[] = [];
    for (;;) {
      let smallest = -1;
      let head: T | undefined;
      for (let i = 0; i < batches.length; i++) {
        const batch = batches[i];
        if (batch === undefined) continue;
        const candidate = batch[positions[i]!] as T;
        if (smallest < 0 || compare(candidate, head as T) < 0) {
          smallest = i;
          head = candidate;
        }
      }
      if (smallest < 0) break;
      out.push(head as T);
      if (++positions[smallest]! < batches[smallest]!.length) {
        if (out.length < maxBatch) continue;
        yield out;
        out = [];
        continue;
      }
      // The source's batch is used up: give out what is merged, then wait for its next one.
      if (out.length > 0) {
        yield out;
        out = [];
      }
      batches[smallest] = await nextBatch(smallest);
      positions[smallest] = 0;
    }
    if (out.length > 0) yield out;
  } finally {
    // Stop every source that has not finished (consumer gone or a source failed).
    await Promise.allSettled(
      iterators.map((iterator, i) =>
        Promise.resolve(finished[i] ? undefined : iterator.return?.()),
      ),
    );
  }
}

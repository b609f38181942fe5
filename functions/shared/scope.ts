/**
 * What only an invocation's own code may see, wherever it runs: the fields of its log lines, the
 * record of its DynamoDB calls, its metrics. Each is kept under a key of its own module
 * (./logger.ts, ./dynamodb-calls.ts, ./metrics.ts) in one AsyncLocalStorage, so that the code
 * that nothing else can reach — an SDK middleware, a line logged deep in a store, a stream's
 * later page — finds its invocation's, never another's: several invocations may run at once in
 * one process (Lambda Managed Instances), interleaved at every await.
 *
 * Everything else a request needs (its deadline, its caller, what it asks) is handed to the
 * function's steps as a value (./http-function.ts), not read from here.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** A key of the scope: its name, for reading, and the type of what it holds. */
export interface ScopeKey<T> {
  readonly name: string;
  /** Only for the type checker: what the key holds. */
  readonly holds?: T;
}

export function scopeKey<T>(name: string): ScopeKey<T> {
  return { name };
}

/** One value of a scope, typed by its key. */
export type ScopeEntry = readonly [ScopeKey<unknown>, unknown];

export function entry<T>(key: ScopeKey<T>, value: T): ScopeEntry {
  return [key, value];
}

const storage = new AsyncLocalStorage<ReadonlyMap<ScopeKey<unknown>, unknown>>();

/** `handler`, each invocation run in a scope of its own with the values `start` gives it. */
export function scoped<Event, Context, Result>(
  start: (event: Event, context: Context) => readonly ScopeEntry[],
  handler: (event: Event, context: Context) => Promise<Result>,
): (event: Event, context: Context) => Promise<Result> {
  return (event, context) => storage.run(new Map(start(event, context)), handler, event, context);
}

/** What `key` holds in the scope of the invocation running now; undefined outside one. */
export function fromScope<T>(key: ScopeKey<T>): T | undefined {
  return storage.getStore()?.get(key) as T | undefined;
}

/** `callback`, run in the scope of the invocation running now whoever calls it (a listener). */
export function bindToScope<Args extends unknown[], R>(
  callback: (...args: Args) => R,
): (...args: Args) => R {
  return AsyncLocalStorage.bind(callback);
}

/**
 * `source`, run in the scope of the invocation running now whoever pulls it: a stream asks for
 * its next chunk from its reader's side, once the reader has taken the last.
 */
export function iterateInScope<T>(source: AsyncGenerator<T, void>): AsyncIterableIterator<T, void> {
  const scope = storage.getStore();
  const within = <R>(step: () => R): R => (scope ? storage.run(scope, step) : step());
  return {
    next: () => within(() => source.next()),
    return: () => within(() => source.return()),
    throw: (error: unknown) => within(() => source.throw(error)),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

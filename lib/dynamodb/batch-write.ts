/**
 * BatchWriteItem (25 items a call) and BatchGetItem (100 keys a call), several calls in flight,
 * retrying unprocessed items with backoff. The first failure stops every worker: none takes
 * another batch or retries once it is known, and the call settles only when no request is in
 * flight any more. Every call goes through ./errors.ts `send`, so a failure is classified as
 * every other DynamoDB call's is (a DependencyFailure naming `dependency`); reads may be bound
 * to a request's deadline (`signal`), as the v2 list's pages read their candidates
 * (./order-pages.ts).
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { DependencyFailure } from '../failures.ts';
import { deadlineFailure, send } from './errors.ts';

export interface BatchWriteOptions {
  /** How failures are named in logs and messages (default: the table's name). */
  readonly dependency?: string;
  /** Batches in flight at once. */
  readonly concurrency?: number;
  /** Called with the number of items written (or read) so far. */
  readonly onProgress?: (done: number) => void;
  readonly maxAttempts?: number;
}

export interface GetInBatchesOptions extends BatchWriteOptions {
  /** The deadline of every call and wait: past it the read fails transient (`timeout`). */
  readonly signal?: AbortSignal;
  /** Called as each BatchGetItem is sent (what a page's cost counts). */
  readonly onCall?: () => void;
  /** The wait before a retry of unprocessed keys: up to base × 2^attempt ms, at most max. */
  readonly backoffMs?: { readonly base: number; readonly max: number };
  /** Strongly consistent reads (the default), or eventually consistent ones at half the price. */
  readonly consistent?: boolean;
}

export interface WriteInBatchesOptions extends BatchWriteOptions {
  /** Wraps each BatchWriteItem request (the list's version: lib/dynamodb/list-version.ts). */
  readonly around?: <T>(request: () => Promise<T>) => Promise<T>;
}

/** A batch write stopped by a failure: `written` of `total` items were stored before it. */
export class BatchWriteFailed extends Error {
  readonly written: number;
  readonly total: number;
  constructor(written: number, total: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
    super(`${written} of ${total} items written before a failure: ${reason}`, { cause });
    this.name = 'BatchWriteFailed';
    this.written = written;
    this.total = total;
  }
}

const WRITE_BATCH = 25;
/** Keys of one BatchGetItem, at most. */
export const GET_BATCH = 100;
const BACKOFF_MS = { base: 25, max: 2_000 } as const;

type Item = Record<string, unknown>;

/**
 * Runs `handle` on consecutive slices of `size` items, `concurrency` at once. After a failure
 * `stopped()` is true and no slice is taken any more; resolves when every worker has ended, with
 * the first failure (undefined when there was none).
 */
async function inBatches<T>(
  items: readonly T[],
  size: number,
  concurrency: number,
  handle: (batch: T[], stopped: () => boolean) => Promise<void>,
): Promise<{ readonly error: unknown } | undefined> {
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const stopped = () => failure !== undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !stopped()) {
      const batch = items.slice(next, next + size);
      next += size;
      await handle(batch, stopped);
    }
  };
  await Promise.allSettled(
    Array.from({ length: Math.max(1, concurrency) }, () =>
      worker().catch((error: unknown) => {
        failure ??= { error };
      }),
    ),
  );
  return failure;
}

/** How a batch is retried: attempts, their backoff, and what ends the waiting. */
interface Retries {
  readonly maxAttempts: number;
  readonly backoffMs?: { readonly base: number; readonly max: number };
  /** The error thrown when items are still unprocessed after the last attempt. */
  readonly exhausted?: (left: number) => Error;
  /** Checked after each wait: throws when the deadline has passed. */
  readonly afterWait?: () => void;
}

/**
 * Sends `requests`, then what comes back unprocessed, with exponential backoff and jitter,
 * until nothing is left; gives up (silently) as soon as `stopped()` says another batch failed.
 */
async function untilProcessed<R>(
  requests: R[],
  retries: Retries,
  stopped: () => boolean,
  send: (requests: R[]) => Promise<R[]>,
): Promise<void> {
  const { maxAttempts, backoffMs = BACKOFF_MS } = retries;
  let pending = requests;
  for (let attempt = 1; pending.length > 0; attempt++) {
    if (attempt > maxAttempts) {
      throw (
        retries.exhausted?.(pending.length) ??
        new Error(`${pending.length} items stayed unprocessed after ${maxAttempts} attempts`)
      );
    }
    if (attempt > 1) {
      await sleep(Math.min(backoffMs.max, backoffMs.base * 2 ** attempt * Math.random()));
      retries.afterWait?.();
    }
    if (stopped()) return;
    pending = await send(pending);
  }
}

/**
 * Puts the items in batches of 25. A failure throws BatchWriteFailed once no write is in flight,
 * so its `written` is what the table holds (a request cut off by a network failure may still
 * have been applied: a lower bound then).
 */
export async function writeInBatches(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Item[],
  {
    concurrency = 8,
    onProgress,
    maxAttempts = 10,
    dependency = tableName,
    around,
  }: WriteInBatchesOptions = {},
): Promise<void> {
  let written = 0;
  const wrap = around ?? (<T>(request: () => Promise<T>) => request());
  const failure = await inBatches(items, WRITE_BATCH, concurrency, async (batch, stopped) => {
    const requests = batch.map((Item) => ({ PutRequest: { Item } }));
    await untilProcessed(requests, { maxAttempts }, stopped, async (pending) => {
      const result = await wrap(() =>
        send(dependency, () =>
          client.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } })),
        ),
      );
      const unprocessed = (result.UnprocessedItems?.[tableName] ?? []) as typeof pending;
      written += pending.length - unprocessed.length;
      return unprocessed;
    });
    if (!stopped()) onProgress?.(written);
  });
  if (failure) throw new BatchWriteFailed(written, items.length, failure.error);
}

/**
 * The items stored under these keys (no key twice), read in batches of 100 with strongly
 * consistent reads, in no particular order; keys with no item are left out. Throws the first
 * failure once no read is in flight: keys still unprocessed after the last attempt are a
 * transient failure (`throttled`), as is the deadline (`timeout`).
 */
export async function getInBatches(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Item[],
  {
    concurrency = 8,
    onProgress,
    maxAttempts = 10,
    dependency = tableName,
    signal,
    onCall,
    backoffMs,
    consistent = true,
  }: GetInBatchesOptions = {},
): Promise<Item[]> {
  const found: Item[] = [];
  let read = 0;
  const retries: Retries = {
    maxAttempts,
    ...(backoffMs ? { backoffMs } : {}),
    exhausted: (left) =>
      new DependencyFailure('transient', dependency, 'throttled', {
        message: `${dependency}: ${left} keys stayed unprocessed after ${maxAttempts} attempts (transient)`,
      }),
    afterWait: () => {
      if (signal?.aborted) throw deadlineFailure(dependency);
    },
  };
  const failure = await inBatches(keys, GET_BATCH, concurrency, async (batch, stopped) => {
    await untilProcessed(batch, retries, stopped, async (pending) => {
      onCall?.();
      const result = await send(
        dependency,
        (abortSignal) =>
          client.send(
            new BatchGetCommand({
              RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistent } },
            }),
            { abortSignal },
          ),
        signal,
      );
      found.push(...(result.Responses?.[tableName] ?? []));
      const unprocessed = result.UnprocessedKeys?.[tableName]?.Keys ?? [];
      read += pending.length - unprocessed.length;
      return unprocessed;
    });
    if (!stopped()) onProgress?.(read);
  });
  if (failure) throw failure.error;
  return found;
}

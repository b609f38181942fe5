/** BatchWriteItem in chunks of 25, several at once, retrying unprocessed items with backoff. */
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BatchWriteOptions {
  /** Batches in flight at once. */
  readonly concurrency?: number;
  /** Called with the number of items written so far. */
  readonly onProgress?: (written: number) => void;
  readonly maxAttempts?: number;
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

const BATCH_SIZE = 25;

/**
 * Writes the items in batches of 25, `concurrency` batches in flight. The first failure stops
 * every worker: none takes another batch or retries once it is known, and the call settles
 * only when no request is in flight any more, so `written` in the BatchWriteFailed it throws is
 * what the table holds (a request cut off by a network failure may still have been applied).
 */
export async function writeInBatches(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
  { concurrency = 8, onProgress, maxAttempts = 10 }: BatchWriteOptions = {},
): Promise<void> {
  let next = 0;
  let written = 0;
  let failure: { readonly error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const batch = items.slice(next, next + BATCH_SIZE);
      next += BATCH_SIZE;
      let requests = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 1; requests.length > 0; attempt++) {
        if (attempt > maxAttempts) {
          throw new Error(
            `${requests.length} items stayed unprocessed after ${maxAttempts} attempts`,
          );
        }
        if (attempt > 1) await sleep(Math.min(2_000, 25 * 2 ** attempt * Math.random()));
        if (failure) return;
        const result = await client.send(
          new BatchWriteCommand({ RequestItems: { [tableName]: requests } }),
        );
        const unprocessed = result.UnprocessedItems?.[tableName] ?? [];
        written += requests.length - unprocessed.length;
        requests = unprocessed as typeof requests;
      }
      onProgress?.(written);
    }
  };
  await Promise.allSettled(
    Array.from({ length: Math.max(1, concurrency) }, () =>
      worker().catch((error: unknown) => {
        failure ??= { error };
      }),
    ),
  );
  if (failure) throw new BatchWriteFailed(written, items.length, failure.error);
}

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

const BATCH_SIZE = 25;

export async function writeInBatches(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
  { concurrency = 8, onProgress, maxAttempts = 10 }: BatchWriteOptions = {},
): Promise<void> {
  let next = 0;
  let written = 0;
  // After one worker fails, the others finish their batch in flight and take no more.
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
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
  await Promise.all(
    Array.from({ length: Math.max(1, concurrency) }, () =>
      worker().catch((error: unknown) => {
        failed = true;
        throw error;
      }),
    ),
  );
}

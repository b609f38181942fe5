/**
 * The orders table as the benchmarks (and the tests that borrow their stores) reach it without
 * the store's machinery: a bulk load that leaves the list's version to one retag at the end, and
 * the decoder of a compressed list.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import zlib from 'node:zlib';
import type { ContentCoding } from '../lib/api/content-coding.ts';
import { writeInBatches } from '../lib/dynamodb/batch-write.ts';
import { orderToItem } from '../lib/dynamodb/order-item.ts';
import { DynamoDbOrderStore } from '../lib/dynamodb/orders-table.ts';
import type { Order } from '../lib/orders/order.ts';

/**
 * Writes `orders` into a table no list is served from yet, in BatchWriteItem requests of 25
 * with no version marks, then gives every version item a new nonce: every tag from before changes
 * once. (The service's imports mark each request, lib/dynamodb/orders-table.ts putOrders.)
 */
export async function loadOrders(
  client: DynamoDBDocumentClient,
  tableName: string,
  orders: readonly Order[],
  concurrency = 16,
): Promise<void> {
  await writeInBatches(
    client,
    tableName,
    orders.map((order) => orderToItem(order)),
    { concurrency },
  );
  await new DynamoDbOrderStore(client, tableName).retag();
}

/** The decoder of a coding: what reads a list the function compressed. */
export function createDecompressor(
  coding: ContentCoding,
): zlib.Gunzip | zlib.BrotliDecompress | zlib.ZstdDecompress {
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return zlib.createZstdDecompress();
  }
}

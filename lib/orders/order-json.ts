import { orderToJson, type Order } from './order.ts';

/** Size at which a chunk of the JSON array is handed to the response stream. */
export const JSON_CHUNK_BYTES = 64 * 1024;

/**
 * The JSON array of a sequence of orders (given in batches), as text chunks of about
 * `chunkBytes`: memory stays flat however many orders pass through. The first order goes out on
 * its own, at once, so that a client sees the list begin as soon as the first pages are read.
 */
export async function* ordersJsonArray(
  batches: AsyncIterable<readonly Order[]>,
  chunkBytes: number = JSON_CHUNK_BYTES,
): AsyncGenerator<string, void, undefined> {
  let chunk = '[';
  let first = true;
  for await (const batch of batches) {
    for (const order of batch) {
      chunk += first ? orderToJson(order) : `,${orderToJson(order)}`;
      if (first || chunk.length >= chunkBytes) {
        yield chunk;
        chunk = '';
      }
      first = false;
    }
  }
  yield `${chunk}]`;
}

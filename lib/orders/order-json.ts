import { orderToJson, type Order } from './order.ts';

/** Size at which a chunk of the JSON array is handed to the response stream. */
export const JSON_CHUNK_BYTES = 64 * 1024;

/**
 * The JSON array of a sequence of orders, as text chunks of about `chunkBytes`: memory stays
 * flat however many orders pass through.
 */
export async function* ordersJsonArray(
  orders: AsyncIterable<Order>,
  chunkBytes: number = JSON_CHUNK_BYTES,
): AsyncGenerator<string, void, undefined> {
  let chunk = '[';
  let first = true;
  for await (const order of orders) {
    chunk += first ? orderToJson(order) : `,${orderToJson(order)}`;
    first = false;
    if (chunk.length >= chunkBytes) {
      yield chunk;
      chunk = '';
    }
  }
  yield `${chunk}]`;
}

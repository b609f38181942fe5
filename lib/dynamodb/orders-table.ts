/** The OrderStore (and what imports need) on DynamoDB: one item per order, keyed by (shard, id). */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mergeSorted } from '../orders/merge.ts';
import { compareIds, isOrderStatus, type Order } from '../orders/order.ts';
import {
  OrdersPartlyWritten,
  type CancelOutcome,
  type FindOrdersOptions,
  type OrderImportStore,
  type PutOrdersOptions,
  type ShipOutcome,
} from '../orders/order-store.ts';
import { readBigInt, readOptionalBigInt, readOptionalNumber } from './attributes.ts';
import { translateDynamoDbError } from './errors.ts';
import {
  BatchWriteFailed,
  getInBatches,
  writeInBatches,
  type BatchWriteOptions,
} from './batch-write.ts';
import { ORDER_SHARDS, orderShard } from './tables.ts';

/** Items per Query page: bounds what each shard holds in memory while the list streams. */
export const ORDER_PAGE_SIZE = 1_000;

type Item = Record<string, unknown>;

export function orderToItem(order: Order): Item {
  return { shard: orderShard(order.id), ...order };
}

export function itemToOrder(item: Item): Order {
  const status = item.status;
  if (!isOrderStatus(status)) throw new Error(`Stored order has an unknown status`);
  const order: { -readonly [K in keyof Order]: Order[K] } = {
    id: readBigInt(item.id, 'id'),
    status,
  };
  const petId = readOptionalBigInt(item.petId, 'petId');
  if (petId !== undefined) order.petId = petId;
  const quantity = readOptionalNumber(item.quantity, 'quantity');
  if (quantity !== undefined) order.quantity = quantity;
  if (typeof item.shipDate === 'string') order.shipDate = item.shipDate;
  if (typeof item.complete === 'boolean') order.complete = item.complete;
  return order;
}

export class DynamoDbOrderStore implements OrderImportStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly pageSize: number;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { pageSize?: number } = {},
  ) {
    this.client = client;
    this.tableName = tableName;
    this.pageSize = options.pageSize ?? ORDER_PAGE_SIZE;
  }

  async openOrderStream(): Promise<AsyncIterable<Order>> {
    const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);
    const firstPages = await Promise.all(shards.map((shard) => this.queryPage(shard)));
    const sources = firstPages.map((page, shard) => this.readShard(shard, page));
    return mergeSorted(sources, (a, b) => compareIds(a.id, b.id));
  }

  /** One shard in id order, reading the next page while the current one is consumed. */
  private async *readShard(shard: number, firstPage: QueryCommandOutput): AsyncGenerator<Order> {
    let page = firstPage;
    for (;;) {
      const next = page.LastEvaluatedKey ? this.queryPage(shard, page.LastEvaluatedKey) : undefined;
      // Observed below; this keeps an abandoned prefetch from being an unhandled rejection.
      next?.catch(() => undefined);
      for (const item of page.Items ?? []) yield itemToOrder(item);
      if (!next) return;
      page = await next;
    }
  }

  private async queryPage(shard: number, startKey?: Item): Promise<QueryCommandOutput> {
    try {
      return await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#shard = :shard',
          ExpressionAttributeNames: { '#shard': 'shard' },
          ExpressionAttributeValues: { ':shard': shard },
          ExclusiveStartKey: startKey,
          Limit: this.pageSize,
        }),
      );
    } catch (error) {
      return translateDynamoDbError(error);
    }
  }

  async cancel(id: bigint): Promise<CancelOutcome> {
    const result = await this.leavePending(id, { status: 'cancelled' });
    if (result === 'moved') return 'cancelled';
    if (result === 'not-found') return 'not-found';
    if (result === 'cancelled') return 'already-cancelled';
    if (result === 'shipped') return 'shipped';
    throw new Error(`Order ${id} has an unexpected status`);
  }

  async ship(id: bigint): Promise<ShipOutcome> {
    const result = await this.leavePending(id, { status: 'shipped', complete: true });
    if (result === 'moved') return 'shipped';
    if (result === 'not-found') return 'not-found';
    if (result === 'shipped') return 'already-shipped';
    if (result === 'cancelled') return 'cancelled';
    throw new Error(`Order ${id} has an unexpected status`);
  }

  /**
   * pending → another state in one conditional write. When the condition fails, the old item in
   * the same answer (ReturnValuesOnConditionCheckFailure) says why, without a second read:
   * its status, or 'not-found'.
   */
  private async leavePending(id: bigint, changes: Record<string, unknown>): Promise<unknown> {
    const names: Record<string, string> = { '#status': 'status' };
    const values: Record<string, unknown> = { ':pending': 'pending' };
    const sets = Object.entries(changes).map(([attribute, value], i) => {
      names[`#a${i}`] = attribute;
      values[`:v${i}`] = value;
      return `#a${i} = :v${i}`;
    });
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { shard: orderShard(id), id },
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'moved';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) return translateDynamoDbError(error);
      // lib-dynamodb leaves the failed item marshalled.
      if (!error.Item) return 'not-found';
      return (unmarshall(error.Item) as { status?: unknown }).status;
    }
  }

  async findOrders(ids: readonly bigint[], options: FindOrdersOptions = {}): Promise<Order[]> {
    const keys = ids.map((id) => ({ shard: orderShard(id), id }));
    const items = await getInBatches(this.client, this.tableName, keys, options);
    return items.map(itemToOrder);
  }

  async putOrders(
    orders: readonly Order[],
    options: PutOrdersOptions & BatchWriteOptions = {},
  ): Promise<void> {
    try {
      await writeInBatches(this.client, this.tableName, orders.map(orderToItem), options);
    } catch (error) {
      if (error instanceof BatchWriteFailed) {
        throw new OrdersPartlyWritten(error.written, error.total, error.cause);
      }
      throw error;
    }
  }
}

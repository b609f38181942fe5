/** The OrderStore (and what imports need) on DynamoDB: one item per order, keyed by (shard, id). */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type GetCommandInput,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TIME_BUDGETS } from '../config/budgets.ts';
import type { CallOptions } from '../failures.ts';
import { mergeSortedBatches } from '../orders/merge.ts';
import { compareIds, type Order, type OrderStatus } from '../orders/order.ts';
import {
  OrdersPartlyWritten,
  type Cancellation,
  type CancelOutcome,
  type ListVersion,
  type FindOrdersOptions,
  type OrderImportStore,
  type OrderStreamOptions,
  type PutOrdersOptions,
  type ShipOutcome,
} from '../orders/order-store.ts';
import { malformedItem } from './attributes.ts';
import { DynamoDbListVersion, type DynamoDbListVersionOptions } from './list-version.ts';
import { send } from './errors.ts';
import {
  itemStatus,
  LISTED_ATTRIBUTES,
  orderToItem,
  readCancelTrail,
  readForList,
  readOrderItem,
  departureUpdate,
  type Departure,
} from './order-item.ts';
import {
  BatchWriteFailed,
  getInBatches,
  writeInBatches,
  type BatchWriteOptions,
} from './batch-write.ts';
import {
  CANCEL_TRAIL_ATTRIBUTES,
  ORDER_PARTITIONS,
  ORDER_SHARDS,
  type OrderPartitions,
} from './tables.ts';

/** Items per Query page: bounds what each shard holds in memory while the list streams. */
export const ORDER_PAGE_SIZE = 1_000;
/**
 * Items in each shard's first page: small, so that the status line and the first orders go
 * out quickly (the first pages of all shards are read before the status line, within the
 * request's budget); the pages after it are full.
 */
export const FIRST_PAGE_SIZE = 100;

/** How failures of this table are named in logs. */
const DEPENDENCY = 'orders table';

type Item = Record<string, unknown>;

/** An order as stored (DynamoDbOrderStore.findStored). */
export interface StoredOrder {
  /** The item, every attribute as stored (numbers as NumberValue: exact). */
  readonly item: Item;
  /** The order as the API reads it (undefined when even its id is unreadable). */
  readonly order?: Order;
  /** What its cancel recorded, each part that is stored and readable. */
  readonly trail: Partial<Cancellation>;
}

/**
 * The Query of one page of one shard, in id order. Strongly consistent: a list must show every
 * write acknowledged before its version was read (lib/dynamodb/list-version.ts), which an
 * eventually consistent read may not yet return.
 */
export function shardPageQuery(
  tableName: string,
  shard: number,
  startKey: Item | undefined,
  limit: number,
): QueryCommandInput {
  return {
    TableName: tableName,
    KeyConditionExpression: '#shard = :shard',
    ProjectionExpression: LISTED_ATTRIBUTES.projection,
    ExpressionAttributeNames: { '#shard': 'shard', ...LISTED_ATTRIBUTES.names },
    ExpressionAttributeValues: { ':shard': shard },
    ExclusiveStartKey: startKey,
    Limit: limit,
    ConsistentRead: true,
  };
}

/**
 * The orders on DynamoDB (the port: lib/orders/order-store.ts): v1's whole list, streamed by id
 * from the table's shards after the list's version is read; cancels and ships, each one
 * conditional write between a mark and a release of the version; imports in batches. Every call
 * ends by its `signal`'s deadline, its failures classified (./errors.ts).
 *
 * @example
 * ```typescript
 * import { createDocumentClient } from './client.ts';
 * import { DynamoDbOrderStore } from './orders-table.ts';
 *
 * const orders = new DynamoDbOrderStore(createDocumentClient(), 'store-orders-dev-orders');
 * const signal = AbortSignal.timeout(5_000);
 * const version = await orders.readListVersion({ signal }); // its tag is the list's ETag
 * for await (const batch of await orders.openOrderStream({ signal })) {
 *   for (const order of batch) console.log(order.id, order.status);
 * }
 * console.log(version.tag);
 * ```
 */
export class DynamoDbOrderStore implements OrderImportStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly pageSize: number;
  private readonly pageTimeoutMs: number;
  private readonly version: DynamoDbListVersion;
  private readonly partitions: OrderPartitions;

  /**
   * `listVersion`: how the list's version is kept (the lease of a write: the function's by
   * default; the operator CLI, whose calls may take longer, gives its own). `partitions`: where
   * the orders and the version items stand, the service's by default (the deploy check's store:
   * tables.ts, DEPLOY_CHECK_PARTITIONS).
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: {
      pageSize?: number;
      pageTimeoutMs?: number;
      listVersion?: DynamoDbListVersionOptions;
      partitions?: OrderPartitions;
    } = {},
  ) {
    this.client = client;
    this.tableName = tableName;
    this.pageSize = options.pageSize ?? ORDER_PAGE_SIZE;
    this.pageTimeoutMs = options.pageTimeoutMs ?? TIME_BUDGETS.listPageMs;
    this.partitions = options.partitions ?? ORDER_PARTITIONS;
    this.version = new DynamoDbListVersion(client, tableName, {
      ...options.listVersion,
      versionKey: this.partitions.versionKey,
    });
  }

  /**
   * The list's version, read strongly consistent (./list-version.ts): read before a list, its tag
   * covers every write the list shows; none while a write is in flight.
   */
  readListVersion(options: CallOptions = {}): Promise<ListVersion> {
    return this.version.read(options.signal);
  }

  /** A new version for every tag (after writes made by hand in the table). */
  retag(options: CallOptions = {}): Promise<void> {
    return this.version.retag(options.signal);
  }

  /**
   * Every order, sorted by id, in batches: the shards' first pages are read before this resolves
   * (a failure then is thrown here, before anything is sent), the rest as the batches are taken.
   * An order that cannot be read whole is told to `onUnreadable`, and the list goes on.
   *
   * @example
   * ```typescript
   * const stream = await orders.openOrderStream({
   *   signal: AbortSignal.timeout(5_000),
   *   onUnreadable: (problem) => console.warn('unreadable order', problem.id, problem.fields),
   * });
   * let count = 0;
   * for await (const batch of stream) count += batch.length;
   * ```
   */
  async openOrderStream(
    options: OrderStreamOptions = {},
  ): Promise<AsyncIterable<readonly Order[]>> {
    const shards = Array.from({ length: ORDER_SHARDS }, (_, shard) => shard);
    const firstPages = await Promise.all(
      shards.map((shard) => this.queryPage(shard, undefined, options.signal)),
    );
    const sources = firstPages.map((page, shard) =>
      this.readShard(shard, page, options.onUnreadable),
    );
    return mergeSortedBatches(sources, (a, b) => compareIds(a.id, b.id), this.pageSize);
  }

  /**
   * One shard in id order, page by page, reading the next page while the current one is
   * consumed. Each later page has its own time budget: a stalled read ends the iteration with a
   * failure.
   */
  private async *readShard(
    shard: number,
    firstPage: QueryCommandOutput,
    onUnreadable: OrderStreamOptions['onUnreadable'],
  ): AsyncGenerator<Order[]> {
    let page = firstPage;
    for (;;) {
      const next = page.LastEvaluatedKey
        ? this.queryPage(shard, page.LastEvaluatedKey, AbortSignal.timeout(this.pageTimeoutMs), {
            requestTimeout: this.pageTimeoutMs,
          })
        : undefined;
      // Observed below; this keeps an abandoned prefetch from being an unhandled rejection.
      next?.catch(() => undefined);
      const orders: Order[] = [];
      for (const item of page.Items ?? []) {
        const order = readForList(item, onUnreadable);
        if (order) orders.push(order);
      }
      yield orders;
      if (!next) return;
      page = await next;
    }
  }

  /**
   * One page of a shard: the first one small (see FIRST_PAGE_SIZE), the later ones full, each
   * attempt of which may take the whole page budget (a full page is not retried at once).
   */
  private queryPage(
    shard: number,
    startKey: Item | undefined,
    signal: AbortSignal | undefined,
    options: { requestTimeout?: number } = {},
  ): Promise<QueryCommandOutput> {
    return send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new QueryCommand(
            shardPageQuery(
              this.tableName,
              shard,
              startKey,
              startKey ? this.pageSize : Math.min(FIRST_PAGE_SIZE, this.pageSize),
            ),
          ),
          { abortSignal, ...options },
        ),
      signal,
    );
  }

  /**
   * Cancels a pending order, recording who asked, when and in which request; what it was
   * otherwise (`already-cancelled`, `shipped`, `not-found`), read without writing.
   *
   * @example
   * ```typescript
   * const outcome = await orders.cancel(
   *   9007199254740993n,
   *   { at: Date.now(), keyId: 'key_3f2a', requestId: 'c6f1e0d2-0000-4000-8000-000000000000' },
   *   { signal: AbortSignal.timeout(5_000) },
   * );
   * if (outcome === 'shipped') console.log('too late');
   * ```
   */
  async cancel(
    id: bigint,
    cancellation: Cancellation,
    options: CallOptions = {},
  ): Promise<CancelOutcome> {
    const result = await this.leavePending(id, { status: 'cancelled', cancellation }, options);
    if (result === 'moved') return 'cancelled';
    if (result === 'not-found') return 'not-found';
    if (result === 'cancelled') return 'already-cancelled';
    return 'shipped';
  }

  async ship(id: bigint, options: CallOptions = {}): Promise<ShipOutcome> {
    const result = await this.leavePending(id, { status: 'shipped' }, options);
    if (result === 'moved') return 'shipped';
    if (result === 'not-found') return 'not-found';
    if (result === 'shipped') return 'already-shipped';
    return 'cancelled';
  }

  /**
   * pending (no trail, and a status pending or none) → another state in one conditional write, between
   * the list version's mark and release (./list-version.ts). Whether it would change anything is
   * read first, strongly consistent: an order that is not pending is answered from that read,
   * with no mark — a mark holds back every conditional list's 304 while it stands, and a write
   * that changes nothing must not cost other clients theirs. An order that leaves pending between
   * the read and the write fails the write's condition, whose old item (in the same answer,
   * ReturnValuesOnConditionCheckFailure) says why.
   */
  private async leavePending(
    id: bigint,
    departure: Departure,
    options: CallOptions,
  ): Promise<'moved' | 'not-found' | 'shipped' | 'cancelled'> {
    const current = await this.statusOf(id, options.signal);
    if (current !== 'pending') return current;
    const shard = this.partitions.shardOf(id);
    const input = departureUpdate(departure, id, shard).input(this.tableName, {
      shard,
      id,
    });
    const write = () =>
      send(
        DEPENDENCY,
        (abortSignal) => this.client.send(new UpdateCommand(input), { abortSignal }),
        options.signal,
      ).then(
        () => undefined,
        (error: unknown) => {
          // A failed condition changed nothing: an answer, read below.
          if (error instanceof ConditionalCheckFailedException) return error;
          throw error;
        },
      );
    // Changed only when the write went through; a failed condition leaves the version alone.
    // The release notes the order (./list-version.ts): a page reads it again by key, not all.
    const failed = await this.version.around(write, (failure) => failure === undefined, {
      ...options,
      orderId: id,
    });
    if (failed === undefined) return 'moved';
    // The item as it was (lib-dynamodb leaves it marshalled; numbers are read as their digits,
    // so one that no JS number holds is no failure). Only its status is read.
    if (!failed.Item) return 'not-found';
    const status = this.knownStatus(id, unmarshall(failed.Item, { wrapNumbers: true }));
    if (status !== 'pending') return status;
    // The condition holds on a pending order (or one with no status): this one failed it.
    throw malformedItem(DEPENDENCY, `order ${id} failed the condition as pending`);
  }

  /** An order's status now, strongly consistent (what it is read from alone: ./order-item.ts). */
  private async statusOf(
    id: bigint,
    signal: AbortSignal | undefined,
  ): Promise<'pending' | 'shipped' | 'cancelled' | 'not-found'> {
    const Item = await this.readItem(id, signal, {
      ProjectionExpression: '#status, #id, #at',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#id': 'id',
        '#at': CANCEL_TRAIL_ATTRIBUTES.at,
      },
    });
    if (!Item) return 'not-found';
    return this.knownStatus(id, Item);
  }

  /** An order's item (or the attributes `projection` names), strongly consistent. */
  private async readItem(
    id: bigint,
    signal: AbortSignal | undefined,
    projection: Pick<GetCommandInput, 'ProjectionExpression' | 'ExpressionAttributeNames'> = {},
  ): Promise<Item | undefined> {
    const { Item } = await send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new GetCommand({
            TableName: this.tableName,
            Key: { shard: this.partitions.shardOf(id), id },
            ...projection,
            ConsistentRead: true,
          }),
          { abortSignal },
        ),
      signal,
    );
    return Item;
  }

  /**
   * The status of an order's item, all told (itemStatus): a status the service does not know (and
   * no trail) is malformed data, and neither state is assumed.
   */
  private knownStatus(id: bigint, item: Record<string, unknown>): OrderStatus {
    const status = itemStatus(item);
    if (status !== undefined) return status;
    throw malformedItem(DEPENDENCY, `order ${id} has an unknown status`);
  }

  /**
   * An order as stored, for an operator: the item itself, the order as the API reads it, and the
   * trail its cancel recorded (each part that is there: an order cancelled before the trail
   * existed has none). Read strongly consistent; undefined when no order has this id.
   */
  async findStored(id: bigint, options: CallOptions = {}): Promise<StoredOrder | undefined> {
    const Item = await this.readItem(id, options.signal);
    if (!Item) return undefined;
    const { order } = readOrderItem(Item);
    return { item: Item, ...(order ? { order } : {}), trail: readCancelTrail(Item) };
  }

  async findOrders(ids: readonly bigint[], options: FindOrdersOptions = {}): Promise<Order[]> {
    const keys = ids.map((id) => ({ shard: this.partitions.shardOf(id), id }));
    const items = await getInBatches(this.client, this.tableName, keys, {
      ...options,
      dependency: DEPENDENCY,
    });
    return items.flatMap((item) => readOrderItem(item).order ?? []);
  }

  /**
   * Inserts or replaces orders (seeding, imports), 25 a BatchWriteItem, each request between a
   * mark and a release of the list's version; a failure midway is OrdersPartlyWritten.
   *
   * @example
   * ```typescript
   * await orders.putOrders(
   *   [{ id: 1n, petId: 7n, quantity: 1, shipDate: '2026-03-01T10:00:00Z', status: 'pending' }],
   *   { onProgress: (written) => console.log(`${written} written`) },
   * );
   * ```
   */
  async putOrders(
    orders: readonly Order[],
    options: PutOrdersOptions & BatchWriteOptions = {},
  ): Promise<void> {
    try {
      const items = orders.map((order) => orderToItem(order, this.partitions.shardOf(order.id)));
      await writeInBatches(this.client, this.tableName, items, {
        ...options,
        dependency: DEPENDENCY,
        around: (request) => this.version.around(request, () => true),
      });
    } catch (error) {
      if (error instanceof BatchWriteFailed) {
        throw new OrdersPartlyWritten(error.written, error.total, error.cause);
      }
      throw error;
    }
  }
}

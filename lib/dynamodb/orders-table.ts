/** The OrderStore (and what imports need) on DynamoDB: one item per order, keyed by (shard, id). */
import {
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { TIME_BUDGETS } from '../config/budgets.ts';
import type { CallOptions } from '../failures.ts';
import { mergeSortedBatches } from '../orders/merge.ts';
import {
  compareIds,
  ORDER_FIELDS,
  readOrderFields,
  type Order,
  type OrderField,
} from '../orders/order.ts';
import {
  OrdersPartlyWritten,
  type CancelOutcome,
  type ListVersion,
  type FindOrdersOptions,
  type OrderImportStore,
  type OrderStreamOptions,
  type PutOrdersOptions,
  type ShipOutcome,
  type UnreadableOrder,
} from '../orders/order-store.ts';
import { malformedItem, numberText } from './attributes.ts';
import { DynamoDbListVersion, type DynamoDbListVersionOptions } from './list-version.ts';
import { isConditionFailure, send } from './errors.ts';
import { derivedIndexAttributes } from './order-index-keys.ts';
import {
  BatchWriteFailed,
  getInBatches,
  writeInBatches,
  type BatchWriteOptions,
} from './batch-write.ts';
import { ORDER_PARTITIONS, ORDER_SHARDS, type OrderPartitions } from './tables.ts';

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

export function orderToItem(order: Order): Item {
  return itemIn(ORDER_PARTITIONS, order);
}

/** An order as its item in a store's partitions (tables.ts). */
function itemIn(partitions: OrderPartitions, order: Order): Item {
  const shard = partitions.shardOf(order.id);
  return { shard, ...order, ...derivedIndexAttributes(order, shard) };
}

/**
 * A stored item as an order, as far as it can be read: an item without a status is `pending`
 * (as the seed and imports store it); a field whose value has the wrong type is left out and
 * named in `unreadable`. No order at all (`order` undefined) when even the id is unreadable.
 */
export function readOrderItem(item: Item): { order?: Order; unreadable: OrderField[] } {
  const { fields, unreadable } = readOrderFields(item, numberText);
  if (fields.id === undefined) return { unreadable: ['id'] };
  const order = fields as { -readonly [F in keyof Order]: Order[F] };
  if (item.status === undefined) order.status = 'pending';
  return { order, unreadable };
}

/** What a reader that cannot stop to complain does with an item: the order, and the problem. */
export function readForList(
  item: Item,
  onUnreadable: ((problem: UnreadableOrder) => void) | undefined,
): Order | undefined {
  const { order, unreadable } = readOrderItem(item);
  if (unreadable.length > 0) {
    const id = numberText(item.id);
    onUnreadable?.({
      ...(id !== undefined ? { id } : {}),
      fields: unreadable,
      skipped: order === undefined,
    });
  }
  return order;
}

/**
 * What a list reads of an item: its key and the order's fields (ORDER_FIELDS), not the
 * attributes the v2 list's indexes are keyed by (lib/dynamodb/order-index-keys.ts), which would
 * add a third to what is read and parsed (DynamoDB charges the whole item either way).
 */
export const LISTED_ATTRIBUTES = {
  projection: ['#fs', ...ORDER_FIELDS.map((_, i) => `#f${i}`)].join(', '),
  names: {
    '#fs': 'shard',
    ...Object.fromEntries(ORDER_FIELDS.map((field, i) => [`#f${i}`, field])),
  },
};

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
 * Whether an item of the orders table is an order: the list's version items and the indexes'
 * readiness marker stand in partitions no order uses (a negative `shard`).
 */
export function isOrderItem(item: Item): boolean {
  return Number(numberText(item.shard)) >= 0;
}

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
   * the orders and the version items stand, the service's by default (the deploy check's
   * store: tables.ts, DEPLOY_CHECK_PARTITIONS).
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

  readListVersion(options: CallOptions = {}): Promise<ListVersion> {
    return this.version.read(options.signal);
  }

  /** A new version for every tag (after writes made by hand in the table). */
  retag(options: CallOptions = {}): Promise<void> {
    return this.version.retag(options.signal);
  }

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

  async cancel(id: bigint, options: CallOptions = {}): Promise<CancelOutcome> {
    const result = await this.leavePending(id, { status: 'cancelled' }, options);
    if (result === 'moved') return 'cancelled';
    if (result === 'not-found') return 'not-found';
    if (result === 'cancelled') return 'already-cancelled';
    return 'shipped';
  }

  async ship(id: bigint, options: CallOptions = {}): Promise<ShipOutcome> {
    const result = await this.leavePending(id, { status: 'shipped', complete: true }, options);
    if (result === 'moved') return 'shipped';
    if (result === 'not-found') return 'not-found';
    if (result === 'shipped') return 'already-shipped';
    return 'cancelled';
  }

  /**
   * pending (or no status, which is pending) → another state in one conditional write, between
   * the list version's mark and release (./list-version.ts). Whether it would change anything is
   * read first, strongly consistent: an order that is not pending is answered from that read,
   * with no mark — a mark holds back every conditional list's 304 while it stands, and a write
   * that changes nothing must not cost other clients theirs. An order that leaves pending between
   * the read and the write fails the write's condition, whose old item (in the same answer,
   * ReturnValuesOnConditionCheckFailure) says why.
   */
  private async leavePending(
    id: bigint,
    changes: Record<string, unknown>,
    options: CallOptions,
  ): Promise<'moved' | 'not-found' | 'shipped' | 'cancelled'> {
    const current = await this.statusOf(id, options.signal);
    if (current !== 'pending') return current;
    const names: Record<string, string> = { '#status': 'status', '#id': 'id' };
    const values: Record<string, unknown> = { ':pending': 'pending' };
    // With the status goes its index key (the new status's statusKey; no ship date, no dateKey).
    const shard = this.partitions.shardOf(id);
    const indexed = {
      ...changes,
      ...derivedIndexAttributes({ id, status: changes.status }, shard),
    };
    const sets = Object.entries(indexed).map(([attribute, value], i) => {
      names[`#a${i}`] = attribute;
      values[`:v${i}`] = value;
      return `#a${i} = :v${i}`;
    });
    const write = () =>
      send(
        DEPENDENCY,
        (abortSignal) =>
          this.client.send(
            new UpdateCommand({
              TableName: this.tableName,
              Key: { shard, id },
              UpdateExpression: `SET ${sets.join(', ')}`,
              // attribute_exists: an update must never create an order.
              ConditionExpression:
                'attribute_exists(#id) AND (#status = :pending OR attribute_not_exists(#status))',
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
            { abortSignal },
          ),
        options.signal,
      ).then(
        () => true,
        (error: unknown) => {
          // A failed condition changed nothing: an answer, read below.
          if (isConditionFailure(error)) return error;
          throw error;
        },
      );
    // Changed only when the write went through; a failed condition leaves the version alone.
    const result = await this.version.around(write, (moved) => moved === true, options);
    if (result === true) return 'moved';
    // lib-dynamodb leaves the failed item marshalled. Only its status is read: the rest of the
    // item (numbers no JS number holds, say) has nothing to say about the answer.
    const old = (result as { Item?: Record<string, { S?: unknown } | undefined> }).Item;
    if (!old) return 'not-found';
    const status = this.knownStatus(id, old.status?.S);
    if (status !== 'pending') return status;
    // The condition holds on a pending order (or one with no status): this one failed it.
    throw malformedItem(DEPENDENCY, `order ${id} failed the condition as pending`);
  }

  /** An order's status now, strongly consistent (its status alone is read). */
  private async statusOf(
    id: bigint,
    signal: AbortSignal | undefined,
  ): Promise<'pending' | 'shipped' | 'cancelled' | 'not-found'> {
    const { Item } = await send(
      DEPENDENCY,
      (abortSignal) =>
        this.client.send(
          new GetCommand({
            TableName: this.tableName,
            Key: { shard: this.partitions.shardOf(id), id },
            ProjectionExpression: '#status, #id',
            ExpressionAttributeNames: { '#status': 'status', '#id': 'id' },
            ConsistentRead: true,
          }),
          { abortSignal },
        ),
      signal,
    );
    if (!Item) return 'not-found';
    return Item.status === undefined ? 'pending' : this.knownStatus(id, Item.status);
  }

  /**
   * A stored status as read (statusOf answers an absent one, pending, before asking): a status
   * the service does not know is malformed data, and neither state is assumed.
   */
  private knownStatus(id: bigint, status: unknown): 'pending' | 'shipped' | 'cancelled' {
    if (status === 'pending' || status === 'shipped' || status === 'cancelled') return status;
    throw malformedItem(DEPENDENCY, `order ${id} has an unknown status`);
  }

  async findOrders(ids: readonly bigint[], options: FindOrdersOptions = {}): Promise<Order[]> {
    const keys = ids.map((id) => ({ shard: this.partitions.shardOf(id), id }));
    const items = await getInBatches(this.client, this.tableName, keys, {
      ...options,
      dependency: DEPENDENCY,
    });
    return items.flatMap((item) => readOrderItem(item).order ?? []);
  }

  /** Each BatchWriteItem request goes between a mark and a release of the list's version. */
  async putOrders(
    orders: readonly Order[],
    options: PutOrdersOptions & BatchWriteOptions = {},
  ): Promise<void> {
    try {
      const items = orders.map((order) => itemIn(this.partitions, order));
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

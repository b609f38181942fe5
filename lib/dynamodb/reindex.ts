/**
 * `orders reindex`: writes the derived index attributes (./order-index-keys.ts) onto every order
 * item that lacks them or holds stale ones — the orders stored before the code that writes them —
 * then the readiness marker (./index-readiness.ts) that lets the indexes keyed by them serve.
 *
 * Every write is one conditional UpdateItem that pins what its values were derived from (the
 * status, or its absence, and the ship date, or its absence; the id is the key): a cancel, ship
 * or import that changes the order between the scan and the write makes the condition fail, and
 * the item is read again (strongly consistent) and derived anew. Such writes, made by this code,
 * set the attributes themselves; so once the scan has passed every item, every item holds the
 * attributes of its current values. That holds only while no older code writes orders: run it
 * after the deploy that brings this code has finished (docs/deploy.md).
 *
 * It writes no order field and no list version mark (the attributes are in no list's JSON); it
 * records change times on the version items that lack them (list-version.ts stampChangeTimes:
 * no tag changes). Idempotent: a second run finds nothing to write.
 */
import {
  GetCommand,
  ScanCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { numberText } from './attributes.ts';
import { isConditionFailure, send } from './errors.ts';
import { markIndexesReady } from './index-readiness.ts';
import { DynamoDbListVersion } from './list-version.ts';
import { derivedIndexAttributes } from './order-index-keys.ts';
import { isOrderItem } from './order-item.ts';
import { ORDER_INDEX_ATTRIBUTES } from './tables.ts';

/** How failures are named in logs and messages. */
const DEPENDENCY = 'orders table (reindex)';

/** Parallel Scan segments, each read page by page. */
const SEGMENTS = 8;
/** Writes of one Scan page in flight at once. */
const WRITES_IN_FLIGHT = 16;
/** Times one item is read again after a write that raced it. */
const MAX_RETRIES = 10;

const { statusKey: STATUS_KEY, dateKey: DATE_KEY } = ORDER_INDEX_ATTRIBUTES;
/** What the derived attributes are computed from, and the attributes themselves. */
const READ = ['shard', 'id', 'status', 'shipDate', STATUS_KEY, DATE_KEY];
/** READ as a projection, for the scan and each re-read alike. */
const READ_PROJECTION = {
  ProjectionExpression: READ.map((_, i) => `#r${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(READ.map((name, i) => [`#r${i}`, name])),
};

type Item = Record<string, unknown>;

export interface ReindexProgress {
  /** Items of the table read so far (orders and the service's own items). */
  readonly scanned: number;
  /** Order items written so far. */
  readonly updated: number;
}

export interface ReindexResult extends ReindexProgress {
  /** Order items among the scanned. */
  readonly orders: number;
  /** Writes refused because the order changed meanwhile, then made again from a fresh read. */
  readonly raced: number;
  /** Version items given the change time they lacked. */
  readonly versionItemsStamped: number;
}

export interface ReindexOptions {
  readonly onProgress?: (progress: ReindexProgress) => void;
  /** Called before each write (tests race it). */
  readonly beforeWrite?: (id: bigint) => Promise<void>;
}

/** The attribute updates that bring an item's derived attributes to what its values give. */
function changesOf(item: Item): { set: Record<string, string>; remove: string[] } | undefined {
  const id = BigInt(numberText(item.id)!);
  const wanted = derivedIndexAttributes({ id, status: item.status, shipDate: item.shipDate });
  const set: Record<string, string> = {};
  const remove: string[] = [];
  for (const name of [STATUS_KEY, DATE_KEY] as const) {
    const value = wanted[name];
    if (value === undefined && item[name] !== undefined) remove.push(name);
    if (value !== undefined && item[name] !== value) set[name] = value;
  }
  return Object.keys(set).length > 0 || remove.length > 0 ? { set, remove } : undefined;
}

export async function reindexOrders(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: ReindexOptions = {},
): Promise<ReindexResult> {
  let scanned = 0;
  let orders = 0;
  let updated = 0;
  let raced = 0;
  const progress = () => options.onProgress?.({ scanned, updated });

  /** Reads one order again, strongly consistent; undefined once it is gone. */
  const reread = async (key: Item): Promise<Item | undefined> =>
    (
      await send(DEPENDENCY, () =>
        client.send(
          new GetCommand({
            TableName: tableName,
            Key: key,
            ConsistentRead: true,
            ...READ_PROJECTION,
          }),
        ),
      )
    ).Item;

  /** Writes one item's attributes, pinned to the values read; again from a fresh read on a race. */
  const reindex = async (first: Item): Promise<void> => {
    const key = { shard: first.shard, id: first.id };
    let item: Item | undefined = first;
    for (let attempt = 0; item; attempt++) {
      const changes = changesOf(item);
      if (!changes) return;
      if (attempt > MAX_RETRIES) {
        throw new Error(
          `order ${numberText(item.id)} changed under every one of ${MAX_RETRIES} writes`,
        );
      }
      await options.beforeWrite?.(BigInt(numberText(item.id)!));
      const names: Record<string, string> = {
        '#id': 'id',
        '#status': 'status',
        '#ship': 'shipDate',
      };
      const values: Record<string, unknown> = {};
      const pins = ['attribute_exists(#id)'];
      for (const [field, placeholder] of [
        ['status', '#status'],
        ['shipDate', '#ship'],
      ] as const) {
        if (item[field] === undefined) pins.push(`attribute_not_exists(${placeholder})`);
        else {
          pins.push(`${placeholder} = :${field}`);
          values[`:${field}`] = item[field];
        }
      }
      const sets = Object.entries(changes.set).map(([name, value], i) => {
        names[`#s${i}`] = name;
        values[`:s${i}`] = value;
        return `#s${i} = :s${i}`;
      });
      const removes = changes.remove.map((name, i) => {
        names[`#d${i}`] = name;
        return `#d${i}`;
      });
      const expression = [
        sets.length > 0 ? `SET ${sets.join(', ')}` : '',
        removes.length > 0 ? `REMOVE ${removes.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join(' ');
      try {
        await send(DEPENDENCY, () =>
          client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: key,
              UpdateExpression: expression,
              ConditionExpression: pins.join(' AND '),
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
            }),
          ),
        );
        updated++;
        return;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        raced++;
        item = await reread(key);
      }
    }
  };

  const segment = async (index: number): Promise<void> => {
    let startKey: Item | undefined;
    do {
      const page = await send(DEPENDENCY, () =>
        client.send(
          new ScanCommand({
            TableName: tableName,
            Segment: index,
            TotalSegments: SEGMENTS,
            ConsistentRead: true,
            ...READ_PROJECTION,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        ),
      );
      const items = page.Items ?? [];
      scanned += items.length;
      // The list's version items and the readiness marker are in partitions below 0.
      const orderItems = items.filter((item) => isOrderItem(item));
      orders += orderItems.length;
      for (let i = 0; i < orderItems.length && !failure; i += WRITES_IN_FLIGHT) {
        await Promise.all(orderItems.slice(i, i + WRITES_IN_FLIGHT).map(reindex));
      }
      progress();
      startKey = page.LastEvaluatedKey;
    } while (startKey && !failure);
  };

  // The first failure stops every segment; it is thrown once none is writing any more.
  let failure: { readonly error: unknown } | undefined;
  await Promise.all(
    Array.from({ length: SEGMENTS }, (_, i) =>
      segment(i).catch((error: unknown) => {
        failure ??= { error };
      }),
    ),
  );
  if (failure) throw failure.error;
  const versionItemsStamped = await new DynamoDbListVersion(client, tableName).stampChangeTimes();
  await markIndexesReady(client, tableName, 'reindex');
  return { scanned, orders, updated, raced, versionItemsStamped };
}

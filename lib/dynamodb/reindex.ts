/**
 * `orders reindex`: writes the derived index attributes (./order-index-keys.ts: `s`, `t` and
 * `u`) onto every order item that lacks them or holds stale ones — the orders release 1.0.0
 * stored, or orders changed by hand — then the readiness marker (./index-readiness.ts) that lets
 * the indexes keyed by them serve on a stage that waits for it.
 *
 * Every write is one conditional UpdateItem that pins what its values were derived from (the
 * status, or its absence; whether the order holds a cancel's trail; the ship date, or its
 * absence; the id is the key): a cancel, ship or import that changes the order between the scan
 * and the write makes the condition fail, and the item as it then was (in the same answer,
 * ReturnValuesOnConditionCheckFailure ALL_OLD: a strongly consistent read of it) is derived anew.
 * Such writes, made by this code, set the attributes themselves; so once the scan has passed
 * every item, every item holds the attributes of its current values. That holds only while no
 * older code writes orders: run it after the deploy that brings this code has finished
 * (docs/upgrade-from-1.0.0.md).
 *
 * It writes no order field, but what the indexes hold changes (an order enters, leaves or moves in
 * them): each page of the scan is one write of many orders of the list's version (`version`, the
 * operator's), as an import's batch is, so that the list's version changes like any write's and
 * the pages of the orders it wrote read them again by key for the settle time after it
 * (lib/orders/page-tag.ts). Idempotent: a second run finds nothing to write.
 */
import { ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { numberText } from './attributes.ts';
import { isConditionFailure, send } from './errors.ts';
import { markIndexesReady } from './index-readiness.ts';
import type { DynamoDbListVersion } from './list-version.ts';
import { derivedIndexAttributes } from './order-index-keys.ts';
import { hasCancelTrail, isOrderItem } from './order-item.ts';
import { CANCEL_TRAIL_ATTRIBUTES, ORDER_INDEX_ATTRIBUTES } from './tables.ts';
import { UpdateBuilder } from './update-builder.ts';

/** How failures are named in logs and messages. */
const DEPENDENCY = 'orders table (reindex)';

/** Parallel Scan segments, each read page by page. */
const SEGMENTS = 8;
/** Writes of one Scan page in flight at once. */
const WRITES_IN_FLIGHT = 16;
/** Times one item is written again after a write that raced it. */
const MAX_RETRIES = 10;

type Derived = (typeof ORDER_INDEX_ATTRIBUTES)[keyof typeof ORDER_INDEX_ATTRIBUTES];
const DERIVED = Object.values(ORDER_INDEX_ATTRIBUTES);
const TRAIL = CANCEL_TRAIL_ATTRIBUTES.at;
/** What the derived attributes are computed from (and the key), and the attributes themselves. */
const READ = ['shard', 'id', 'status', 'shipDate', TRAIL, ...DERIVED];
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
  /** Writes refused because the order changed meanwhile, then made again from the changed item. */
  readonly raced: number;
}

export interface ReindexOptions {
  /** The list's version its writes mark (none: they mark nothing, as a test may want). */
  readonly version?: Pick<DynamoDbListVersion, 'around'>;
  readonly onProgress?: (progress: ReindexProgress) => void;
  /** Called before each write (tests race it). */
  readonly beforeWrite?: (id: bigint) => Promise<void>;
}

/** A stored value as the text of what it is, to compare with a derived one. */
function sameValue(stored: unknown, wanted: string | bigint | number): boolean {
  return typeof wanted === 'string' ? stored === wanted : numberText(stored) === String(wanted);
}

/**
 * The write that brings an item's derived attributes to what its values give (undefined when
 * they are what they should be), conditional on those values.
 */
function reindexUpdate(item: Item): UpdateBuilder | undefined {
  const id = BigInt(numberText(item.id)!);
  const wanted = derivedIndexAttributes({
    id,
    status: item.status,
    shipDate: item.shipDate,
    cancelled: hasCancelTrail(item),
  });
  const b = new UpdateBuilder();
  let changes = 0;
  for (const name of DERIVED as Derived[]) {
    const value = wanted[name];
    if (value === undefined ? item[name] === undefined : sameValue(item[name], value)) continue;
    changes++;
    if (value === undefined) b.remove(name);
    else b.assign(name, value);
  }
  if (changes === 0) return undefined;
  b.condition(`attribute_exists(${b.name('id')})`);
  b.equalsOrAbsent('status', item.status);
  b.equalsOrAbsent('shipDate', item.shipDate);
  b.condition(
    hasCancelTrail(item)
      ? `attribute_exists(${b.name(TRAIL)})`
      : `attribute_not_exists(${b.name(TRAIL)})`,
  );
  return b;
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

  /** Writes one item's attributes, pinned to the values read; again from the item on a race. */
  const reindex = async (first: Item): Promise<void> => {
    const key = { shard: first.shard, id: first.id };
    let item: Item | undefined = first;
    for (let attempt = 0; item; attempt++) {
      const update = reindexUpdate(item);
      if (!update) return;
      if (attempt > MAX_RETRIES) {
        throw new Error(
          `order ${numberText(item.id)} changed under every one of ${MAX_RETRIES} writes`,
        );
      }
      await options.beforeWrite?.(BigInt(numberText(item.id)!));
      try {
        await send(DEPENDENCY, () => client.send(new UpdateCommand(update.input(tableName, key))));
        updated++;
        return;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        raced++;
        // The item as it was when the write was refused (none: it is gone).
        const old = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
        item = old && unmarshall(old, { wrapNumbers: true });
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
      const writePage = async (): Promise<number> => {
        const before = updated;
        for (let i = 0; i < orderItems.length && !failure; i += WRITES_IN_FLIGHT) {
          await Promise.all(orderItems.slice(i, i + WRITES_IN_FLIGHT).map(reindex));
        }
        return updated - before;
      };
      if (options.version && orderItems.length > 0) {
        await options.version.around(writePage, (written) => written > 0);
      } else {
        await writePage();
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
  await markIndexesReady(client, tableName);
  return { scanned, orders, updated, raced };
}

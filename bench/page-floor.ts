/**
 * What `npm run bench:list-v2`'s floor reads of one page of the v2 list, without I/O: where the
 * page's reads ended, and each partition's Query bounded there. The reader knows where a page
 * ends only once it has read it; the floor is what a reader that knew it in advance would send:
 * the reader's own Query of each partition (lib/dynamodb/page-plan.ts, partitionQuery), bounded
 * at that end as well, with no Limit.
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  partitionQuery,
  type DynamoDbPagePlan,
  type PartitionValue,
} from '../lib/dynamodb/page-plan.ts';
import { positionOf, type PagePosition } from '../lib/orders/order-filter.ts';
import type { OrderPage } from '../lib/orders/order-page-reader.ts';
import { ORDER_INDEX_ATTRIBUTES } from '../lib/dynamodb/tables.ts';

/**
 * Where a page's reads ended: where its next page starts, when it has one (a page ends at its
 * last candidate, or, cut by its budget, where every partition had read to, and the next page
 * starts there); on the last page, at its last order: its last candidate where every candidate is
 * listed, as in the benchmark's store (settled, its orders as loaded); were one after it not
 * listed, the floor would read a little less than the reader had to. Undefined when the page has
 * neither.
 */
export function pageReadTo(page: OrderPage<DynamoDbPagePlan>): PagePosition | undefined {
  if (page.next) return page.next;
  const last = page.orders.at(-1);
  return last ? positionOf(last, page.plan.order) : undefined;
}

/** The key conditions partitionQuery writes: the partition, then at most one on the sort key. */
const KEY_CONDITION = /^#pk = :pk(?: AND #sk (?:> :lo|>= :lo|<= :hi|BETWEEN :lo AND :hi))?$/;

/**
 * The Query of one partition's range after `start` (exclusive) up to `end` (inclusive), or
 * undefined when no key can be in it: partitionQuery's, with `end` as its high bound too. In
 * ship-date order the sort key is (t, id), whose conditions compare `t` alone: `end`'s instant is
 * the high bound (the orders after `end` at that instant are read too), and `start` is where the
 * Query begins (its ExclusiveStartKey).
 */
export function floorQuery(
  tableName: string,
  plan: DynamoDbPagePlan,
  partition: PartitionValue,
  start: PagePosition | undefined,
  end: PagePosition,
): QueryCommandInput | undefined {
  const query = partitionQuery(tableName, plan, partition, start);
  if (!query) return undefined;
  const condition = query.KeyConditionExpression ?? '';
  if (!KEY_CONDITION.test(condition)) {
    throw new Error(`bench:list-v2 cannot bound the key condition ${condition}`);
  }
  const values = query.ExpressionAttributeValues ?? {};
  const lo = values[':lo'] as bigint | undefined;
  const hi = values[':hi'] as bigint | undefined;
  // The range's bounds, both inclusive (ids are whole numbers, instants whole nanoseconds).
  const low = lo !== undefined && condition.includes(' > :lo') ? lo + 1n : lo;
  const endKey = plan.order === 'id' ? end.id : end.instant!;
  const high = hi !== undefined && hi < endKey ? hi : endKey;
  if (low !== undefined && low > high) return undefined;
  if (start?.instant !== undefined && start.instant > high) return undefined;
  const range = low === undefined ? '<= :hi' : 'BETWEEN :lo AND :hi';
  return {
    ...query,
    KeyConditionExpression: `#pk = :pk AND #sk ${range}`,
    ExpressionAttributeNames: {
      ...query.ExpressionAttributeNames,
      '#sk': plan.order === 'id' ? 'id' : ORDER_INDEX_ATTRIBUTES.instant,
    },
    ExpressionAttributeValues: {
      ...values,
      ...(low === undefined ? {} : { ':lo': low }),
      ':hi': high,
    },
  };
}

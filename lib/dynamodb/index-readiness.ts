/**
 * Whether every order item holds its derived index attributes as this code derives them (format
 * DERIVED_ATTRIBUTES_FORMAT; lib/dynamodb/order-index-keys.ts), so that the indexes keyed by them
 * (ordersByStatus, ordersByDate, ordersByPetDate, ordersUnshippedByDate: indexNeedsReadiness)
 * hold every order.
 *
 * A table created with its indexes holds only orders written by code that writes the attributes:
 * it is ready as created, and its stage does not read any marker (the default). A table of release
 * 1.0.0 holds orders written without them, and DynamoDB's backfill of a new index covers only the
 * items that already hold its key: such a stage waits (its `ordersAwaitReindex` setting, the
 * functions' ORDERS_AWAIT_REINDEX) until `npm run admin -- orders reindex` has written the
 * attributes onto every order and then this marker (INDEX_READINESS_KEY). ordersByPet, keyed by
 * the order's own petId and id, holds every order with a petId once DynamoDB has built it.
 *
 * The marker names the format of the attributes: a release that changes which are written or
 * how bumps DERIVED_ATTRIBUTES_FORMAT, and a stage that waits for the marker waits for a reindex
 * in the new format (a marker of another format is not ready).
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { numberText } from './attributes.ts';
import { send } from './errors.ts';
import { DERIVED_ATTRIBUTES_FORMAT } from './order-index-keys.ts';
import {
  INDEX_READINESS_KEY,
  ORDER_INDEX_ATTRIBUTES,
  orderIndexDefinition,
  type OrderIndexName,
} from './tables.ts';

/** The functions' variable: `true` on a stage whose pages wait for the reindex's marker. */
export const AWAIT_REINDEX_ENV = 'ORDERS_AWAIT_REINDEX';

/** Whether ORDERS_AWAIT_REINDEX says to wait for the marker (unset: no). Fails fast on another value. */
export function awaitReindexFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[AWAIT_REINDEX_ENV]?.trim();
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw new Error(
    `Environment variable ${AWAIT_REINDEX_ENV} is ${JSON.stringify(value)}: expected true or false`,
  );
}

/** How failures of the marker are named in logs. */
const DEPENDENCY = 'orders table (index readiness)';

/** How long a reader that saw no marker waits before it reads it again. */
export const READINESS_RECHECK_MS = 5_000;

/** The attributes the marker vouches for: those the current indexes are keyed by. */
const DERIVED_KEYS: ReadonlySet<string> = new Set([
  ORDER_INDEX_ATTRIBUTES.status,
  ORDER_INDEX_ATTRIBUTES.instant,
  ORDER_INDEX_ATTRIBUTES.unshipped,
]);

/**
 * Whether an index holds every order only once the marker is there: whether it is keyed by a
 * derived attribute (`s`, `t` or `u`). An index keyed by the order's own fields alone does not wait.
 */
export function indexNeedsReadiness(name: OrderIndexName): boolean {
  const index = orderIndexDefinition(name);
  return [index.partitionKey, ...index.sortKeys].some((key) => DERIVED_KEYS.has(key.name));
}

/** Writes the marker (`orders reindex`): every order item holds the derived attributes, in the current format. */
export async function markIndexesReady(
  client: DynamoDBDocumentClient,
  tableName: string,
  now: Date = new Date(),
  signal?: AbortSignal,
): Promise<void> {
  await send(
    DEPENDENCY,
    (abortSignal) =>
      client.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            ...INDEX_READINESS_KEY,
            format: DERIVED_ATTRIBUTES_FORMAT,
            source: 'reindex',
            at: now.toISOString(),
          },
        }),
        { abortSignal },
      ),
    signal,
  );
}

/** The marker as stored: whether it says the attributes are complete in the current format. */
export async function readIndexReadiness(
  client: DynamoDBDocumentClient,
  tableName: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const { Item: item } = await send(
    DEPENDENCY,
    (abortSignal) =>
      client.send(
        new GetCommand({ TableName: tableName, Key: INDEX_READINESS_KEY, ConsistentRead: true }),
        { abortSignal },
      ),
    signal,
  );
  return item !== undefined && numberText(item.format) === String(DERIVED_ATTRIBUTES_FORMAT);
}

/**
 * The marker as a container sees it: read strongly consistent when first needed; once seen, ready
 * for the container's life (nothing takes it back but a release with a new format, which is a
 * new container); while not seen, read again at most every `recheckMs`. A container serves one
 * invocation at a time: no read is shared between callers (each under its own deadline).
 */
export class IndexReadiness {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly recheckMs: number;
  private readonly now: () => number;
  private ready = false;
  private checkedAt = -Infinity;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { readonly recheckMs?: number; readonly now?: () => number } = {},
  ) {
    this.client = client;
    this.tableName = tableName;
    this.recheckMs = options.recheckMs ?? READINESS_RECHECK_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * The marker as this container knows it without a read: true once seen, false while the read
   * that found none is fresher than `recheckMs`; undefined when it is to be read (isReady).
   */
  known(): boolean | undefined {
    if (this.ready) return true;
    return this.now() - this.checkedAt < this.recheckMs ? false : undefined;
  }

  async isReady(signal?: AbortSignal): Promise<boolean> {
    const known = this.known();
    if (known !== undefined) return known;
    this.ready = await readIndexReadiness(this.client, this.tableName, signal);
    this.checkedAt = this.now();
    return this.ready;
  }
}

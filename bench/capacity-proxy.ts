/**
 * An HTTP proxy between the functions and DynamoDB that measures what each call costs, from the
 * outside: it adds `ReturnConsumedCapacity: INDEXES` to every request that takes it and reads
 * the `ConsumedCapacity` of the answer (read and write units by table and index), passing the
 * answer on as DynamoDB gave it (the capacity the function did not ask for rides along unread).
 * It listens on one port per lane — a function's name, when each function is pointed at its own
 * (bench/cost-function.ts) — so that every call is put down to the function that made it.
 *
 * Two charges of DynamoDB that DynamoDB Local does not report are counted by DynamoDB's rules
 * (`modelled` says so): a failed conditional write, as the write units of the item it failed on
 * (its size from the `ALL_OLD` item the answer carries, else 1 unit, the charge of an item under
 * 1 KB), and an item a BatchGetItem asked for and did not find, as the least read (below). Any
 * other call answered with no capacity (an error, or an operation that takes none) is recorded
 * without units.
 */
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import { itemSize, type WireValue } from './item-size.ts';

/** The operations whose requests take ReturnConsumedCapacity, and what they consume. */
const CAPACITY_OPERATIONS: Readonly<Record<string, 'read' | 'write'>> = {
  GetItem: 'read',
  BatchGetItem: 'read',
  Query: 'read',
  Scan: 'read',
  TransactGetItems: 'read',
  PutItem: 'write',
  UpdateItem: 'write',
  DeleteItem: 'write',
  BatchWriteItem: 'write',
  TransactWriteItems: 'write',
};

/** Single-item writes whose failed condition DynamoDB charges without reporting it. */
const CONDITIONAL_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/** Units one call consumed on one table: on the table itself and on each of its indexes. */
export interface TableUnits {
  readonly table: string;
  readonly kind: 'read' | 'write';
  readonly tableUnits: number;
  readonly indexUnits: Readonly<Record<string, number>>;
}

export interface RecordedCall {
  /** The lane (function) that made it. */
  readonly lane: string;
  readonly operation: string;
  /** DynamoDB's HTTP status. */
  readonly status: number;
  /** The error type of a refused call (`ConditionalCheckFailedException`…). */
  readonly error?: string;
  /** Strongly consistent (ConsistentRead), for reads that say. */
  readonly consistent?: boolean;
  readonly units: readonly TableUnits[];
  /** The units are counted by the rule above, not reported by DynamoDB. */
  readonly modelled?: boolean;
  /** No units known: an error other than a failed condition, or an operation without capacity. */
  readonly unmeasured?: boolean;
}

interface ConsumedCapacity {
  readonly TableName?: string;
  readonly CapacityUnits?: number;
  readonly ReadCapacityUnits?: number;
  readonly WriteCapacityUnits?: number;
  readonly Table?: {
    readonly CapacityUnits?: number;
    readonly ReadCapacityUnits?: number;
    readonly WriteCapacityUnits?: number;
  };
  readonly GlobalSecondaryIndexes?: Readonly<Record<string, { readonly CapacityUnits?: number }>>;
  readonly LocalSecondaryIndexes?: Readonly<Record<string, { readonly CapacityUnits?: number }>>;
}

function tableUnits(capacity: ConsumedCapacity, kind: 'read' | 'write'): TableUnits {
  const units = (c: {
    CapacityUnits?: number;
    ReadCapacityUnits?: number;
    WriteCapacityUnits?: number;
  }) => (kind === 'read' ? c.ReadCapacityUnits : c.WriteCapacityUnits) ?? c.CapacityUnits ?? 0;
  const indexes = { ...capacity.GlobalSecondaryIndexes, ...capacity.LocalSecondaryIndexes };
  const indexUnits = Object.fromEntries(
    Object.entries(indexes).map(([name, c]) => [name, c.CapacityUnits ?? 0]),
  );
  const indexTotal = Object.values(indexUnits).reduce((sum, n) => sum + n, 0);
  return {
    table: capacity.TableName ?? 'unknown',
    kind,
    // An answer with the total only (no Table part) is all the table's.
    tableUnits: capacity.Table ? units(capacity.Table) : units(capacity) - indexTotal,
    indexUnits,
  };
}

/** The capacity an answer reports: one entry per table (an object, or a list for batches). */
export function reportedUnits(answer: unknown, kind: 'read' | 'write'): TableUnits[] | undefined {
  const consumed = (answer as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] })
    ?.ConsumedCapacity;
  if (consumed === undefined) return undefined;
  return (Array.isArray(consumed) ? consumed : [consumed]).map((c) => tableUnits(c, kind));
}

/** What a failed conditional write costs: the item it failed on, by 1 KB, at least 1 unit. */
export function failedWriteUnits(
  table: string,
  oldItem: Readonly<Record<string, WireValue>> | undefined,
): TableUnits {
  const units = oldItem ? Math.max(1, Math.ceil(itemSize(oldItem) / 1024)) : 1;
  return { table, kind: 'write', tableUnits: units, indexUnits: {} };
}

/**
 * What the items a BatchGetItem asked for and did not find cost, by table: DynamoDB reads each
 * item of a batch as a GetItem, which costs the least read (1 unit strongly consistent, 0.5
 * eventually) for an item that does not exist; DynamoDB Local charges a GetItem so, but not a
 * batch's missing items.
 */
export function missedItemUnits(
  sent: Record<string, unknown> | undefined,
  answer: Record<string, unknown> | undefined,
): Record<string, number> {
  type Requested = Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>;
  const requested = (sent?.RequestItems ?? {}) as Requested;
  const found = (answer?.Responses ?? {}) as Record<string, unknown[]>;
  const unprocessed = (answer?.UnprocessedKeys ?? {}) as Requested;
  const missed: Record<string, number> = {};
  for (const [table, { Keys = [], ConsistentRead }] of Object.entries(requested)) {
    const missing =
      Keys.length - (found[table]?.length ?? 0) - (unprocessed[table]?.Keys?.length ?? 0);
    if (missing > 0) missed[table] = missing * (ConsistentRead ? 1 : 0.5);
  }
  return missed;
}

/** A message's whole body. */
export function readBody(message: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    message.on('data', (chunk: Buffer) => chunks.push(chunk));
    message.on('end', () => resolve(Buffer.concat(chunks)));
    message.on('error', reject);
  });
}

function parseJson(body: Buffer): Record<string, unknown> | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export interface CapacityProxy {
  /** The endpoint of each lane. */
  readonly endpoints: Readonly<Record<string, string>>;
  /** The calls recorded since the last take, in the order they were answered. */
  take(): RecordedCall[];
  close(): Promise<void>;
}

/** Starts the proxy in front of `upstream` (DynamoDB's endpoint), one port per lane. */
export async function startCapacityProxy(
  upstream: string,
  lanes: readonly string[],
): Promise<CapacityProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true });
  let recorded: RecordedCall[] = [];

  const record = (
    lane: string,
    operation: string,
    sent: Record<string, unknown> | undefined,
    status: number,
    answer: Record<string, unknown> | undefined,
  ) => {
    const kind = CAPACITY_OPERATIONS[operation];
    const consistent = typeof sent?.ConsistentRead === 'boolean' ? sent.ConsistentRead : undefined;
    const base = { lane, operation, status, ...(consistent === undefined ? {} : { consistent }) };
    const type = typeof answer?.__type === 'string' ? answer.__type : 'unknown';
    const error = status >= 400 ? type.split('#').pop() : undefined;
    const units = kind ? reportedUnits(answer, kind) : undefined;
    const missed = operation === 'BatchGetItem' && units ? missedItemUnits(sent, answer) : {};
    if (units) {
      const counted = units.map((used) =>
        missed[used.table] ? { ...used, tableUnits: used.tableUnits + missed[used.table]! } : used,
      );
      const modelled = Object.keys(missed).length > 0;
      recorded.push({
        ...base,
        ...(error ? { error } : {}),
        units: counted,
        ...(modelled ? { modelled } : {}),
      });
    } else if (error === 'ConditionalCheckFailedException' && CONDITIONAL_WRITES.has(operation)) {
      const item = answer?.Item as Record<string, WireValue> | undefined;
      recorded.push({
        ...base,
        error,
        units: [failedWriteUnits(String(sent?.TableName), item)],
        modelled: true,
      });
    } else {
      recorded.push({ ...base, ...(error ? { error } : {}), units: [], unmeasured: true });
    }
  };

  const servers: Server[] = [];
  const endpoints: Record<string, string> = {};
  for (const lane of lanes) {
    const server = createServer((incoming, outgoing) => {
      void (async () => {
        const operation =
          String(incoming.headers['x-amz-target'] ?? '')
            .split('.')
            .pop() ?? '';
        let body = await readBody(incoming);
        const sent = parseJson(body);
        if (sent && CAPACITY_OPERATIONS[operation]) {
          sent.ReturnConsumedCapacity = 'INDEXES';
          body = Buffer.from(JSON.stringify(sent));
        }
        const headers = {
          ...incoming.headers,
          host: target.host,
          'content-length': String(body.length),
        };
        const forwarded = request(
          {
            host: target.hostname,
            port: target.port,
            path: incoming.url,
            method: incoming.method,
            headers,
            agent,
          },
          (answer) => {
            void readBody(answer).then((answerBody) => {
              record(lane, operation, sent, answer.statusCode ?? 0, parseJson(answerBody));
              outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
              outgoing.end(answerBody);
            });
          },
        );
        forwarded.on('error', (error) => {
          outgoing.destroy(error);
        });
        forwarded.end(body);
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    endpoints[lane] = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  return {
    endpoints,
    take: () => {
      const taken = recorded;
      recorded = [];
      return taken;
    },
    close: async () => {
      for (const server of servers) server.closeAllConnections();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      agent.destroy();
    },
  };
}

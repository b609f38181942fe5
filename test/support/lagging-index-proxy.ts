/**
 * A DynamoDB whose indexes lag: an HTTP proxy in front of DynamoDB Local that answers every
 * Query of one table's global indexes from a copy of that table which trails it by a lag the test
 * sets (or freezes), as DynamoDB's eventually consistent indexes may trail their table
 * (DynamoDB Local updates its indexes in the write's own call). Everything else goes to DynamoDB
 * Local as sent.
 *
 * The copy has the table's keys and indexes; every write of the table that DynamoDB Local
 * accepted (PutItem, UpdateItem, DeleteItem, the table's part of a BatchWriteItem) is sent again
 * to the copy once the lag has passed, in the order the table took them, so the copy is the
 * table as it was a lag ago. Writes the table refused are not replayed. The copy must start as
 * the table does (both empty, or both given the same items through the proxy).
 */
import { createServer, request, type Server } from 'node:http';

type Json = Record<string, unknown>;

/** The writes of a table the copy replays, and how to find that table's name in each. */
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

export interface LaggingIndexProxy {
  readonly endpoint: string;
  /** Index Queries see the table as it was `ms` ago (0: as it is, once the backlog is replayed). */
  setLag(ms: number): void;
  /** Index Queries see the table as it is now, until `setLag`: nothing more is replayed. */
  freeze(): void;
  /** Replays every write held back, at once (the index catches up). */
  catchUp(): Promise<void>;
  /** Writes of the table not yet replayed to the copy. */
  readonly backlog: number;
  close(): Promise<void>;
}

interface Held {
  readonly due: number;
  readonly target: string;
  readonly body: Json;
}

/** Sends one JSON request to DynamoDB Local; its status and parsed answer. */
function send(
  endpoint: URL,
  target: string,
  body: string,
  headers: Record<string, string | string[] | undefined>,
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}> {
  return new Promise((resolve, reject) => {
    const forwarded = request(
      {
        hostname: endpoint.hostname,
        port: endpoint.port,
        path: '/',
        method: 'POST',
        headers: { ...headers, 'x-amz-target': target, 'content-length': Buffer.byteLength(body) },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () =>
          resolve({
            status: answer.statusCode ?? 0,
            headers: answer.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        );
        answer.on('error', reject);
      },
    );
    forwarded.on('error', reject);
    forwarded.end(body);
  });
}

/**
 * Starts the proxy in front of `dynamodbEndpoint` for the table `table`, whose copy `copy` (the
 * same keys and indexes) the caller has created.
 */
export async function startLaggingIndexProxy(
  dynamodbEndpoint: string,
  table: string,
  copy: string,
): Promise<LaggingIndexProxy> {
  const upstream = new URL(dynamodbEndpoint);
  let lagMs = 0;
  let frozen = false;
  const held: Held[] = [];
  let replaying: Promise<void> = Promise.resolve();

  const replayDue = (all: boolean): Promise<void> => {
    replaying = replaying.then(async () => {
      while (held.length > 0 && (all || (!frozen && held[0]!.due <= Date.now()))) {
        const next = held.shift()!;
        await send(upstream, next.target, JSON.stringify(next.body), {
          'content-type': 'application/x-amz-json-1.0',
          authorization:
            'AWS4-HMAC-SHA256 Credential=local/20260101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=x',
        });
      }
    });
    return replaying;
  };
  const timer = setInterval(() => void replayDue(false), 25);

  /** The copy's version of a write of the table (its name swapped), or undefined for others. */
  const copied = (operation: string, body: Json): Json | undefined => {
    if (SINGLE_WRITES.has(operation) && body.TableName === table) {
      // What the write returns is the table's business; the copy takes only its effect.
      const write: Json = { ...body, TableName: copy };
      for (const name of [
        'ReturnValues',
        'ReturnConsumedCapacity',
        'ReturnValuesOnConditionCheckFailure',
      ]) {
        delete write[name];
      }
      return write;
    }
    if (operation === 'BatchWriteItem') {
      const items = (body.RequestItems as Record<string, unknown> | undefined)?.[table];
      return items ? { RequestItems: { [copy]: items } } : undefined;
    }
    return undefined;
  };

  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (c: Buffer) => chunks.push(c));
    incoming.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString();
        const target = String(incoming.headers['x-amz-target'] ?? '');
        const operation = target.split('.').pop() ?? '';
        let body: Json = {};
        try {
          body = JSON.parse(text || '{}') as Json;
        } catch {
          // Not JSON: DynamoDB Local answers it as it would.
        }
        const toCopy = operation === 'Query' && body.TableName === table && body.IndexName;
        const sent = toCopy ? JSON.stringify({ ...body, TableName: copy }) : text;
        const answer = await send(upstream, target, sent, incoming.headers);
        if (answer.status === 200) {
          const write = copied(operation, body);
          if (write) {
            // The table's own part of a batch, less what DynamoDB Local left unprocessed.
            if (operation === 'BatchWriteItem') {
              const left = (JSON.parse(answer.text) as { UnprocessedItems?: Json })
                .UnprocessedItems?.[table] as unknown[] | undefined;
              if (left && left.length > 0) {
                const done = (write.RequestItems as Json)[copy] as unknown[];
                const leftText = new Set(left.map((l) => JSON.stringify(l)));
                (write.RequestItems as Json)[copy] = done.filter(
                  (r) => !leftText.has(JSON.stringify(r)),
                );
              }
            }
            held.push({ due: Date.now() + lagMs, target, body: write });
            if (lagMs === 0 && !frozen) await replayDue(false);
          }
        }
        // The answer as DynamoDB Local gave it; the copy's name, were it in it, as the table's.
        const text2 = toCopy ? answer.text.split(copy).join(table) : answer.text;
        outgoing.writeHead(answer.status, {
          'content-type': String(answer.headers['content-type'] ?? 'application/x-amz-json-1.0'),
          'x-amzn-requestid': String(answer.headers['x-amzn-requestid'] ?? ''),
          'content-length': Buffer.byteLength(text2),
        });
        outgoing.end(text2);
      })().catch((error: unknown) => {
        outgoing.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
        outgoing.end(JSON.stringify({ __type: 'InternalFailure', message: String(error) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    setLag(ms) {
      lagMs = ms;
      frozen = false;
    },
    freeze() {
      frozen = true;
    },
    catchUp: () => replayDue(true),
    get backlog() {
      return held.length;
    },
    close: async () => {
      clearInterval(timer);
      await replaying.catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

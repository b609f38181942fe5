/**
 * What a process does on the network, seen from inside it without touching the code under test
 * (the AWS SDK is inside the bundle): the connections it opens, and the DynamoDB calls it sends
 * (target, body, when sent and when answered), for `npm run bench:cold-init`.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { ClientRequest, type IncomingMessage } from 'node:http';

/** Counts the client sockets the process opens from now on (Node's `net.client.socket`). */
export function countConnections(): { opened(): number; stop(): void } {
  let opened = 0;
  const onSocket = (): void => {
    opened += 1;
  };
  subscribe('net.client.socket', onSocket);
  return { opened: () => opened, stop: () => void unsubscribe('net.client.socket', onSocket) };
}

/** One DynamoDB call as it went over the wire. */
export interface RecordedCall {
  /** The operation, e.g. `Query` (from `X-Amz-Target: DynamoDB_20120810.Query`). */
  readonly operation: string;
  /** The request body: the operation's input in DynamoDB's JSON (attribute values typed). */
  readonly input: unknown;
  readonly sent: number;
  answered?: number;
}

/**
 * Records every DynamoDB call the process sends from now on (its body is taken as the request
 * ends, its answer when the response has been read). For recording runs only: it patches
 * `ClientRequest.prototype.end` until `stop()`.
 */
export function recordDynamoDbCalls(): { calls: RecordedCall[]; stop(): void } {
  const calls: RecordedCall[] = [];
  const prototype = ClientRequest.prototype;
  // `end` is OutgoingMessage's: the patch shadows it on ClientRequest, and stop() removes it.
  const end = Reflect.get(prototype, 'end') as (this: ClientRequest, ...args: unknown[]) => unknown;
  prototype.end = function (this: ClientRequest, ...args: unknown[]) {
    const target = this.getHeader('x-amz-target');
    const body = args[0];
    if (typeof target === 'string' && (typeof body === 'string' || body instanceof Uint8Array)) {
      const call: RecordedCall = {
        operation: target.replace(/^.*\./, ''),
        input: JSON.parse(Buffer.from(body).toString('utf8')) as unknown,
        sent: performance.now(),
      };
      calls.push(call);
      this.once('response', (response: IncomingMessage) =>
        response.once('end', () => (call.answered = performance.now())),
      );
    }
    return end.apply(this, args);
  } as typeof ClientRequest.prototype.end;
  return { calls, stop: () => void Reflect.deleteProperty(prototype, 'end') };
}

/**
 * Calls grouped as they were made: a call joins the current group when no call of that group
 * had been answered before it was sent (they were in flight together), else it starts the next
 * group. Each group is sent at once; the next one after the whole group has been answered.
 */
export function inWaves<T extends Pick<RecordedCall, 'sent' | 'answered'>>(
  calls: readonly T[],
): T[][] {
  const waves: T[][] = [];
  for (const call of [...calls].sort((a, b) => a.sent - b.sent)) {
    const current = waves.at(-1);
    const answeredBefore = current?.some((c) => (c.answered ?? Infinity) <= call.sent);
    if (current && !answeredBefore) current.push(call);
    else waves.push([call]);
  }
  return waves;
}

/** A recorded call, and the calls (indices into the same list) that it was sent after. */
export interface Replayed<T> {
  readonly call: T;
  /** The calls answered before this one was sent: it may have needed their answers. */
  readonly after: readonly number[];
}

/**
 * The calls in the order they were sent, each with the calls answered before it was sent: a
 * replay sends each one as soon as those have been answered, so that what overlapped on the
 * wire overlaps again (a call sent after one answer but while another was still in flight is
 * not held back for the other, as a wave would hold it).
 */
export function replayOrder<T extends Pick<RecordedCall, 'sent' | 'answered'>>(
  calls: readonly T[],
): Replayed<T>[] {
  const sorted = [...calls].sort((a, b) => a.sent - b.sent);
  return sorted.map((call, i) => ({
    call,
    after: sorted
      .slice(0, i)
      .flatMap((earlier, j) => ((earlier.answered ?? Infinity) <= call.sent ? [j] : [])),
  }));
}

/** `BatchGetItem ∥ UpdateItem → 8 × Query`: the calls, wave after wave. */
export function describeWaves(
  waves: readonly (readonly Pick<RecordedCall, 'operation'>[])[],
): string {
  return waves
    .map((wave) => {
      const counts = new Map<string, number>();
      for (const { operation } of wave) counts.set(operation, (counts.get(operation) ?? 0) + 1);
      return [...counts].map(([op, n]) => (n > 1 ? `${n} × ${op}` : op)).join(' ∥ ');
    })
    .join(' → ');
}

/**
 * The body of a list: orders → JSON → compression → metering (bytes counted, the stream cut
 * before Lambda's ceiling) → the client; what it sent, and any failure, logged and counted once
 * it ends. The pages are read as the client takes the body, on the reader's side: within the
 * list's invocation all the same (its deadline, its calls, its log fields).
 */
import { pipeline, Readable, Transform } from 'node:stream';
import type { Coding } from '../../lib/api/content-coding.ts';
import { STREAMING_LIMITS } from '../../lib/config/streaming.ts';
import { DependencyFailure } from '../../lib/failures.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import type { Order } from '../../lib/orders/order.ts';
import { ordersJsonArray } from '../../lib/orders/order-json.ts';
import type { UnreadableOrder } from '../../lib/orders/order-store.ts';
import { compressed } from './compression.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit } from './metrics.ts';
import { bindToScope, iterateInScope } from './scope.ts';

/**
 * What each stage of the list's stream buffers ahead of its reader (Node's default is 64 KiB):
 * with compression, every KiB here is about nine KiB of orders read ahead of a slow client.
 */
const STREAM_BUFFER_BYTES = 16 * 1024;

/** What one list sent, and what it could not read: logged and counted when it ends. */
export class ListReport {
  orders = 0;
  bytes = 0;
  private unreadable = 0;
  private firstUnreadable: UnreadableOrder | undefined;

  readonly addUnreadable = (problem: UnreadableOrder): void => {
    this.unreadable++;
    this.firstUnreadable ??= problem;
  };

  /**
   * Once, when the list has ended (complete, failed, or its client gone); `page`: what a v2
   * page was read from and what it cost, for its line.
   */
  publish(coding: string, outcome: string, page?: Readonly<Record<string, unknown>>): void {
    if (this.unreadable > 0) {
      logger.warn('Stored orders could not be read whole: listed without the unreadable fields', {
        unreadableOrders: this.unreadable,
        first: this.firstUnreadable,
      });
      metrics.addMetric(METRIC_NAMES.unreadableOrders, MetricUnit.Count, this.unreadable);
    }
    logger.info('List sent', {
      orders: this.orders,
      bytes: this.bytes,
      coding,
      outcome,
      ...(page ? { page } : {}),
    });
    metrics.addMetric(METRIC_NAMES.listOrdersSent, MetricUnit.Count, this.orders);
    metrics.addMetric(METRIC_NAMES.listResponseBytes, MetricUnit.Bytes, this.bytes);
  }
}

/** The list failed after its status line: the client got a cut-off body. Logged and counted. */
function streamFailed(error: unknown, report: ListReport): void {
  logger.error('List failed after its status line: the body was cut off', {
    ordersSent: report.orders,
    bytesSent: report.bytes,
    ...(error instanceof DependencyFailure
      ? { failure: { kind: error.kind, dependency: error.dependency, reason: error.reason } }
      : {}),
    error: error as Error,
  });
  metrics.addMetric(METRIC_NAMES.listStreamFailures, MetricUnit.Count, 1);
}

/** The orders as they are sent, counted; a failure of the source is logged and counted. */
async function* counted(batches: AsyncIterable<readonly Order[]>, report: ListReport) {
  try {
    for await (const batch of batches) {
      yield batch;
      report.orders += batch.length;
    }
  } catch (error) {
    streamFailed(error, report);
    throw error;
  }
}

/** The body's bytes as they go out, counted; the stream is cut before Lambda's ceiling. */
function metered(body: Readable, report: ListReport, ceilingBytes: number): Transform {
  // Written as the body flows, on its reader's side: in the invocation's scope.
  const failed = bindToScope((error: Error) => streamFailed(error, report));
  const meter = new Transform({
    highWaterMark: STREAM_BUFFER_BYTES,
    transform(chunk: Buffer, _encoding, done) {
      if (report.bytes + chunk.byteLength <= ceilingBytes) {
        report.bytes += chunk.byteLength;
        done(null, chunk);
        return;
      }
      const error = new Error(
        `the response would pass ${ceilingBytes} bytes, the ceiling of a streamed response`,
      );
      failed(error);
      done(error);
    },
  });
  // Errors and departures both ways: a failed body ends the meter, a gone client the body.
  return pipeline(body, meter, () => undefined);
}

/**
 * The list's body in `coding`, cut off before `ceilingBytes` (default: Lambda's ceiling of a
 * streamed response): past it Lambda would cut the stream; the body ends just before, so that
 * the cut is logged and counted like any list that fails midway.
 */
export function listBody(
  orders: AsyncIterable<readonly Order[]>,
  coding: Coding,
  report: ListReport,
  ceilingBytes: number = STREAMING_LIMITS.ceilingBytes,
): Readable {
  // Bytes, not objects, and little of them: a slow client holds back the reads early.
  const json = Readable.from(iterateInScope(ordersJsonArray(counted(orders, report))), {
    objectMode: false,
    highWaterMark: STREAM_BUFFER_BYTES,
  });
  const encoded =
    coding === 'identity' ? json : compressed(json, coding, { bufferBytes: STREAM_BUFFER_BYTES });
  const body = metered(encoded, report, ceilingBytes);
  // The report is written when the stream ends, outside the invocation's chain: in its scope.
  body.once(
    'close',
    bindToScope(() => report.publish(coding, body.readableEnded ? 'complete' : 'cut off')),
  );
  return body;
}

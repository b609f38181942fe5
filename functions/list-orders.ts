/**
 * GET /store/orders — every order, sorted by id, streamed as one JSON array, compressed with the
 * best coding the client accepts (Accept-Encoding: zstd, br, gzip, else identity).
 *
 * Conditional: every 200 carries a weak ETag — the list's version, read before its first page
 * (lib/dynamodb/list-version.ts) — and `If-None-Match` with a matching tag (or `*`) is answered
 * 304 Not Modified without reading an order. The tag is weak (RFC 9110 §8.8.1): it stands for
 * the list, the same for every content coding, whose bytes differ and are not even the same
 * from one compressed response to the next (the compressor flushes when the reads pause); weak
 * comparison is what If-None-Match uses anyway. A 304 that the key's free allowance covers does
 * not use the plan's quota (./shared/rate-limit.ts, lib/limits/conditional.ts).
 */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { pipeline, Readable, Transform } from 'node:stream';
import { negotiateCoding, type Coding } from '../lib/api/content-coding.ts';
import {
  formatEntityTag,
  isConditional,
  notModified,
  parseIfNoneMatch,
  type EntityTag,
  type IfNoneMatch,
} from '../lib/api/etag.ts';
import { jsonStream, notModifiedResponse } from '../lib/api/http.ts';
import { STREAMING_LIMITS } from '../lib/config/streaming.ts';
import { DependencyFailure } from '../lib/failures.ts';
import type { FreeAllowance } from '../lib/limits/conditional.ts';
import type { RateLimiter } from '../lib/limits/limiter.ts';
import { METRIC_NAMES } from '../lib/metrics.ts';
import { listOrders, listVersion } from '../lib/orders/operations.ts';
import type { Order } from '../lib/orders/order.ts';
import { ordersJsonArray } from '../lib/orders/order-json.ts';
import type { ListVersion, OrderStore, UnreadableOrder } from '../lib/orders/order-store.ts';
import { requestSignal } from './shared/budget.ts';
import { compressed } from './shared/compression.ts';
import {
  limiterClientFromEnv,
  orderStoreFromEnv,
  rateLimiterFromEnv,
} from './shared/dependencies.ts';
import { ApiError } from './shared/http-errors.ts';
import { httpMiddlewares } from './shared/http-function.ts';
import { logger } from './shared/logger.ts';
import { metrics, MetricUnit } from './shared/metrics.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

/**
 * What each stage of the list's stream buffers ahead of its reader (Node's default is 64 KiB):
 * with compression, every KiB here is about nine KiB of orders read ahead of a slow client.
 */
const STREAM_BUFFER_BYTES = 16 * 1024;

/** Every answer that depends on Accept-Encoding says so (for caches): the 200, 304 and 406. */
const VARIES = { Vary: 'Accept-Encoding' } as const;

/**
 * Caches may keep the list but must ask the service (a conditional request) before each use
 * (`no-cache`), and only a client's own cache may keep it (`private`: it answers a request with
 * an API key; RFC 9111 §3.5 keeps shared caches from reusing it anyway, `private` says so to
 * those that do not follow that rule).
 */
const CACHE_CONTROL = { 'Cache-Control': 'private, no-cache' } as const;

export interface ListOrdersDependencies extends Omit<RateLimitDependencies, 'free'> {
  readonly orders: () => OrderStore;
  /**
   * The keys' free allowance of conditional requests (lib/limits/conditional.ts); without it a
   * 304 counts like any request.
   */
  readonly freeAllowance?: () => FreeAllowance;
  /**
   * The response size at which the list is cut off (default: Lambda's ceiling). Past it Lambda
   * would cut the stream; the function ends it itself just before, so that the cut is logged
   * and counted like any list that fails midway.
   */
  readonly ceilingBytes?: number;
}

/** What one list sent, and what it could not read: logged and published when it ends. */
class ListReport {
  orders = 0;
  bytes = 0;
  private unreadable = 0;
  private firstUnreadable: UnreadableOrder | undefined;

  readonly addUnreadable = (problem: UnreadableOrder): void => {
    this.unreadable++;
    this.firstUnreadable ??= problem;
  };

  /** Once, when the list has ended (complete, failed, or its client gone). */
  publish(coding: string, outcome: string): void {
    if (this.unreadable > 0) {
      logger.warn('Stored orders could not be read whole: listed without the unreadable fields', {
        unreadableOrders: this.unreadable,
        first: this.firstUnreadable,
      });
      metrics.addMetric(METRIC_NAMES.unreadableOrders, MetricUnit.Count, this.unreadable);
    }
    logger.info('List sent', { orders: this.orders, bytes: this.bytes, coding, outcome });
    metrics.addMetric(METRIC_NAMES.listOrdersSent, MetricUnit.Count, this.orders);
    metrics.addMetric(METRIC_NAMES.listResponseBytes, MetricUnit.Bytes, this.bytes);
    metrics.publishStoredMetrics();
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
      streamFailed(error, report);
      done(error);
    },
  });
  // Errors and departures both ways: a failed body ends the meter, a gone client the body.
  return pipeline(body, meter, () => undefined);
}

/**
 * What a list request asks, read once per invocation, and the list's version, whose read
 * starts at the first look (the rate limiter's, before it counts): before the first page.
 */
interface ListRequest {
  readonly condition: IfNoneMatch;
  readonly coding: Coding | undefined;
  readonly version: Promise<ListVersion>;
}

function tagOf(version: ListVersion): EntityTag | undefined {
  return version.tag === undefined ? undefined : { weak: true, opaque: version.tag };
}

function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  for (const [key, values] of Object.entries(event.multiValueHeaders ?? {})) {
    if (key.toLowerCase() === name && values) return values.join(', ');
  }
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
}

export function createListOrdersHandler(deps: ListOrdersDependencies) {
  const requests = new WeakMap<object, ListRequest>();
  const listRequest = (event: APIGatewayProxyEvent, context: Context): ListRequest => {
    let request = requests.get(event);
    if (!request) {
      const version = listVersion(deps.orders(), { signal: requestSignal(event, context) });
      // Awaited by the handler; a request refused before it must not leave it unobserved.
      version.catch(() => undefined);
      request = {
        condition: parseIfNoneMatch(header(event, 'if-none-match')),
        coding: negotiateCoding(header(event, 'accept-encoding')),
        version,
      };
      requests.set(event, request);
    }
    return request;
  };
  const willAnswerFree = (event: APIGatewayProxyEvent, context: Context) => {
    const request = listRequest(event, context);
    if (!isConditional(request.condition)) return undefined;
    // A 406 comes before any precondition (RFC 9110 §13.2.1).
    if (request.coding === undefined) return Promise.resolve(false);
    return request.version.then((version) => notModified(request.condition, tagOf(version)));
  };
  const limits: RateLimitDependencies = {
    limiter: deps.limiter,
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.requestBudgetMs ? { requestBudgetMs: deps.requestBudgetMs } : {}),
    ...(deps.freeAllowance ? { free: { allowance: deps.freeAllowance, willAnswerFree } } : {}),
  };
  return middy<APIGatewayProxyEvent>({ executionMode: executionModeStreamifyResponse })
    .use(httpMiddlewares(limits))
    .handler(async (event, context) => {
      const { condition, coding, version } = listRequest(event, context);
      if (coding === undefined) throw new ApiError('NOT_ACCEPTABLE', { headers: VARIES });
      const tag = tagOf(await version);
      const validators = {
        ...(tag ? { ETag: formatEntityTag(tag) } : {}),
        ...CACHE_CONTROL,
        ...VARIES,
      };
      if (notModified(condition, tag)) {
        logger.info('List not modified', { etag: validators.ETag });
        metrics.addMetric(METRIC_NAMES.listNotModified, MetricUnit.Count, 1);
        return notModifiedResponse(validators);
      }
      const report = new ListReport();
      const orders = await listOrders(deps.orders(), {
        signal: requestSignal(event, context),
        onUnreadable: report.addUnreadable,
      });
      // Bytes, not objects, and little of them: a slow client holds back the reads early.
      const json = Readable.from(ordersJsonArray(counted(orders, report)), {
        objectMode: false,
        highWaterMark: STREAM_BUFFER_BYTES,
      });
      const encoded =
        coding === 'identity'
          ? json
          : compressed(json, coding, { bufferBytes: STREAM_BUFFER_BYTES });
      const body = metered(encoded, report, deps.ceilingBytes ?? STREAMING_LIMITS.ceilingBytes);
      body.once('close', () => report.publish(coding, body.readableEnded ? 'complete' : 'cut off'));
      return jsonStream(200, body, {
        ...(coding === 'identity' ? {} : { 'Content-Encoding': coding }),
        ...validators,
      });
    });
}

// Created at load (Lambda's init, outside the handler); the stores at the first call.
const limiterClient = limiterClientFromEnv();
let store: OrderStore | undefined;
let limiter: (RateLimiter & FreeAllowance) | undefined;
export const handler = createListOrdersHandler({
  orders: () => (store ??= orderStoreFromEnv()),
  limiter: () => (limiter ??= rateLimiterFromEnv(limiterClient)),
  freeAllowance: () => (limiter ??= rateLimiterFromEnv(limiterClient)),
});

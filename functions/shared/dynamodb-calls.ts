/**
 * What each DynamoDB call of an invocation took and how it ended, for the operator: one log line
 * per invocation (`DynamoDB calls`, with the request id like every line) listing the calls by
 * operation and table, and the `DynamoDbCallDuration` metric (one value per call). Why not X-Ray
 * subsegments: docs/architecture.md, "Functions".
 */
import type { MiddlewareObj, Request } from '@middy/core';
import type {
  DynamoDBDocumentClient,
  ServiceInputTypes,
  ServiceOutputTypes,
} from '@aws-sdk/lib-dynamodb';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { isConditionFailure } from '../../lib/dynamodb/errors.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { logger } from './logger.ts';
import { metrics, MetricUnit, publishInvocationMetrics } from './metrics.ts';
import { entry, fromScope, bindToScope, scopeKey, type ScopeEntry } from './scope.ts';

/** The calls of one operation on one table within an invocation. */
export interface CallSummary {
  readonly operation: string;
  readonly table: string;
  calls: number;
  /** Calls that ended with an error (after the SDK's retries), a failed condition aside. */
  failed: number;
  /** Calls whose condition failed: the database answered, and said no (not a failure). */
  conditionsFailed: number;
  /**
   * Calls the request gave up on: still unanswered when the invocation answered, or aborted by
   * its deadline or its client's departure (whether the SDK settles such a call before the
   * answer or after, waiting out a retry's back-off, is a race: not a failure either way).
   */
  abandoned: number;
  /** The SDK's attempts of the calls that ended, retries included. */
  attempts: number;
  totalMs: number;
  maxMs: number;
  /** The error name of the last failed call. */
  lastError?: string;
}

interface Call {
  readonly operation: string;
  readonly table: string;
  readonly started: number;
}
/** How a call that did not simply answer is counted. */
type Counted = 'failed' | 'conditionsFailed' | 'abandoned';

const NOTHING = {
  calls: 0,
  failed: 0,
  conditionsFailed: 0,
  abandoned: 0,
  attempts: 0,
  totalMs: 0,
  maxMs: 0,
};

/** The DynamoDB calls of one invocation (./scope.ts), until its answer takes them. */
class CallRecord {
  private summaries = new Map<string, CallSummary>();
  private readonly unanswered = new Set<Call>();

  start(operation: string, table: string): Call {
    const call = { operation, table, started: performance.now() };
    this.unanswered.add(call);
    return call;
  }

  ended(call: Call, { $metadata }: Partial<MetadataBearer>, error?: { name?: string }): void {
    // Reported (as abandoned) with the invocation's answer already.
    if (!this.unanswered.delete(call)) return;
    const attempts = $metadata?.attempts ?? 1;
    const now = performance.now();
    if (error === undefined) return this.add(call, now, undefined, attempts);
    if (isConditionFailure(error)) return this.add(call, now, 'conditionsFailed', attempts);
    if (error.name === 'AbortError') return this.add(call, now, 'abandoned', attempts);
    this.add(call, now, 'failed', attempts, error.name ?? 'Error');
  }

  /** What the calls took (calls still unanswered: abandoned); calls ending later are not counted. */
  take(): CallSummary[] {
    const now = performance.now();
    for (const call of this.unanswered) this.add(call, now, 'abandoned');
    this.unanswered.clear();
    const taken = [...this.summaries.values()].map((s) => ({
      ...s,
      totalMs: round(s.totalMs),
      maxMs: round(s.maxMs),
    }));
    this.summaries = new Map();
    return taken;
  }

  /** Adds a call's time and outcome to its operation's summary, and its metric value. */
  private add(call: Call, now: number, counted?: Counted, attempts = 0, error?: string): void {
    const { operation, table } = call;
    const key = `${operation} ${table}`;
    const summary = this.summaries.get(key) ?? { operation, table, ...NOTHING };
    this.summaries.set(key, summary);
    const ms = now - call.started;
    summary.calls += 1;
    summary.totalMs += ms;
    summary.maxMs = Math.max(summary.maxMs, ms);
    summary.attempts += attempts;
    if (counted) summary[counted] += 1;
    if (error) summary.lastError = error;
    metrics.addMetric(METRIC_NAMES.dynamoDbCallDuration, MetricUnit.Milliseconds, round(ms));
  }
}

const INVOCATION_CALLS = scopeKey<CallRecord>('DynamoDB calls');

/** A record for an invocation's scope: every call its code makes is in it. */
export function invocationCalls(): ScopeEntry {
  return entry(INVOCATION_CALLS, new CallRecord());
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function tableOf(input: ServiceInputTypes): string {
  if ('TableName' in input && input.TableName) return input.TableName;
  if ('RequestItems' in input && input.RequestItems) return Object.keys(input.RequestItems).join();
  return 'TransactItems' in input ? 'transaction' : 'unknown';
}

const recordCall: InitializeMiddleware<ServiceInputTypes, ServiceOutputTypes> = (next, context) => {
  return async (args) => {
    const record = fromScope(INVOCATION_CALLS);
    if (!record) return next(args);
    const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
    const call = record.start(operation, tableOf(args.input));
    let result: Awaited<ReturnType<typeof next>>;
    try {
      result = await next(args);
    } catch (error) {
      const failure = (error ?? {}) as Partial<MetadataBearer> & { name?: string };
      record.ended(call, failure, failure);
      throw error;
    }
    record.ended(call, result.output);
    return result;
  };
};

/** Records every call the client makes within an invocation (retries included in one call's time). */
export function recordCalls(client: DynamoDBDocumentClient): DynamoDBDocumentClient {
  client.middlewareStack.add(recordCall, { step: 'initialize', name: 'recordDynamoDbCalls' });
  return client;
}

/**
 * The records of an invocation, once its answer is complete (at once for a buffered answer, when
 * the body ends for a streamed one: the list's pages are read while it streams): the line of its
 * DynamoDB calls, then the metrics flush, which so carries every call's duration, those abandoned
 * at the answer included.
 */
export function recordInvocation(): MiddlewareObj {
  const whenAnswered = (request: Request): void => {
    const calls = fromScope(INVOCATION_CALLS);
    // Run when a streamed body closes, outside the invocation's chain: bound back to its scope.
    const record = bindToScope((): void => {
      const taken = calls?.take() ?? [];
      if (taken.length > 0) logger.info('DynamoDB calls', { dynamodb: taken });
      publishInvocationMetrics();
    });
    const body = (request.response as { body?: unknown } | undefined)?.body;
    if (body && typeof (body as NodeJS.ReadableStream).once === 'function') {
      (body as NodeJS.ReadableStream).once('close', record);
    } else {
      record();
    }
  };
  return { after: whenAnswered, onError: whenAnswered };
}

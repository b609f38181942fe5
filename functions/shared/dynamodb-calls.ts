/**
 * What each DynamoDB call of an invocation took and how it ended, for the operator: one log line
 * per invocation (`DynamoDB calls`, with the request id like every line) listing the calls by
 * operation and table, and the `DynamoDbCallDuration` metric (one value per call).
 *
 * Why not X-Ray subsegments: the X-Ray SDK (Powertools tracer) costs every cold start about 20–35
 * ms of module loading (1.16–1.66× the floor, `npm run bench:cold-init`) and tracks every promise
 * of the process through an async hook (a list: +55% CPU). A middleware on the SDK client costs a
 * clock read per call. Lambda's active tracing still records each invocation in X-Ray.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj, Request } from '@middy/core';
import { isConditionFailure } from '../../lib/dynamodb/errors.ts';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { logger } from './logger.ts';
import { metrics } from './metrics.ts';

/** The calls of one operation on one table within an invocation. */
export interface CallSummary {
  readonly operation: string;
  readonly table: string;
  calls: number;
  /** Calls that ended with an error (after the SDK's retries), a failed condition aside. */
  failed: number;
  /** Calls whose condition failed: the database answered, and said no (not a failure). */
  conditionsFailed: number;
  /** Calls still unanswered when the invocation answered: abandoned at its deadline. */
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
  readonly invocation: number;
}

/** Invocations are numbered so that a call ending after its own was reported is not misfiled. */
let invocation = 0;
let summaries = new Map<string, CallSummary>();
const unanswered = new Set<Call>();

function summaryOf(call: Call): CallSummary {
  const key = `${call.operation} ${call.table}`;
  let summary = summaries.get(key);
  if (!summary) {
    summary = {
      operation: call.operation,
      table: call.table,
      calls: 0,
      failed: 0,
      conditionsFailed: 0,
      abandoned: 0,
      attempts: 0,
      totalMs: 0,
      maxMs: 0,
    };
    summaries.set(key, summary);
  }
  return summary;
}

function addTime(summary: CallSummary, ms: number): void {
  summary.calls += 1;
  summary.totalMs += ms;
  summary.maxMs = Math.max(summary.maxMs, ms);
  metrics.addMetric(METRIC_NAMES.dynamoDbCallDuration, MetricUnit.Milliseconds, round(ms));
}

function ended(call: Call, attempts: number, error?: { name?: string } | null): void {
  unanswered.delete(call);
  // Reported (as abandoned) with its own invocation already.
  if (call.invocation !== invocation) return;
  const summary = summaryOf(call);
  addTime(summary, performance.now() - call.started);
  summary.attempts += attempts;
  if (error !== undefined && isConditionFailure(error)) {
    summary.conditionsFailed += 1;
  } else if (error !== undefined) {
    summary.failed += 1;
    summary.lastError = error?.name ?? 'Error';
  }
}

/** What the invocation's DynamoDB calls took (calls still unanswered: abandoned), and clears it. */
export function takeCalls(): CallSummary[] {
  const now = performance.now();
  for (const call of unanswered) {
    if (call.invocation !== invocation) continue;
    const summary = summaryOf(call);
    addTime(summary, now - call.started);
    summary.abandoned += 1;
  }
  const taken = [...summaries.values()].map((summary) => ({
    ...summary,
    totalMs: round(summary.totalMs),
    maxMs: round(summary.maxMs),
  }));
  summaries = new Map();
  invocation += 1;
  return taken;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

interface CallInput {
  TableName?: string;
  RequestItems?: Record<string, unknown>;
  TransactItems?: unknown[];
}

function tableOf(input: CallInput | undefined): string {
  if (input?.TableName) return input.TableName;
  if (input?.RequestItems) return Object.keys(input.RequestItems).join(',');
  return input?.TransactItems ? 'transaction' : 'unknown';
}

interface SdkClient {
  readonly middlewareStack: {
    add(middleware: unknown, options: { step: 'initialize'; name: string }): void;
  };
}

type Next = (args: { input: CallInput }) => Promise<{ output?: { $metadata?: Metadata } }>;
interface Metadata {
  attempts?: number;
}

/** Records every call the client makes (retries included in one call's time). */
export function recordCalls<T extends SdkClient>(client: T): T {
  client.middlewareStack.add(
    (next: Next, context: { commandName?: string }) => async (args: { input: CallInput }) => {
      const call: Call = {
        operation: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
        table: tableOf(args.input),
        started: performance.now(),
        invocation,
      };
      unanswered.add(call);
      try {
        const result = await next(args);
        ended(call, result.output?.$metadata?.attempts ?? 1);
        return result;
      } catch (error) {
        const failure = error as { name?: string; $metadata?: Metadata } | null;
        ended(call, failure?.$metadata?.attempts ?? 1, failure);
        throw error;
      }
    },
    { step: 'initialize', name: 'recordDynamoDbCalls' },
  );
  return client;
}

function logCalls(): void {
  const taken = takeCalls();
  if (taken.length > 0) logger.info('DynamoDB calls', { dynamodb: taken });
}

/**
 * Logs the invocation's calls when its answer is complete: at once for a buffered answer, when
 * the body ends for a streamed one (the list's pages are read while it streams).
 */
export function logDynamoDbCalls(): MiddlewareObj {
  const whenAnswered = (request: Request): void => {
    const body = (request.response as { body?: unknown } | undefined)?.body;
    if (body && typeof (body as NodeJS.ReadableStream).once === 'function') {
      (body as NodeJS.ReadableStream).once('close', logCalls);
    } else {
      logCalls();
    }
  };
  return {
    before: () => void takeCalls(),
    after: whenAnswered,
    onError: whenAnswered,
  };
}

/**
 * Fault injection into a DynamoDB client (an SDK middleware: the data path stays on DynamoDB
 * Local), and capture of what the functions log and count.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { vi } from 'vitest';
import { metrics } from '../../functions/shared/metrics.ts';

export const FAULTS = [
  'throttling',
  'server-error',
  'stall',
  'connection-reset',
  'access-denied',
  'missing-table',
] as const;
export type Fault = (typeof FAULTS)[number];

/** Faults that retrying later can cure (503); the others are permanent (500). */
export const TRANSIENT_FAULTS: readonly Fault[] = [
  'throttling',
  'server-error',
  'stall',
  'connection-reset',
];

/** The error DynamoDB or the network gives for a fault, as the SDK raises it. */
export function faultError(fault: Exclude<Fault, 'stall'>): Error {
  const service = (name: string, message: string, status: number) =>
    Object.assign(new Error(message), {
      name,
      $fault: 'client',
      $metadata: { httpStatusCode: status },
    });
  switch (fault) {
    case 'throttling':
      return service(
        'ThrottlingException',
        'Rate of requests exceeds the allowed throughput.',
        400,
      );
    case 'server-error':
      return service('InternalServerError', 'Internal server error', 500);
    case 'connection-reset':
      return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    case 'access-denied':
      return service('AccessDeniedException', 'User is not authorized to perform: dynamodb', 400);
    case 'missing-table':
      return service('ResourceNotFoundException', 'Requested resource not found', 400);
  }
}

export interface FaultTarget {
  /** The table (of a batch call: the first it names). */
  readonly table: string;
  /** Only calls of this command (e.g. `QueryCommand`). */
  readonly command?: string;
  /** Only calls whose input passes this test (e.g. a Query with an ExclusiveStartKey). */
  readonly when?: (input: Record<string, unknown>) => boolean;
}

/**
 * Makes matching calls of a client fail with `fault` (a stall never answers: the caller's
 * deadline must end it). Returns a function that removes the fault; counts the calls it hit.
 */
export function injectFault(
  client: DynamoDBDocumentClient,
  target: FaultTarget,
  fault: Fault,
): { hits: () => number; remove: () => void } {
  const name = `fault-${fault}-${Math.random()}`;
  let hits = 0;
  client.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as Record<string, unknown>;
      const table = input.TableName ?? Object.keys(input.RequestItems ?? {})[0];
      if (
        table !== target.table ||
        (target.command !== undefined && context.commandName !== target.command) ||
        (target.when && !target.when(input))
      ) {
        return next(args);
      }
      hits++;
      if (fault === 'stall') {
        // Answers (with an error) only long after any deadline, so that nothing leaks.
        return new Promise((_, reject) =>
          setTimeout(() => reject(new Error('stalled call released')), 20_000).unref(),
        );
      }
      return Promise.reject(faultError(fault));
    },
    { step: 'finalizeRequest', name, priority: 'low' },
  );
  return { hits: () => hits, remove: () => void client.middlewareStack.remove(name) };
}

export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly correlation_id?: string;
  readonly [key: string]: unknown;
}

/**
 * Captures the JSON log lines the functions write (INFO to stdout, WARN and ERROR
 * to stderr) and the metrics they record. The logger must be loaded with a log level that
 * writes them (LOG_LEVEL set before the functions are imported).
 */
export function captureObservations() {
  const lines: LogLine[] = [];
  const capture = (chunk: unknown): boolean => {
    for (const text of String(chunk).split('\n')) {
      if (!text.startsWith('{')) continue;
      try {
        lines.push(JSON.parse(text) as LogLine);
      } catch {
        // not a log line
      }
    }
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  const recorded: { name: string; value: number }[] = [];
  const metric = vi
    .spyOn(metrics, 'addMetric')
    .mockImplementation((name: string, _unit: unknown, value: number) => {
      recorded.push({ name, value });
      return metrics;
    });
  return {
    logs: () => [...lines],
    /**
     * The names of the metrics recorded, in order, but the times every answer records: the
     * per-call DynamoDB durations and the time to first byte.
     */
    metrics: () =>
      recorded
        .map(({ name }) => name)
        .filter((name) => name !== 'DynamoDbCallDuration' && name !== 'TimeToFirstByte'),
    /** The values recorded for one metric, in order. */
    values: (name: string) => recorded.filter((m) => m.name === name).map(({ value }) => value),
    reset: () => {
      lines.splice(0);
      recorded.splice(0);
    },
    restore: () => {
      out.mockRestore();
      err.mockRestore();
      metric.mockRestore();
    },
  };
}

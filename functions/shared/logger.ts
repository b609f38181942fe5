/**
 * The functions' logger: one JSON line per record, written whole with one write (DEBUG and INFO
 * to stdout, WARN and ERROR to stderr; Lambda sends both to CloudWatch Logs as they are). Every
 * line has the fields the runbook's queries use (docs/operations.md): level, message, timestamp,
 * service, cold_start, function_name, function_version, function_arn, function_memory_size,
 * function_request_id,
 * correlation_id (the request id API Gateway gave the client), xray_trace_id, and deploy_check
 * (true) on the deploy check's invocations; then the record's own fields. Errors are written with name, message, stack, cause and their own fields.
 *
 * Events are never logged whole (they carry the Authorization header), and as a second line of
 * defence every record passes a replacer that blanks secret-looking fields and anything shaped
 * like an API key or a bearer credential. A record that cannot be serialized still gives a line.
 *
 * An invocation's fields are its own (./scope.ts): `logger` writes a line with the fields of the
 * invocation running as it is called, so two invocations in one process never mix theirs. The
 * trace id is the invocation's too: the Lambda runtime's per-invocation store first (what
 * Powertools reads), `_X_AMZN_TRACE_ID` only where the runtime has none.
 *
 * The level is LOG_LEVEL (DEBUG, INFO, WARN, ERROR or SILENT; INFO when unset), read at load.
 * Why not Powertools: docs/architecture.md, "Functions".
 */
import type { Context } from 'aws-lambda';
import { SERVICE_NAME } from '../../lib/metrics.ts';
import { redactValue } from './redact.ts';
import { entry, fromScope, scopeKey, type ScopeEntry } from './scope.ts';

export const LOG_LEVELS = { DEBUG: 8, INFO: 12, WARN: 16, ERROR: 20, SILENT: 28 } as const;
export type LogLevel = keyof typeof LOG_LEVELS;
type Fields = Readonly<Record<string, unknown>>;

/** An Error as a log field: what `JSON.stringify` alone would write as `{}`. */
function errorFields(error: Error): Record<string, unknown> {
  const { name, message, stack, cause } = error;
  return { ...error, name, message, stack, ...(cause === undefined ? {} : { cause }) };
}

/**
 * The record as one JSON line: errors spelled out, bigints as text, a repeated object once, and
 * everything redacted (a secret-named field whatever it holds, an Error included).
 */
function serialize(record: Fields): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(record, (key: string, value: unknown) => {
    if (typeof value === 'bigint') return redactValue(key, value.toString());
    if (typeof value !== 'object' || value === null) return redactValue(key, value);
    if (seen.has(value)) return '[Circular]';
    seen.add(value);
    return redactValue(key, value instanceof Error ? errorFields(value) : value);
  });
}

/** What went wrong, as text, whatever was thrown. */
function describeThrown(error: unknown): string {
  try {
    return String(error);
  } catch {
    return 'an unprintable value';
  }
}

/** The Lambda runtime's per-invocation store (what `@aws/lambda-invoke-store` installs). */
interface RuntimeInvokeStore {
  getXRayTraceId(): string | undefined;
}

/**
 * The running invocation's trace header → its trace id, as X-Ray shows it (`Root=1-…;Parent=…;
 * Sampled=1`). The runtime's store holds each invocation's own; the environment variable only the
 * last one the process was told of, which is another's when invocations share a process.
 */
export function xrayTraceId(): string | undefined {
  const runtime = (globalThis as { awslambda?: { InvokeStore?: RuntimeInvokeStore } }).awslambda;
  const header = runtime?.InvokeStore?.getXRayTraceId() ?? process.env._X_AMZN_TRACE_ID;
  if (!header) return undefined;
  // The runtime's store may hold the bare id; the environment variable holds the whole header.
  return header.includes('=') ? /Root=([^;]+)/.exec(header)?.[1] : header;
}

/** The fields of the invocation running now, for lines written through the process's logger. */
const INVOCATION_FIELDS = scopeKey<Fields>('log fields');

/** Where a line goes: DEBUG and INFO to stdout, WARN and ERROR to stderr. */
function writeLine(line: string, level: LogLevel): void {
  (LOG_LEVELS[level] >= LOG_LEVELS.WARN ? process.stderr : process.stdout).write(line);
}

export class Logger {
  private readonly threshold: number;
  private readonly write: typeof writeLine;
  /** On an invocation's logger (startInvocation): its fields. */
  private invocation: Fields | undefined;
  private coldStart = process.env.AWS_LAMBDA_INITIALIZATION_TYPE !== 'provisioned-concurrency';

  constructor(level = process.env.LOG_LEVEL, write = writeLine) {
    this.write = write;
    const known = (level?.toUpperCase() ?? 'INFO') as LogLevel;
    this.threshold = LOG_LEVELS[known] ?? LOG_LEVELS.INFO;
    if (!(known in LOG_LEVELS)) this.warn(`LOG_LEVEL ${level} is not a level: logging at INFO`);
  }

  /**
   * The fields of an invocation now starting, for its scope (./invocation.ts): every line written
   * in it through this logger carries them — the Lambda context, the request id the client sees
   * when there is one, the X-Ray trace.
   */
  invocationFields(
    context: Partial<Context>,
    correlationId?: string,
    { deployCheck = false }: { readonly deployCheck?: boolean } = {},
  ): ScopeEntry {
    return entry(INVOCATION_FIELDS, {
      ...this.fieldsOf(context, correlationId),
      // The deploy check's invocation (lib/deploy-check.ts): no caller's request.
      ...(deployCheck ? { deploy_check: true } : {}),
    });
  }

  /**
   * The logger of an invocation now starting, whose own lines carry its fields (the same as
   * invocationFields'), for code that logs through it rather than in the invocation's scope.
   */
  startInvocation(context: Partial<Context>, correlationId?: string): Logger {
    const child = Object.create(this) as Logger;
    child.invocation = this.fieldsOf(context, correlationId);
    return child;
  }

  /** An invocation's fields; the first invocation of the process is its cold start. */
  private fieldsOf(context: Partial<Context>, correlationId: string | undefined): Fields {
    const fields = {
      cold_start: this.coldStart,
      function_name: context.functionName,
      // The version that ran (through `live`, the number a deploy published): what the deploy
      // alarms count 5XX answers by (infra/alarms.ts).
      function_version: context.functionVersion,
      function_arn: context.invokedFunctionArn,
      function_memory_size: context.memoryLimitInMB,
      function_request_id: context.awsRequestId,
      correlation_id: correlationId,
      xray_trace_id: xrayTraceId(),
    };
    this.coldStart = false;
    return fields;
  }

  debug(message: string, fields?: Fields): void {
    this.log('DEBUG', message, fields);
  }
  info(message: string, fields?: Fields): void {
    this.log('INFO', message, fields);
  }
  warn(message: string, fields?: Fields): void {
    this.log('WARN', message, fields);
  }
  error(message: string, fields?: Fields): void {
    this.log('ERROR', message, fields);
  }

  private log(level: LogLevel, message: string, fields: Fields = {}): void {
    if (LOG_LEVELS[level] < this.threshold) return;
    const base = {
      level,
      message,
      timestamp: new Date().toISOString(),
      service: SERVICE_NAME,
      ...(this.invocation ?? fromScope(INVOCATION_FIELDS)),
    };
    let line: string;
    try {
      // The record's own fields come after the standard ones and never replace them.
      line = serialize({ ...base, ...fields, ...base });
    } catch (error) {
      // A getter that throws, say: the line is written without the record's own fields.
      line = serialize({ ...base, unserializable: describeThrown(error) });
    }
    this.write(`${line}\n`, level);
  }
}

/** The process's logger; in an invocation, its lines carry the invocation's fields. */
export const logger = new Logger();

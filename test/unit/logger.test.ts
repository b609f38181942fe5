import { AsyncLocalStorage } from 'node:async_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Logger, type LogLevel } from '../../functions/shared/logger.ts';
import { redactValue } from '../../functions/shared/redact.ts';
import { scoped } from '../../functions/shared/scope.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';

/** A logger whose lines are kept, parsed, with the level each was written at. */
function capturing(level?: string) {
  const lines: { level: LogLevel; record: Record<string, unknown>; text: string }[] = [];
  const logger = new Logger(level, (text, lineLevel) => {
    lines.push({ level: lineLevel, record: JSON.parse(text) as Record<string, unknown>, text });
  });
  return { logger, lines, records: () => lines.map(({ record }) => record) };
}

const levelOf = (line: unknown): unknown => (JSON.parse(String(line)) as { level: unknown }).level;

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('log redaction', () => {
  it('blanks secret-looking fields whatever their value', () => {
    for (const field of [
      'Authorization',
      'authorizationToken',
      'apiKey',
      'api_key',
      'keyHash',
      'secret',
    ]) {
      expect(redactValue(field, 'anything')).toBe('[redacted]');
    }
    expect(redactValue('keyId', 'key_abc')).toBe('key_abc');
  });

  it('blanks API keys and bearer credentials inside any string', () => {
    const key = generateApiKey();
    expect(redactValue('message', `refused ${key} twice`)).toBe('refused [redacted] twice');
    expect(redactValue('header', 'Bearer my-local-key')).toBe('[redacted]');
    expect(JSON.stringify({ nested: { line: `token was ${key}` } }, redactValue)).not.toContain(
      key,
    );
  });

  it('keeps a key out of every written line: message, fields, nested errors', () => {
    const key = generateApiKey();
    const { logger, lines } = capturing('INFO');
    logger.info(`refused ${key}`, {
      headers: { authorization: `Bearer ${key}` },
      error: new Error(`bad key ${key}`, { cause: new Error(`still ${key}`) }),
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.text).not.toContain(key);
    expect(lines[0]!.record.message).toBe('refused [redacted]');
  });

  it('blanks a secret-named field whatever it holds, an Error or text of any shape', () => {
    const { logger, lines } = capturing('INFO');
    logger.info('sign-in', {
      password: 'hunter2',
      authorization: new Error('token xyzzy'),
      user: { apiKey: { raw: 'plugh' } },
    });
    expect(lines[0]!.text).not.toMatch(/hunter2|xyzzy|plugh/);
    expect(lines[0]!.record).toMatchObject({
      password: '[redacted]',
      authorization: '[redacted]',
      user: { apiKey: '[redacted]' },
    });
  });
});

describe('the functions’ logger', () => {
  it('writes one JSON line per record with the fields the runbook queries use', () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1');
    const { logger, lines } = capturing('INFO');
    logger
      .startInvocation(
        {
          functionName: 'list',
          invokedFunctionArn: 'arn:aws:lambda:eu-west-1:1:function:list',
          memoryLimitInMB: '512',
          awsRequestId: 'req-1',
        },
        'client-request-1',
      )
      .info('List sent', { orders: 3 });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.text).toMatch(/^\{[^\n]*\}\n$/);
    expect(lines[0]!.record).toEqual({
      level: 'INFO',
      message: 'List sent',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      service: 'store-orders',
      cold_start: true,
      function_name: 'list',
      function_arn: 'arn:aws:lambda:eu-west-1:1:function:list',
      function_memory_size: '512',
      function_request_id: 'req-1',
      correlation_id: 'client-request-1',
      xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793',
      orders: 3,
    });
  });

  it("takes each invocation's trace id from the runtime's per-invocation store before the environment", async () => {
    // As the Lambda runtime keeps it when invocations share a process: per invocation, while the
    // environment variable holds only the last one the process was told of.
    vi.stubEnv('_X_AMZN_TRACE_ID', 'Root=1-00000000-000000000000000000000000;Sampled=1');
    const current = new AsyncLocalStorage<string>();
    const globals = globalThis as { awslambda?: Record<string, unknown> };
    const saved = globals.awslambda?.InvokeStore;
    globals.awslambda = {
      ...globals.awslambda,
      InvokeStore: { getXRayTraceId: () => current.getStore() },
    };
    try {
      const { logger, records } = capturing('INFO');
      const invoke = (id: string, trace: string) =>
        current.run(`Root=${trace};Parent=557abcec3ee5a047;Sampled=1`, async () => {
          const log = logger.startInvocation({ awsRequestId: id });
          await Promise.resolve();
          log.info(id);
        });
      await Promise.all([
        invoke('a', '1-5759e988-aaaaaaaaaaaaaaaaaaaaaaaa'),
        invoke('b', '1-5759e988-bbbbbbbbbbbbbbbbbbbbbbbb'),
      ]);
      expect(records().map((r) => [r.message, r.xray_trace_id])).toEqual([
        ['a', '1-5759e988-aaaaaaaaaaaaaaaaaaaaaaaa'],
        ['b', '1-5759e988-bbbbbbbbbbbbbbbbbbbbbbbb'],
      ]);
      // Outside the runtime's store: the environment's.
      logger.startInvocation({ awsRequestId: 'c' }).info('c');
      expect(records().at(-1)?.xray_trace_id).toBe('1-00000000-000000000000000000000000');
    } finally {
      if (globals.awslambda) globals.awslambda.InvokeStore = saved;
    }
  });

  it('marks only the first invocation a cold start, and never leaks one invocation’s ids', () => {
    const { logger, records } = capturing('INFO');
    logger.startInvocation({ awsRequestId: 'a' }, 'client-a').info('one');
    logger.startInvocation({ awsRequestId: 'b' }).info('two');
    expect(records()).toMatchObject([
      { cold_start: true, function_request_id: 'a', correlation_id: 'client-a' },
      { cold_start: false, function_request_id: 'b' },
    ]);
    expect(records()[1]).not.toHaveProperty('correlation_id');
  });

  it('gives an invocation’s scope its fields: the lines written in it carry them, and only those', async () => {
    const { logger, records } = capturing('INFO');
    const invoke = (id: string, correlationId?: string) =>
      scoped(
        () => [logger.invocationFields({ awsRequestId: id, functionName: 'list' }, correlationId)],
        async () => {
          await Promise.resolve();
          logger.info(id);
        },
      )(undefined, undefined);
    await Promise.all([invoke('a', 'client-a'), invoke('b')]);
    logger.info('outside');
    expect(records()).toMatchObject([
      { message: 'a', cold_start: true, function_request_id: 'a', correlation_id: 'client-a' },
      { message: 'b', cold_start: false, function_request_id: 'b', function_name: 'list' },
      { message: 'outside' },
    ]);
    expect(records()[1]).not.toHaveProperty('correlation_id');
    expect(records()[2]).not.toHaveProperty('function_request_id');
    // An invocation's logger (startInvocation) after them: not the cold start either.
    logger.startInvocation({ awsRequestId: 'c' }).info('c');
    expect(records()[3]).toMatchObject({ cold_start: false, function_request_id: 'c' });
  });

  it('writes no cold start for a provisioned environment', () => {
    vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'provisioned-concurrency');
    const { logger, records } = capturing('INFO');
    logger.startInvocation({ awsRequestId: 'a' }).info('one');
    expect(records()[0]).toMatchObject({ cold_start: false });
  });

  it('writes the records at or above its level, WARN and ERROR to stderr', () => {
    const out = vi.spyOn(process.stdout, 'write').mockReturnValue(true);
    const err = vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const logger = new Logger('warn');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(out).not.toHaveBeenCalled();
    expect(err.mock.calls.map(([line]) => levelOf(line))).toEqual(['WARN', 'ERROR']);
    err.mockClear();
    new Logger('SILENT').error('nothing');
    expect(err).not.toHaveBeenCalled();
    const debug = new Logger('DEBUG');
    debug.debug('d');
    debug.info('i');
    expect(out.mock.calls.map(([line]) => levelOf(line))).toEqual(['DEBUG', 'INFO']);
  });

  it('takes its level from LOG_LEVEL', () => {
    vi.stubEnv('LOG_LEVEL', 'ERROR');
    const levels: LogLevel[] = [];
    const logger = new Logger(undefined, (_line, level) => void levels.push(level));
    logger.warn('w');
    logger.error('e');
    expect(levels).toEqual(['ERROR']);
  });

  it('keeps its own fields when a record has fields of the same name', () => {
    const { logger, records } = capturing('INFO');
    logger
      .startInvocation({ awsRequestId: 'a' }, 'client-a')
      .info('Rate limit refusal', { level: 'DEBUG', message: 'other', correlation_id: 'x' });
    expect(records()[0]).toMatchObject({
      level: 'INFO',
      message: 'Rate limit refusal',
      correlation_id: 'client-a',
    });
  });

  it('says so when LOG_LEVEL is not a level, and logs at INFO', () => {
    const { logger, records } = capturing('LOUD');
    logger.debug('hidden');
    logger.info('shown');
    expect(records().map(({ level, message }) => `${String(level)} ${String(message)}`)).toEqual([
      'WARN LOG_LEVEL LOUD is not a level: logging at INFO',
      'INFO shown',
    ]);
  });

  it('spells out errors: name, message, stack, their own fields and their cause', () => {
    const { logger, records } = capturing('INFO');
    const cause = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const error = Object.assign(new TypeError('read failed', { cause }), {
      $metadata: { httpStatusCode: 500 },
    });
    logger.error('failed', { error });
    expect(records()[0]!.error).toEqual({
      name: 'TypeError',
      message: 'read failed',
      stack: expect.stringContaining('TypeError: read failed\n    at '),
      $metadata: { httpStatusCode: 500 },
      cause: {
        name: 'Error',
        message: 'socket hang up',
        code: 'ECONNRESET',
        stack: expect.stringContaining('socket hang up'),
      },
    });
  });

  it('never throws on what JSON cannot write: bigints, cycles, throwing getters', () => {
    const { logger, records } = capturing('INFO');
    const cyclic: Record<string, unknown> = { id: 1 };
    cyclic.self = cyclic;
    logger.info('odd values', { big: 2n ** 63n - 1n, cyclic });
    logger.info('a getter that throws', {
      get broken(): never {
        throw new Error('no');
      },
    });
    logger.info('a getter that throws what cannot be printed', {
      get broken(): never {
        throw Object.create(null) as Error;
      },
    });
    expect(records()).toMatchObject([
      { big: '9223372036854775807', cyclic: { id: 1, self: '[Circular]' } },
      { message: 'a getter that throws', unserializable: 'Error: no' },
      { unserializable: 'an unprintable value' },
    ]);
  });
});

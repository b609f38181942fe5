/**
 * `npm run invoke` on every sample event in events/, as the README shows it: each answers what
 * its file name says — never 503 for a budget counted from the fixed request time written in
 * the file (the program stamps the current time, as API Gateway stamps each request), and the
 * files themselves stay as they are.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { arrivingNow } from '../../local/invoke.ts';
import { localTableNames, PROJECT_ROOT } from '../../local/local-stack.ts';
import { tempStateFile } from '../support/local-api.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

const EVENTS = join(PROJECT_ROOT, 'events');
const prefix = uniquePrefix('invoke');

/** What each sample event must produce (every file in events/ must be listed here). */
const EXPECTED: Record<string, (output: Record<string, unknown>) => void> = {
  'listOrders.json': (out) => {
    expect(out.statusCode).toBe(200);
    expect(JSON.parse(out.body as string)).toEqual(expect.any(Array));
  },
  'cancelOrder.json': (out) => expect(out.statusCode).toBe(204),
  'cancelOrder-shipped.json': (out) => {
    expect(out.statusCode).toBe(409);
    expect(JSON.parse(out.body as string)).toMatchObject({ code: 'ORDER_ALREADY_SHIPPED' });
  },
  'cancelOrder-invalid-id.json': (out) => {
    expect(out.statusCode).toBe(400);
    expect(JSON.parse(out.body as string)).toMatchObject({ code: 'INVALID_ORDER_ID' });
  },
  'authorizer.json': (out) =>
    expect(out).toMatchObject({ policyDocument: { Statement: [{ Effect: 'Allow' }] } }),
  'authorizer-unknown-key.json': (out) =>
    expect(out).toMatchObject({ policyDocument: { Statement: [{ Effect: 'Deny' }] } }),
};

function invoke(
  fn: string,
  file: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      join(PROJECT_ROOT, 'local', 'invoke.ts'),
      fn,
      file,
      '--dynamodb-endpoint',
      dynamodbEndpoint(),
      '--table-prefix',
      prefix,
    ],
    {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        STORE_ORDERS_LOCAL_STATE: tempStateFile(),
        LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

afterAll(async () => {
  const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
  await Promise.all(
    Object.values(localTableNames(prefix)).map((TableName) =>
      client.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
    ),
  );
  client.destroy();
});

const files = readdirSync(EVENTS).filter((name) => name.endsWith('.json'));

describe('npm run invoke on the sample events', () => {
  it('stamps a proxy event’s request time with the current time, and leaves others alone', () => {
    const now = Date.UTC(2027, 0, 2, 3, 4, 5);
    const sample = JSON.parse(readFileSync(join(EVENTS, 'listOrders.json'), 'utf8')) as {
      requestContext: Record<string, unknown>;
    };
    const stamped = arrivingNow(sample, now) as typeof sample;
    expect(stamped.requestContext).toEqual({
      ...sample.requestContext,
      requestTimeEpoch: now,
      requestTime: '02/Jan/2027:03:04:05 +0000',
    });
    const token = { type: 'TOKEN', authorizationToken: 'Bearer x', methodArn: 'arn' };
    expect(arrivingNow(token, now)).toBe(token);
  });

  it('has an expected answer for every sample event', () => {
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(files)(
    '%s answers as its name says, with the request time stamped now',
    async (name) => {
      const path = join(EVENTS, name);
      const before = readFileSync(path, 'utf8');
      const fn = name.replace(/(-.*)?\.json$/, '');
      const result = await invoke(fn, path);
      expect(result.stderr).not.toMatch(/^error:/m);
      const output = JSON.parse(result.stdout) as Record<string, unknown>;
      expect(output.statusCode).not.toBe(503);
      EXPECTED[name]?.(output);
      expect(result.code).toBe(0);
      expect(readFileSync(path, 'utf8')).toBe(before);
    },
    60_000,
  );
});

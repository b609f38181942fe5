/**
 * The artifacts `cdk deploy` uploads, run: each function bundled exactly as the stack bundles it
 * (infra/constructs BUNDLING: one CommonJS file with the SDK inside), loaded with require() as
 * Lambda's Node.js runtime loads it, and invoked against DynamoDB Local. The other tests run the
 * TypeScript sources; this one catches what bundling alone could break (a module that needs ES
 * module semantics, a dynamic import, a dependency esbuild resolved differently).
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Loaded } from '../../bench/load-bundle.ts';
import { BUNDLE_FILE, esbuildOptions } from '../../infra/constructs/service-function.ts';
import { tableEnv } from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { ordersIndexesEnv } from '../../lib/dynamodb/order-indexes.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { registerKeys } from '../../lib/keys/plaintext-keys.ts';
import { createContext, installLambdaRuntimeGlobals } from '../../local/lambda-runtime.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { invokeHttp, proxyEvent } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

type Handler = (event: unknown, context: unknown) => Promise<unknown>;
interface AuthorizerAnswer {
  principalId: string;
  policyDocument: { Statement: { Effect: string }[] };
  context: Record<string, string>;
}

let t: TestTables;
let dir: string;
const handlers: Record<string, Handler> = {};
const key = generateApiKey();
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/GET/store/orders';

beforeAll(async () => {
  t = await createTestTables('bundles');
  const keys = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
  await registerKeys(keys, [{ key, plan: 'free' }], new Date());
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders([
    { id: 1n, petId: 10n, quantity: 1, status: 'pending' },
    { id: 2n, petId: 20n, quantity: 1, status: 'pending' },
    { id: 3n, petId: 30n, quantity: 1, status: 'pending' },
    { id: 9223372036854775807n, petId: 9223372036854775806n, status: 'shipped' },
  ]);
  Object.assign(process.env, tableEnv(t.tables), ordersIndexesEnv(), {
    DYNAMODB_ENDPOINT: t.endpoint,
    METRICS_DISABLED: 'true',
  });
  installLambdaRuntimeGlobals();
  dir = mkdtempSync(join(tmpdir(), 'deployed-bundles-'));
  for (const fn of ['authorizer', 'list-orders', 'list-order-pages', 'cancel-order']) {
    const outfile = join(dir, fn, BUNDLE_FILE);
    await build(esbuildOptions(join(PROJECT_ROOT, 'functions', `${fn}.ts`), outfile));
    handlers[fn] = (createRequire(outfile)(outfile) as { handler: Handler }).handler;
  }
});
afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await t?.drop();
});

const authorize = (token: string) =>
  handlers.authorizer!(
    { type: 'TOKEN', authorizationToken: token, methodArn },
    createContext('authorizer'),
  ) as Promise<AuthorizerAnswer>;

describe('the deployed bundles, on DynamoDB Local', () => {
  it('authorize a key, list its orders to the last int64 digit, cancel one, and deny a stranger', async () => {
    const allowed = await authorize(`Bearer ${key}`);
    expect(allowed.policyDocument.Statement[0]?.Effect).toBe('Allow');
    const caller = { principalId: allowed.principalId, ...allowed.context };

    const list = () =>
      invokeHttp(
        handlers['list-orders'],
        proxyEvent({
          method: 'GET',
          resource: '/store/orders',
          path: '/store/orders',
          authorizer: caller,
        }),
      );
    const before = await list();
    expect(before.statusCode).toBe(200);
    expect(before.headers.ETag).toMatch(/^W\//);
    expect(before.body).toContain('"id":9223372036854775807,"petId":9223372036854775806');

    const cancelled = await invokeHttp(
      handlers['cancel-order'],
      proxyEvent({
        method: 'DELETE',
        resource: '/store/orders/{orderId}',
        path: '/store/orders/1',
        pathParameters: { orderId: '1' },
        authorizer: caller,
      }),
    );
    expect(cancelled).toMatchObject({ statusCode: 204, body: '' });
    expect(cancelled.headers['X-RateLimit-Remaining']).toBeDefined();
    expect((await list()).body).toContain('"id":1,"petId":10,"quantity":1,"status":"cancelled"');

    const stranger = await authorize(`Bearer ${generateApiKey()}`);
    expect(stranger.policyDocument.Statement[0]?.Effect).toBe('Deny');
  });
});

/**
 * A fresh process, as a cold Lambda container: the bundle loaded and invoked twice by
 * bench/load-bundle.ts (what `npm run bench:cold-init` measures), with the connections it opened.
 */
async function firstAnswers(fn: string, events: unknown[]): Promise<Loaded> {
  const file = join(dir, `${fn}-events.json`);
  writeFileSync(file, JSON.stringify({ events }));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(PROJECT_ROOT, 'bench', 'load-bundle.ts'), join(dir, fn, BUNDLE_FILE), file],
    { env: { ...process.env, NODE_OPTIONS: '', LOG_LEVEL: 'INFO', METRICS_DISABLED: 'false' } },
  );
  return JSON.parse(stdout.trimEnd().split('\n').at(-1) ?? '') as Loaded;
}

describe('a cold process of each bundle', () => {
  const caller = {
    principalId: 'key_cold',
    keyId: 'key_cold',
    plan: 'free',
    perMinute: '1000',
    perDay: '100000',
  };
  const cancel = (id: string) =>
    proxyEvent({
      method: 'DELETE',
      resource: '/store/orders/{orderId}',
      path: `/store/orders/${id}`,
      pathParameters: { orderId: id },
      authorizer: caller,
    });
  const list = proxyEvent({
    method: 'GET',
    resource: '/store/orders',
    path: '/store/orders',
    authorizer: caller,
  });
  // v2's GET /store/orders?status=pending (its stage's event differs by the query alone here).
  const pendingPage = {
    ...list,
    queryStringParameters: { status: 'pending' },
    multiValueQueryStringParameters: { status: ['pending'] },
  };

  it.each([
    // One call: one connection.
    [
      'authorizer',
      [{ type: 'TOKEN', authorizationToken: `Bearer ${key}`, methodArn }],
      ['Allow'],
      1,
    ],
    // The limiter's count, then the order's read, the version's mark, the write and the release,
    // one after another on the one connection (one pool for both clients).
    ['cancel-order', [cancel('2'), cancel('3')], ['204', '204'], 1],
    // The limiter's count, then the version read on its connection, then 8 partition queries:
    // that connection serves one of them (one pool for both clients), seven more are opened.
    ['list-orders', [list, list], ['200', '200'], 8],
    // The same, then the 8 partitions of the status index at once (a stage that waits for no
    // reindex reads no readiness marker), then one BatchGetItem of the page's orders.
    ['list-order-pages', [pendingPage, pendingPage], ['200', '200'], 8],
  ] as const)(
    '%s: its first answer opens one connection per call in flight, the warm one none',
    async (fn, events, statuses, connections) => {
      const loaded = await firstAnswers(fn, [...events]);
      expect(loaded.answers?.map((a) => a.status)).toEqual(statuses);
      expect(loaded.answers?.[0]?.connections).toBe(connections);
      expect(loaded.answers?.at(-1)?.connections).toBe(connections);
      expect(loaded.answers?.[0]?.at).toBeGreaterThan(loaded.ms);
    },
  );
});

/**
 * The authorizer behind the API Gateway emulation with the cache TTL the stages deploy: no cached
 * answer outlives the failure that produced it. During a key-store failure of either kind every
 * request is answered 503 (nothing cached); the first request after the store recovers gets the
 * right answer for its token (valid → served, unknown → 401), a revoked key is refused within
 * the TTL, and a key issued or rotated a moment ago works at once even where a read could be
 * stale (the Deny an eventually consistent read would give is cached for the whole TTL).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stageConfig } from '../../infra/config.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { changePermissions, issueKey, revokeKey, rotateKey } from '../../lib/keys/lifecycle.ts';
import type { Permission } from '../../lib/keys/permissions.ts';
import { createGateway } from '../../local/gateway.ts';
import { captureObservations, injectFault, type Fault } from '../support/faults.ts';
import { countDynamoDbCalls } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

// The functions log at INFO here: the log lines are part of what is checked.
process.env.LOG_LEVEL = 'INFO';
const { createAuthorizerHandler } = await import('../../functions/authorizer.ts');
const { createCancelOrderHandler } = await import('../../functions/cancel-order.ts');
const { createListOrdersHandler } = await import('../../functions/list-orders.ts');

/** The TTL both stages deploy (infra/config.ts). */
const DEPLOYED_TTL_SECONDS = stageConfig(
  'production',
  () => undefined,
).authorizerCacheTtl.toSeconds();

let t: TestTables;
let fnClient: DynamoDBDocumentClient;
let keys: DynamoDbKeyStore;
let server: Server;
let url: string;
/** The emulator's clock runs this far ahead of the real one (to let the cache TTL pass). */
let clockOffsetMs = 0;

beforeAll(async () => {
  t = await createTestTables('authcache');
  fnClient = createDocumentClient({ endpoint: t.endpoint });
  keys = new DynamoDbKeyStore(fnClient, t.tables.apiKeys);
  const orders = new DynamoDbOrderStore(fnClient, t.tables.orders);
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  const deps = { orders: () => orders, limiter: () => limiter };
  const listener = createGateway({
    functions: {
      listOrders: createListOrdersHandler(deps),
      cancelOrder: createCancelOrderHandler(deps),
    },
    authorizer: createAuthorizerHandler({ keys: () => keys }),
    authorizerTtlSeconds: DEPLOYED_TTL_SECONDS,
    now: () => Date.now() + clockOffsetMs,
  });
  server = createServer((req, res) => void listener(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  fnClient.destroy();
  await t.drop();
});
beforeEach(async () => {
  clockOffsetMs = 0;
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders([
    { id: 1n, status: 'pending' },
  ]);
});

const observations = captureObservations();
afterEach(() => observations.reset());
afterAll(() => observations.restore());

type Method = 'GET' | 'DELETE';
const PATHS: Record<Method, string> = { GET: '/store/orders', DELETE: '/store/orders/1' };
const SERVED: Record<Method, number> = { GET: 200, DELETE: 204 };

async function call(method: Method, key: string) {
  const response = await fetch(`${url}${PATHS[method]}`, {
    method,
    headers: { Authorization: `Bearer ${key}` },
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    code: text ? (JSON.parse(text) as { code?: string }).code : undefined,
  };
}

async function newKey(
  permissions?: readonly Permission[],
): Promise<{ key: string; keyId: string }> {
  const issued = await issueKey(
    keys,
    { plan: 'free', ...(permissions ? { permissions } : {}) },
    new Date(),
  );
  return { key: issued.key, keyId: issued.record.keyId };
}

/** The key table fails with `fault` for every read until the returned function is called. */
function failKeyStore(fault: Fault): () => void {
  return injectFault(fnClient, { table: t.tables.apiKeys, command: 'GetItemCommand' }, fault)
    .remove;
}

describe(`a key-store failure with the deployed authorizer TTL (${DEPLOYED_TTL_SECONDS} s)`, () => {
  it('is deployed with caching on (the case the cache could poison)', () => {
    expect(DEPLOYED_TTL_SECONDS).toBeGreaterThan(0);
  });

  describe.each(['access-denied', 'missing-table', 'throttling', 'connection-reset'] as const)(
    '%s',
    (fault) => {
      it.each(['GET', 'DELETE'] as const)(
        '%s: every token gets 503 during it, and the right answer at once after it',
        async (method) => {
          const valid = await newKey();
          const revoked = await newKey();
          await revokeKey(keys, revoked.keyId, new Date());
          const unknown = generateApiKey();
          const tokens = [valid.key, revoked.key, unknown];

          const recover = failKeyStore(fault);
          try {
            for (const key of tokens) {
              expect(await call(method, key)).toEqual({
                status: 503,
                retryAfter: '1',
                code: 'SERVICE_UNAVAILABLE',
              });
            }
          } finally {
            recover();
          }
          // Each failed check was logged and counted once, by the authorizer only.
          const permanent = fault === 'access-denied' || fault === 'missing-table';
          const expected = permanent ? 'InternalErrors' : 'ServiceUnavailable';
          expect(observations.metrics()).toEqual(tokens.map(() => expected));
          const level = permanent ? 'ERROR' : 'WARN';
          const kind = permanent ? 'permanent' : 'transient';
          expect(
            observations
              .logs()
              .filter((l) => l.level === level && l.message.includes(`Key check failed (${kind})`)),
          ).toHaveLength(tokens.length);

          // The store is back: nothing of the failure was cached, within the same TTL.
          expect((await call(method, valid.key)).status).toBe(SERVED[method]);
          expect(await call(method, unknown)).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
          expect(await call(method, revoked.key)).toMatchObject({
            status: 401,
            code: 'UNAUTHORIZED',
          });
        },
      );
    },
  );

  it('a key revoked while its Allow is cached is refused once the TTL has passed', async () => {
    const { key, keyId } = await newKey();
    expect((await call('GET', key)).status).toBe(200);
    await revokeKey(keys, keyId, new Date());
    // Within the TTL the cached Allow still serves it: the documented delay.
    expect((await call('GET', key)).status).toBe(200);
    clockOffsetMs = DEPLOYED_TTL_SECONDS * 1000 + 1;
    expect(await call('GET', key)).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(await call('DELETE', key)).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });
});

describe(`permissions with the deployed authorizer TTL (${DEPLOYED_TTL_SECONDS} s): one cached policy a key, every route`, () => {
  /** The answers to `methods` in turn, all within one TTL, and the key lookups they made. */
  async function inTurn(key: string, methods: readonly Method[]) {
    const lookups = countDynamoDbCalls(fnClient, t.tables.apiKeys);
    const answers = [];
    for (const method of methods) {
      const { status, code } = await call(method, key);
      answers.push(code ? `${status} ${code}` : String(status));
    }
    return { answers, lookups: lookups.calls.length };
  }

  it.each([
    ['read', ['GET', 'DELETE', 'GET'], ['200', '403 PERMISSION_DENIED', '200']],
    [
      'read',
      ['DELETE', 'GET', 'DELETE'],
      ['403 PERMISSION_DENIED', '200', '403 PERMISSION_DENIED'],
    ],
    ['cancel', ['DELETE', 'GET', 'DELETE'], ['204', '403 PERMISSION_DENIED', '204']],
    ['cancel', ['GET', 'DELETE', 'GET'], ['403 PERMISSION_DENIED', '204', '403 PERMISSION_DENIED']],
  ] as const)(
    'a key that may only %s: %j answer %j, whichever route was asked first (one lookup)',
    async (permission, methods, expected) => {
      const { key } = await newKey([permission]);
      const { answers, lookups } = await inTurn(key, methods);
      expect(answers).toEqual(expected);
      // Asked once: the later routes were answered from the cached policy.
      expect(lookups).toBe(1);
    },
  );

  it('a change of permissions reaches requests once the TTL has passed, on every route', async () => {
    const { key, keyId } = await newKey();
    expect((await inTurn(key, ['GET', 'DELETE'])).answers).toEqual(['200', '204']);
    await changePermissions(keys, keyId, ['read'], new Date());
    // Within the TTL the cached context still says read,cancel: the documented delay.
    expect((await inTurn(key, ['DELETE'])).answers).toEqual(['204']);
    clockOffsetMs = DEPLOYED_TTL_SECONDS * 1000 + 1;
    expect((await inTurn(key, ['DELETE', 'GET'])).answers).toEqual([
      '403 PERMISSION_DENIED',
      '200',
    ]);
  });
});

describe('a key used the moment it exists', () => {
  /**
   * A replica that has not seen the newest writes: an eventually consistent GetItem of the keys
   * table finds nothing (as DynamoDB may answer right after a write); a strongly consistent one
   * reads the table as it is.
   */
  function staleReplica(): () => void {
    const name = `stale-replica-${Math.random()}`;
    fnClient.middlewareStack.add(
      (next, context) => (args) => {
        const input = args.input as { TableName?: string; ConsistentRead?: boolean };
        if (
          context.commandName === 'GetItemCommand' &&
          input.TableName === t.tables.apiKeys &&
          input.ConsistentRead !== true
        ) {
          return Promise.resolve({ output: { $metadata: {} }, response: {} });
        }
        return next(args);
      },
      { step: 'finalizeRequest', name, priority: 'low' },
    );
    return () => void fnClient.middlewareStack.remove(name);
  }

  it('works at once when issued: the lookup is strongly consistent, so no Deny is cached', async () => {
    const restore = staleReplica();
    try {
      const { key } = await newKey();
      expect((await call('GET', key)).status).toBe(200);
      expect((await call('DELETE', key)).status).toBe(204);
    } finally {
      restore();
    }
  });

  it('works at once when rotated in, while the old key keeps working', async () => {
    const old = await newKey();
    expect((await call('GET', old.key)).status).toBe(200);
    const restore = staleReplica();
    try {
      const rotation = await rotateKey(keys, old.keyId, 60_000, new Date());
      expect((await call('GET', rotation.key)).status).toBe(200);
      expect((await call('GET', old.key)).status).toBe(200);
    } finally {
      restore();
    }
  });
});

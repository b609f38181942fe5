/** The API Gateway emulation of `npm start`, with stand-in functions. */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway, type GatewayOptions } from '../../local/gateway.ts';
import { API_STAGE, ROUTES } from '../../lib/api/routes.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import {
  BUFFERED_RESPONSE_LIMIT_BYTES,
  installLambdaRuntimeGlobals,
} from '../../local/lambda-runtime.ts';

installLambdaRuntimeGlobals();

const allowAll = (
  principalId = 'key_1',
  context: Record<string, unknown> = { keyId: 'key_1', perMinute: 60 },
) => ({
  principalId,
  policyDocument: {
    Version: '2012-10-17',
    Statement: [
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:local:000000000000:local/v1/*/*',
      },
    ],
  },
  context,
});

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

async function gateway(options: Partial<GatewayOptions>): Promise<string> {
  const listener = createGateway({
    functions: {
      listOrders: () => Promise.resolve({ statusCode: 200, headers: {}, body: '[]' }),
      cancelOrder: () => Promise.resolve({ statusCode: 204, headers: {}, body: '' }),
    },
    authorizer: () => Promise.resolve(allowAll()),
    authorizerTtlSeconds: 60,
    ...options,
  });
  server = createServer((req, res) => void listener(req, res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
}

/** Well-formed keys (the identity validation expression lets nothing else reach the authorizer). */
const KEYS = { a: generateApiKey(), b: generateApiKey(), tok: generateApiKey() };
const auth = (token: keyof typeof KEYS = 'tok') => ({
  headers: { Authorization: `Bearer ${KEYS[token]}` },
});

describe('authorizer emulation', () => {
  it('caches an Allow by token for the TTL, then asks again', async () => {
    let clock = 0;
    const tokens: string[] = [];
    const url = await gateway({
      now: () => clock,
      authorizerTtlSeconds: 60,
      authorizer: (event: { authorizationToken: string }) => {
        tokens.push(event.authorizationToken);
        return Promise.resolve(allowAll());
      },
    });
    await fetch(`${url}/store/orders`, auth('a'));
    await fetch(`${url}/store/orders/1`, { ...auth('a'), method: 'DELETE' });
    await fetch(`${url}/store/orders`, auth('b'));
    expect(tokens).toEqual([`Bearer ${KEYS.a}`, `Bearer ${KEYS.b}`]);
    clock = 60_001;
    await fetch(`${url}/store/orders`, auth('a'));
    expect(tokens).toEqual([`Bearer ${KEYS.a}`, `Bearer ${KEYS.b}`, `Bearer ${KEYS.a}`]);
  });

  it('caches a Deny by token for the TTL, answered 401 with WWW-Authenticate', async () => {
    let calls = 0;
    const deny = allowAll();
    deny.policyDocument.Statement[0]!.Effect = 'Deny';
    const url = await gateway({
      authorizer: () => {
        calls++;
        return Promise.resolve(deny);
      },
    });
    for (let i = 0; i < 3; i++) {
      const refused = await fetch(`${url}/store/orders`, auth('a'));
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="store-orders"');
      expect(await refused.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    }
    expect(calls).toBe(1);
  });

  it.each([
    ['a token that is not a key', 'Bearer tok'],
    ['a key with a wrong length', `Bearer ${KEYS.a}x`],
    ['another scheme', `Basic ${KEYS.a}`],
    ['no token', 'Bearer '],
  ])('refuses %s with 401 before invoking the authorizer', async (_, header) => {
    let calls = 0;
    const url = await gateway({
      authorizer: () => {
        calls++;
        return Promise.resolve(allowAll());
      },
    });
    const refused = await fetch(`${url}/store/orders`, { headers: { Authorization: header } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="store-orders"');
    expect(calls).toBe(0);
  });

  it('does not cache a refusal: a key created a moment later works at once', async () => {
    let known = false;
    const url = await gateway({
      authorizer: () =>
        known ? Promise.resolve(allowAll()) : Promise.reject(new Error('Unauthorized')),
    });
    expect((await fetch(`${url}/store/orders`, auth())).status).toBe(401);
    known = true;
    expect((await fetch(`${url}/store/orders`, auth())).status).toBe(200);
  });

  it('answers 403-turned-401 when a cached policy does not cover another route', async () => {
    const narrow = allowAll();
    narrow.policyDocument.Statement[0]!.Resource =
      'arn:aws:execute-api:local:000000000000:local/v1/GET/store/orders';
    const url = await gateway({ authorizer: () => Promise.resolve(narrow) });
    expect((await fetch(`${url}/store/orders`, auth())).status).toBe(200);
    const denied = await fetch(`${url}/store/orders/1`, { ...auth(), method: 'DELETE' });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After when the authorizer fails otherwise', async () => {
    const url = await gateway({ authorizer: () => Promise.reject(new Error('DynamoDB is down')) });
    const response = await fetch(`${url}/store/orders`, auth());
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
  });

  it('answers 503 (AUTHORIZER_CONFIGURATION_ERROR) when the authorizer returns something unusable', async () => {
    const url = await gateway({
      authorizer: () =>
        Promise.resolve({
          principalId: 'x',
          context: { nested: { no: 1 } },
          policyDocument: { Statement: [] },
        }),
    });
    expect((await fetch(`${url}/store/orders`, auth())).status).toBe(503);
  });

  it('hands the authorizer context to the function as strings, with a REST v1 proxy event', async () => {
    let seen: Record<string, unknown> | undefined;
    const url = await gateway({
      authorizer: () =>
        Promise.resolve(allowAll('key_9', { keyId: 'key_9', perMinute: 60, pro: true })),
      functions: {
        listOrders: () => Promise.resolve({ statusCode: 200, headers: {}, body: '[]' }),
        cancelOrder: (event: Record<string, unknown>) => {
          seen = event;
          return Promise.resolve({ statusCode: 204, headers: {}, body: '' });
        },
      },
    });
    await fetch(`${url}/store/orders/4%32?x=1&x=2`, { ...auth(), method: 'DELETE' });
    expect(seen).toMatchObject({
      resource: '/store/orders/{orderId}',
      path: '/store/orders/4%32',
      httpMethod: 'DELETE',
      pathParameters: { orderId: '42' },
      queryStringParameters: { x: '2' },
      multiValueQueryStringParameters: { x: ['1', '2'] },
      requestContext: {
        stage: 'v1',
        resourcePath: '/store/orders/{orderId}',
        authorizer: { principalId: 'key_9', keyId: 'key_9', perMinute: '60', pro: 'true' },
      },
    });
    expect((seen!.headers as Record<string, string>).Authorization).toBe(`Bearer ${KEYS.tok}`);
  });

  it('hands any parameter or header name over as a key of its own, __proto__ and constructor included', async () => {
    let seen: Record<string, Record<string, unknown> | null> | undefined;
    const url = await gateway({
      authorizer: () => Promise.resolve(allowAll('key_9', { keyId: 'key_9' })),
      functions: {
        listOrders: () => Promise.resolve({ statusCode: 200, headers: {}, body: '[]' }),
        cancelOrder: (event: typeof seen) => {
          seen = event;
          return Promise.resolve({ statusCode: 204, headers: {}, body: '' });
        },
      },
    });
    const response = await fetch(`${url}/store/orders/1?__proto__=1&constructor=x&toString=2`, {
      method: 'DELETE',
      // (fetch sends no header named __proto__: the query carries that name.)
      headers: { ...auth().headers, hasOwnProperty: '1', valueOf: '2' },
    });
    expect(response.status).toBe(204);
    const own = (object: Record<string, unknown> | null | undefined) =>
      Object.entries(object ?? {}).map(([name, value]) => [name, value]);
    expect(own(seen!.queryStringParameters)).toEqual([
      ['__proto__', '1'],
      ['constructor', 'x'],
      ['toString', '2'],
    ]);
    expect(own(seen!.multiValueQueryStringParameters)).toEqual([
      ['__proto__', ['1']],
      ['constructor', ['x']],
      ['toString', ['2']],
    ]);
    expect(own(seen!.multiValueHeaders)).toEqual(
      expect.arrayContaining([
        ['hasOwnProperty', ['1']],
        ['valueOf', ['2']],
      ]),
    );
    expect(own(seen!.headers)).toEqual(
      expect.arrayContaining([
        ['hasOwnProperty', '1'],
        ['valueOf', '2'],
      ]),
    );
  });
});

describe('integration emulation', () => {
  it('refuses a buffered response over 6 MB like Lambda: 500 INTERNAL_ERROR', async () => {
    const url = await gateway({
      functions: {
        listOrders: () =>
          Promise.resolve({
            statusCode: 200,
            headers: {},
            body: 'x'.repeat(BUFFERED_RESPONSE_LIMIT_BYTES),
          }),
        cancelOrder: () => Promise.resolve({ statusCode: 204, headers: {}, body: '' }),
      },
    });
    const response = await fetch(`${url}/store/orders`, auth());
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'An internal error occurred.',
      status: 500,
    });
  });

  it('streams a response larger than 6 MB from a streaming function', async () => {
    const chunk = 'y'.repeat(1024 * 1024);
    const streaming = globalThis.awslambda.streamifyResponse(async (_event, stream) => {
      const out = globalThis.awslambda.HttpResponseStream.from(stream, {
        statusCode: 200,
        headers: { 'Content-Type': 'text/plain' },
      });
      for (let i = 0; i < 8; i++) out.write(chunk);
      out.end();
      await Promise.resolve();
    });
    const url = await gateway({
      functions: { listOrders: streaming, cancelOrder: () => Promise.resolve({}) },
    });
    const response = await fetch(`${url}/store/orders`, auth());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect((await response.text()).length).toBe(8 * chunk.length);
  });

  it('stops a streaming function when the client goes away', async () => {
    let finished: (value: string) => void = () => undefined;
    const outcome = new Promise<string>((resolve) => (finished = resolve));
    const streaming = globalThis.awslambda.streamifyResponse(async (_event, stream) => {
      const out = globalThis.awslambda.HttpResponseStream.from(stream, {
        statusCode: 200,
        headers: {},
      });
      try {
        // Far more than any socket buffer: only a reader could take it all.
        for (let i = 0; i < 10_000; i++) {
          if (!out.write('z'.repeat(64 * 1024))) await once(out, 'drain');
        }
        finished('wrote everything');
      } catch {
        finished('stopped');
      }
      out.once('error', () => finished('stopped'));
      await new Promise((resolve) => setTimeout(resolve, 10));
    });
    const url = await gateway({
      functions: { listOrders: streaming, cancelOrder: () => Promise.resolve({}) },
    });
    const controller = new AbortController();
    const response = await fetch(`${url}/store/orders`, { ...auth(), signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    const result = await Promise.race([
      outcome,
      new Promise((resolve) => setTimeout(() => resolve('still running'), 2_000)),
    ]);
    expect(result).toBe('stopped');
  });

  it('cuts the connection when a stream fails after its status line', async () => {
    const streaming = globalThis.awslambda.streamifyResponse(async (_event, stream) => {
      const out = globalThis.awslambda.HttpResponseStream.from(stream, {
        statusCode: 200,
        headers: {},
      });
      out.write('[{"id":1}');
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('DynamoDB failed mid-stream');
    });
    const url = await gateway({
      functions: { listOrders: streaming, cancelOrder: () => Promise.resolve({}) },
    });
    const response = await fetch(`${url}/store/orders`, auth());
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('answers 500 when a function throws, and 503 when API Gateway gives up waiting', async () => {
    const url = await gateway({
      integrationTimeoutMs: 50,
      functions: {
        listOrders: () => Promise.reject(new Error('crash')),
        cancelOrder: () => new Promise((resolve) => setTimeout(resolve, 500)),
      },
    });
    expect((await fetch(`${url}/store/orders`, auth())).status).toBe(500);
    const timedOut = await fetch(`${url}/store/orders/1`, { ...auth(), method: 'DELETE' });
    expect(timedOut.status).toBe(503);
    expect(await timedOut.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});

describe('stages', () => {
  it('serves a second stage from its own route table: its function and authorizer see that stage', async () => {
    const arns: string[] = [];
    const events: Record<string, unknown>[] = [];
    const url = await gateway({
      authorizerTtlSeconds: 0,
      stages: {
        [API_STAGE]: ROUTES,
        beta: [{ operationId: 'listOrders', method: 'GET', path: '/pets', streaming: false }],
      },
      authorizer: (event: { methodArn: string }) => {
        arns.push(event.methodArn);
        const policy = allowAll();
        policy.policyDocument.Statement[0]!.Resource = '*';
        return Promise.resolve(policy);
      },
      functions: {
        listOrders: (event: Record<string, unknown>) => {
          events.push(event);
          return Promise.resolve({ statusCode: 200, headers: {}, body: '[]' });
        },
        cancelOrder: () => Promise.resolve({ statusCode: 204, headers: {}, body: '' }),
      },
    });
    const origin = new URL(url).origin;
    expect((await fetch(`${origin}/beta/pets`, auth())).status).toBe(200);
    expect((await fetch(`${origin}/beta/store/orders`, auth())).status).toBe(404);
    expect((await fetch(`${origin}/v1/pets`, auth())).status).toBe(404);
    expect((await fetch(`${origin}/v1/store/orders`, auth())).status).toBe(200);
    expect(arns).toEqual([
      'arn:aws:execute-api:local:000000000000:local/beta/GET/pets',
      'arn:aws:execute-api:local:000000000000:local/v1/GET/store/orders',
    ]);
    expect(
      events.map(({ resource, path, requestContext }) => ({ resource, path, requestContext })),
    ).toMatchObject([
      { resource: '/pets', path: '/pets', requestContext: { stage: 'beta', path: '/beta/pets' } },
      {
        resource: '/store/orders',
        path: '/store/orders',
        requestContext: { stage: 'v1', path: '/v1/store/orders' },
      },
    ]);
  });
});

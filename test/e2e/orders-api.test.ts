/**
 * End to end over HTTP against `npm start`'s server: every row of CONTRACT sections 2–3 and the
 * authentication cases, each response checked against the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_KEYS, DEMO_ORDERS } from '../../local/demo-data.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { expectValidAgainstOpenApi } from '../support/openapi.ts';

let api: LocalApi;
// The enterprise demo key (5,000 a minute): these tests are about the API, not its limits.
const key = DEMO_KEYS[3]!.key;

async function call(
  method: string,
  path: string,
  authorization: string | null = `Bearer ${key}`,
): Promise<{ response: Response; body: string }> {
  const headers: Record<string, string> =
    authorization === null ? {} : { Authorization: authorization };
  const response = await fetch(`${api.url}${path}`, { method, headers });
  const body = await response.text();
  return { response, body };
}

/** Calls an operation and checks the answer against the OpenAPI document. */
async function callChecked(method: string, path: string, authorization?: string | null) {
  const result = await call(method, path, authorization);
  await expectValidAgainstOpenApi(result.response, result.body, method, path);
  return result;
}

beforeAll(async () => {
  api = await startLocalApi();
});
afterAll(async () => {
  await api.stop();
});

describe('GET /store/orders', () => {
  it('answers 200 with every demo order, sorted by id, int64 digits exact', async () => {
    const { response, body } = await callChecked('GET', '/store/orders');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const ids = [...body.matchAll(/\{"id":(-?\d+)/g)].map((m) => m[1]);
    expect(ids).toEqual(DEMO_ORDERS.map((o) => o.id.toString()));
    expect(body).toContain('{"id":9223372036854775807,"petId":9223372036854775806,');
    expect(body).toContain('{"id":9007199254740993,"petId":9007199254740995,');
    const statuses = (JSON.parse(body) as { status: string }[]).map((o) => o.status);
    expect(new Set(statuses)).toEqual(new Set(['pending', 'shipped', 'cancelled']));
  });

  it('omits fields absent in storage', async () => {
    const { body } = await call('GET', '/store/orders');
    expect(body).toContain('{"id":5,"petId":105,"quantity":5,"status":"pending"}');
  });

  it('ignores query parameters in v1', async () => {
    const plain = await call('GET', '/store/orders');
    const queried = await callChecked('GET', '/store/orders?limit=1&status=shipped&offset=3');
    expect(queried.body).toBe(plain.body);
  });
});

describe('DELETE /store/orders/{orderId}', () => {
  it('cancels a pending order: 204 with no body, then the list shows it cancelled', async () => {
    const { response, body } = await callChecked('DELETE', '/store/orders/2');
    expect(response.status).toBe(204);
    expect(body).toBe('');
    const list = await call('GET', '/store/orders');
    expect(list.body).toContain(
      '{"id":2,"petId":102,"quantity":2,"shipDate":"2026-11-21T10:30:00Z","complete":false,"status":"cancelled"}',
    );
  });

  it('answers 204 again for an order already cancelled', async () => {
    expect((await callChecked('DELETE', '/store/orders/4')).response.status).toBe(204);
    expect((await callChecked('DELETE', '/store/orders/2')).response.status).toBe(204);
  });

  it('answers 409 ORDER_ALREADY_SHIPPED for a shipped order, which stays shipped', async () => {
    const { response, body } = await callChecked('DELETE', '/store/orders/9223372036854775807');
    expect(response.status).toBe(409);
    expect(JSON.parse(body)).toEqual({
      code: 'ORDER_ALREADY_SHIPPED',
      message: 'Order 9223372036854775807 has already shipped and cannot be cancelled.',
      status: 409,
    });
    expect((await call('GET', '/store/orders')).body).toContain(
      '"petId":9223372036854775806,"quantity":2,"shipDate":"2026-12-24T18:00:00Z","complete":false,"status":"shipped"}',
    );
  });

  it('answers 404 ORDER_NOT_FOUND for an id that does not exist', async () => {
    const { response, body } = await callChecked('DELETE', '/store/orders/9007199254740992');
    expect(response.status).toBe(404);
    expect(JSON.parse(body)).toEqual({
      code: 'ORDER_NOT_FOUND',
      message: 'Order 9007199254740992 was not found.',
      status: 404,
    });
  });

  it.each([
    'abc',
    '1.5',
    '1e3',
    '0x10',
    '9223372036854775808',
    '-9223372036854775809',
    '%20',
    '1%2F2',
  ])('answers 400 INVALID_ORDER_ID for %s', async (id) => {
    const { response, body } = await callChecked('DELETE', `/store/orders/${id}`);
    expect(response.status).toBe(400);
    expect(JSON.parse(body)).toMatchObject({ code: 'INVALID_ORDER_ID', status: 400 });
  });

  it('cancels the exact id even where a JS number would round (9007199254740993)', async () => {
    expect((await callChecked('DELETE', '/store/orders/9007199254740993')).response.status).toBe(
      204,
    );
    const list = await call('GET', '/store/orders');
    expect(list.body).toContain(
      '{"id":9007199254740993,"petId":9007199254740995,"quantity":1,"shipDate":"2026-12-01T00:00:00Z","complete":false,"status":"cancelled"}',
    );
  });
});

describe('authentication', () => {
  const unauthorized = {
    code: 'UNAUTHORIZED',
    message: 'The API key is missing or invalid.',
    status: 401,
  };

  it.each([
    ['a missing Authorization header', null],
    ['another scheme', `Basic ${key}`],
    ['an empty token', 'Bearer '],
    ['an empty header', ''],
    ['an unknown key', 'Bearer sok_NotARealKeyNotARealKeyNotARealKey1234567'],
    ['a key with a wrong checksum', `Bearer ${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`],
    ['a token without scheme', key],
  ])('answers 401 with WWW-Authenticate for %s', async (_, authorization) => {
    for (const [method, path] of [
      ['GET', '/store/orders'],
      ['DELETE', '/store/orders/1'],
    ] as const) {
      const { response, body } = await callChecked(method, path, authorization);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="store-orders"');
      expect(JSON.parse(body)).toEqual(unauthorized);
    }
  });

  it('accepts the scheme in any case (lower-case bearer)', async () => {
    expect((await callChecked('GET', '/store/orders', `bearer ${key}`)).response.status).toBe(200);
    expect((await callChecked('GET', '/store/orders', `BEARER ${key}`)).response.status).toBe(200);
  });

  it('accepts every demo key', async () => {
    for (const { key } of DEMO_KEYS) {
      expect((await call('GET', '/store/orders', `Bearer ${key}`)).response.status).toBe(200);
    }
  });
});

describe('routing', () => {
  it.each(['/store', '/store/orders/1/items', '/pets/1', '/', ''])(
    'answers 404 ROUTE_NOT_FOUND for %j before authentication',
    async (path) => {
      const { response, body } = await call('GET', path, null);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(JSON.parse(body)).toEqual({
        code: 'ROUTE_NOT_FOUND',
        message: 'No resource exists at this path.',
        status: 404,
      });
    },
  );

  it("answers 404 outside the API's stages (v1, v2)", async () => {
    const response = await fetch(api.url.replace(/\/v1$/, '/v3/store/orders'), {
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(404);
  });

  it.each([
    ['POST', '/store/orders', 'GET'],
    ['PUT', '/store/orders', 'GET'],
    ['PATCH', '/store/orders', 'GET'],
    ['DELETE', '/store/orders', 'GET'],
    ['GET', '/store/orders/1', 'DELETE'],
    ['POST', '/store/orders/1', 'DELETE'],
  ])('answers 405 METHOD_NOT_ALLOWED with Allow for %s %s', async (method, path, allow) => {
    const { response, body } = await call(method, path, null);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    expect(JSON.parse(body)).toEqual({
      code: 'METHOD_NOT_ALLOWED',
      message: 'This method is not allowed on this resource.',
      status: 405,
    });
    await expectValidAgainstOpenApi(response, body, method, path);
  });
});

describe('access log', () => {
  it('names callers by key id and never shows a key', async () => {
    const { response } = await call('GET', '/store/orders');
    const requestId = response.headers.get('x-amzn-requestid');
    // The access-log line is written once the connection is done with the request.
    const line = () =>
      api
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{"requestId"'))
        .map((l) => JSON.parse(l) as Record<string, string>)
        .find((l) => l.requestId === requestId);
    await expect.poll(line, { timeout: 10_000 }).toEqual(
      expect.objectContaining({
        httpMethod: 'GET',
        resourcePath: '/store/orders',
        status: '200',
        keyId: expect.stringMatching(/^key_\w+$/) as string,
      }),
    );
    const log = api.output();
    const afterBanner = log.slice(log.indexOf('Listening on'));
    for (const { key } of DEMO_KEYS) expect(afterBanner).not.toContain(key);
  });
});

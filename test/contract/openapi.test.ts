/**
 * The OpenAPI document against the code (route table, error catalogue) and against responses:
 * samples here, and real ones from the handlers behind the local API Gateway emulator.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../lib/api/errors.ts';
import { WWW_AUTHENTICATE } from '../../lib/api/gateway-responses.ts';
import { API_STAGE, ROUTES } from '../../lib/api/routes.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { apiKeyFromBody } from '../../lib/keys/api-key.ts';
import { registerKeys } from '../../lib/keys/register.ts';
import type { Order } from '../../lib/orders/order.ts';
import { createGateway } from '../../local/gateway.ts';
import { loadFunctions } from '../../local/local-stack.ts';
import {
  expectValidAgainstOpenApi,
  findConst,
  HTTP_METHODS,
  loadOpenApiDocument,
  OPENAPI_PATH,
  openApiResponseErrors,
  type OpenApiDocument,
  type OperationObject,
  type ResponseObject,
} from '../support/openapi.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let document: OpenApiDocument;

beforeAll(async () => {
  document = await loadOpenApiDocument();
});

function operations(): { method: string; path: string; operation: OperationObject }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [{ method: method.toUpperCase(), path, operation }] : [];
    }),
  );
}

/** Every documented error response: per operation, and API Gateway's own in components. */
function errorResponses(): { where: string; status: number; response: ResponseObject }[] {
  const perOperation = operations().flatMap(({ method, path, operation }) =>
    Object.entries(operation.responses ?? {})
      .filter(([status]) => Number(status) >= 400)
      .map(([status, response]) => ({
        where: `${method} ${path} ${status}`,
        status: Number(status),
        response,
      })),
  );
  const components = Object.entries(document.components.responses).map(([name, response]) => ({
    where: `components/responses/${name}`,
    status: Number(findConst(response.content?.['application/json']?.schema, 'status')),
    response,
  }));
  return [...perOperation, ...components];
}

function examplesOf(response: ResponseObject): unknown[] {
  return Object.values(response.content ?? {}).flatMap((media) => [
    ...(media.example === undefined ? [] : [media.example]),
    ...Object.values(media.examples ?? {}).map((example) => example.value),
  ]);
}

/** Headers a response documents, with their example (or constant) values. */
function exampleHeaders(response: ResponseObject): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const value = header.example ?? header.schema?.const;
    if (typeof value === 'string' || typeof value === 'number') headers[name] = String(value);
  }
  return headers;
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };

describe('the OpenAPI document', () => {
  it('is valid OpenAPI, per a real validator', async () => {
    const result = await validate(OPENAPI_PATH);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
  });

  it('is OpenAPI 3.1.x, version 1.0.0', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info.version).toBe('1.0.0');
  });

  it('has every server base address end with the /v1 stage', () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    for (const server of document.servers ?? []) expect(server.url).toMatch(/\/v1$/);
  });

  it('has exactly the operations of the route table, each marked stable', () => {
    const documented = operations().map(({ method, path, operation }) => ({
      method,
      path,
      operationId: operation.operationId,
      stability: operation['x-stability'],
    }));
    const expected = ROUTES.map(({ method, path, operationId }) => ({
      method,
      path,
      operationId,
      stability: 'stable',
    }));
    const byOperationId = (a: { operationId?: string }, b: { operationId?: string }) =>
      (a.operationId ?? '').localeCompare(b.operationId ?? '');
    expect(documented.sort(byOperationId)).toEqual(expected.sort(byOperationId));
  });

  it('requires bearerAuth on every operation', () => {
    for (const { operation } of operations()) {
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
    }
  });

  it('lists exactly the codes of the error catalogue in Error.code', () => {
    const codeSchema = (document.components.schemas.Error?.properties as Record<string, object>)
      .code as { enum: string[] };
    expect([...codeSchema.enum].sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
  });

  it('gives each error response the code and status of the catalogue, in schema and examples', () => {
    const checked = errorResponses();
    expect(checked.length).toBeGreaterThan(0);
    for (const { where, status, response } of checked) {
      const media = response.content?.['application/json'];
      expect(media?.schema, `${where} has an application/json Error body`).toBeDefined();
      expect(findConst(media?.schema, 'status'), where).toBe(status);
      const code = findConst(media?.schema, 'code') as ErrorCode;
      expect(ERROR_CATALOGUE[code]?.status, `${where}: status of ${code}`).toBe(status);
      const examples = examplesOf(response);
      expect(examples.length, `${where} has an example`).toBeGreaterThan(0);
      for (const example of examples) {
        expect(example, where).toEqual({ code, message: ERROR_CATALOGUE[code].message, status });
      }
    }
  });

  it('documents WWW-Authenticate on every 401 and Retry-After on every 503', () => {
    for (const { where, status, response } of errorResponses()) {
      if (status === 401) {
        expect(response.headers?.['WWW-Authenticate']?.required, where).toBe(true);
        expect(response.headers?.['WWW-Authenticate']?.schema?.const, where).toBe(WWW_AUTHENTICATE);
      }
      if (status === 503) expect(response.headers?.['Retry-After']?.required, where).toBe(true);
    }
  });

  it('has examples that pass its own response check', async () => {
    const samples: { method: string; path: string; status: number; response: ResponseObject }[] =
      operations().flatMap(({ method, path, operation }) =>
        Object.entries(operation.responses ?? {}).map(([status, response]) => ({
          method,
          path,
          status: Number(status),
          response,
        })),
      );
    for (const sample of samples) {
      const examples = examplesOf(sample.response);
      for (const example of examples.length > 0 ? examples : [undefined]) {
        const problems = await openApiResponseErrors({
          method: sample.method,
          path: sample.path,
          status: sample.status,
          headers: { ...JSON_HEADERS, ...exampleHeaders(sample.response) },
          body: example === undefined ? '' : JSON.stringify(example),
        });
        expect(problems).toEqual([]);
      }
    }
  });
});

describe('openApiResponseErrors', () => {
  const notFound = {
    method: 'DELETE',
    path: '/store/orders/42',
    status: 404,
    headers: JSON_HEADERS,
  };

  it('accepts an Error body that matches its response', async () => {
    const body = JSON.stringify({
      code: 'ORDER_NOT_FOUND',
      message: 'Order 42 was not found.',
      status: 404,
    });
    expect(await openApiResponseErrors({ ...notFound, body })).toEqual([]);
    expect(
      await openApiResponseErrors({ ...notFound, path: '/store/orders/{orderId}', body }),
    ).toEqual([]);
  });

  it.each([
    ['a status field that differs from the HTTP status', { code: 'ORDER_NOT_FOUND', status: 400 }],
    ['a missing field', { code: 'ORDER_NOT_FOUND' }],
    ['an unknown code', { code: 'NO_SUCH_ORDER', status: 404 }],
    ['a code of another response', { code: 'ROUTE_NOT_FOUND', status: 404 }],
  ])('refuses an Error body with %s', async (_, fields) => {
    const body = JSON.stringify({ message: 'Order 42 was not found.', ...fields });
    expect(await openApiResponseErrors({ ...notFound, body })).not.toEqual([]);
  });

  it('refuses a status the operation does not document', async () => {
    const problems = await openApiResponseErrors({
      method: 'GET',
      path: '/store/orders',
      status: 409,
      headers: JSON_HEADERS,
      body: JSON.stringify({ code: 'ORDER_ALREADY_SHIPPED', message: 'x', status: 409 }),
    });
    expect(problems).toEqual([expect.stringContaining('status 409 is not documented')]);
  });

  it('refuses an error body with another Content-Type', async () => {
    const problems = await openApiResponseErrors({
      ...notFound,
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ code: 'ORDER_NOT_FOUND', message: 'm', status: 404 }),
    });
    expect(problems).toEqual([expect.stringContaining('Content-Type text/plain')]);
  });

  it('requires the documented headers of 401 and 503', async () => {
    const unauthorized = {
      method: 'GET',
      path: '/store/orders',
      status: 401,
      body: JSON.stringify({ code: 'UNAUTHORIZED', message: 'm', status: 401 }),
    };
    expect(
      await openApiResponseErrors({
        ...unauthorized,
        headers: { ...JSON_HEADERS, 'www-authenticate': WWW_AUTHENTICATE },
      }),
    ).toEqual([]);
    expect(await openApiResponseErrors({ ...unauthorized, headers: JSON_HEADERS })).toEqual([
      expect.stringContaining('WWW-Authenticate is required'),
    ]);
    const unavailable = {
      method: 'DELETE',
      path: '/store/orders/7',
      status: 503,
      body: JSON.stringify({ code: 'SERVICE_UNAVAILABLE', message: 'm', status: 503 }),
    };
    expect(
      await openApiResponseErrors({
        ...unavailable,
        headers: { ...JSON_HEADERS, 'Retry-After': '1' },
      }),
    ).toEqual([]);
    expect(
      await openApiResponseErrors({
        ...unavailable,
        headers: { ...JSON_HEADERS, 'Retry-After': '0' },
      }),
    ).not.toEqual([]);
    expect(await openApiResponseErrors({ ...unavailable, headers: JSON_HEADERS })).not.toEqual([]);
  });

  it('accepts a 204 without a body and refuses one with a body', async () => {
    const cancelled = { method: 'DELETE', path: '/store/orders/7', status: 204, headers: {} };
    expect(await openApiResponseErrors({ ...cancelled, body: '' })).toEqual([]);
    expect(
      await openApiResponseErrors({ ...cancelled, headers: JSON_HEADERS, body: '{}' }),
    ).toEqual([expect.stringContaining('no body is documented')]);
  });

  describe('on order lists', () => {
    const list = { method: 'GET', path: '/store/orders', status: 200, headers: JSON_HEADERS };

    it('accepts int64 ids past 2^53, up to the int64 maximum', async () => {
      const body =
        '[{"id":9007199254740993,"petId":-9223372036854775808,"quantity":2147483647,' +
        '"shipDate":"2026-11-20T09:00:00Z","complete":false,"status":"pending"},' +
        '{"id":9223372036854775807,"status":"cancelled"}]';
      expect(await openApiResponseErrors({ ...list, body })).toEqual([]);
    });

    it('refuses an integer past the int64 range', async () => {
      const body = '[{"id":9223372036854775808,"status":"pending"}]';
      expect(await openApiResponseErrors({ ...list, body })).toEqual([
        expect.stringContaining('outside the int64 range'),
      ]);
    });

    it('refuses a property the Order schema does not have', async () => {
      const body = '[{"id":1,"status":"pending","price":10}]';
      expect(await openApiResponseErrors({ ...list, body })).toEqual([
        expect.stringContaining('price'),
      ]);
    });

    it.each([
      ['an unknown status', '{"id":1,"status":"lost"}'],
      ['a negative quantity', '{"id":1,"quantity":-1}'],
      ['a quantity past int32', '{"id":1,"quantity":2147483648}'],
      ['a shipDate that is not a date-time', '{"id":1,"shipDate":"next week"}'],
      ['a string id', '{"id":"1"}'],
    ])('refuses %s', async (_, order) => {
      expect(await openApiResponseErrors({ ...list, body: `[${order}]` })).not.toEqual([]);
    });

    it('refuses a truncated array', async () => {
      const problems = await openApiResponseErrors({ ...list, body: '[{"id":1},{"id":2' });
      expect(problems).toEqual([expect.stringContaining('not valid JSON')]);
    });

    it('checks 100,000 orders quickly', async () => {
      const orders = Array.from(
        { length: 100_000 },
        (_, i) =>
          `{"id":${9007199254740993n + BigInt(i)},"petId":${i},"quantity":1,` +
          `"shipDate":"2026-11-20T09:00:00Z","complete":false,"status":"shipped"}`,
      );
      const started = performance.now();
      expect(await openApiResponseErrors({ ...list, body: `[${orders.join(',')}]` })).toEqual([]);
      expect(performance.now() - started).toBeLessThan(5_000);
    });
  });

  describe("on API Gateway's own answers", () => {
    it('accepts 404 ROUTE_NOT_FOUND on an unknown path, and nothing else there', async () => {
      const body = JSON.stringify({
        code: 'ROUTE_NOT_FOUND',
        message: 'No resource exists at this path.',
        status: 404,
      });
      const unknown = { method: 'GET', path: '/pets/1', headers: JSON_HEADERS };
      expect(await openApiResponseErrors({ ...unknown, status: 404, body })).toEqual([]);
      expect(await openApiResponseErrors({ ...unknown, status: 200, body: '[]' })).not.toEqual([]);
    });

    it('accepts 405 with Allow on a known path with another method', async () => {
      const body = JSON.stringify({
        code: 'METHOD_NOT_ALLOWED',
        message: 'This method is not allowed on this resource.',
        status: 405,
      });
      const other = { method: 'POST', path: '/store/orders', status: 405, body };
      expect(
        await openApiResponseErrors({ ...other, headers: { ...JSON_HEADERS, Allow: 'GET' } }),
      ).toEqual([]);
      expect(await openApiResponseErrors({ ...other, headers: JSON_HEADERS })).toEqual([
        expect.stringContaining('Allow is required'),
      ]);
      expect(
        await openApiResponseErrors({ ...other, headers: { ...JSON_HEADERS, Allow: 'DELETE' } }),
      ).toEqual([expect.stringContaining('differs from the documented methods (GET)')]);
    });

    it('accepts 413 REQUEST_TOO_LARGE and 400 BAD_REQUEST on an operation', async () => {
      for (const code of ['REQUEST_TOO_LARGE', 'BAD_REQUEST'] as const) {
        const { status, message } = ERROR_CATALOGUE[code];
        expect(
          await openApiResponseErrors({
            method: 'DELETE',
            path: '/store/orders/1',
            status,
            headers: JSON_HEADERS,
            body: JSON.stringify({ code, message, status }),
          }),
        ).toEqual([]);
      }
    });
  });

  it('fails a test through expectValidAgainstOpenApi, listing the problems', async () => {
    const body = '[{"id":1,"status":"pending"}]';
    const good = new Response(body, { status: 200, headers: JSON_HEADERS });
    await expectValidAgainstOpenApi(good, body, 'GET', '/store/orders');
    const bad = new Response(body, { status: 201, headers: JSON_HEADERS });
    await expect(expectValidAgainstOpenApi(bad, body, 'GET', '/store/orders')).rejects.toThrow(
      /status 201 is not documented/,
    );
  });
});

describe('real responses, through the local API Gateway emulator', () => {
  const key = apiKeyFromBody('OpenApiContractTestKey0000000000');
  const orders: Order[] = [
    { id: 1n, petId: 10n, quantity: 1, shipDate: '2026-11-20T09:00:00Z', status: 'pending' },
    { id: 2n, petId: 20n, quantity: 2, complete: true, status: 'shipped' },
    { id: 3n, status: 'cancelled' },
    { id: 9223372036854775807n, petId: 9223372036854775806n, status: 'pending' },
  ];
  let tables: TestTables;
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    tables = await createTestTables('openapi');
    await new DynamoDbOrderStore(tables.client, tables.tables.orders).putOrders(orders);
    await registerKeys(
      new DynamoDbKeyStore(tables.client, tables.tables.apiKeys),
      [{ key, plan: 'pro' }],
      new Date(),
    );
    const functions = await loadFunctions({ endpoint: tables.endpoint, tables: tables.tables });
    const handle = createGateway({
      functions,
      authorizer: functions.authorizer,
      authorizerTtlSeconds: 0,
    });
    server = createServer((request, response) => void handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/${API_STAGE}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await tables?.drop();
  });

  async function call(
    method: string,
    path: string,
    headers: Record<string, string> = { Authorization: `Bearer ${key}` },
  ): Promise<{ status: number; body: string }> {
    const response = await fetch(`${baseUrl}${path}`, { method, headers });
    const body = await response.text();
    await expectValidAgainstOpenApi(response, body, method, path);
    return { status: response.status, body };
  }

  it('lists the orders as documented, int64 digits exact', async () => {
    const { status, body } = await call('GET', '/store/orders');
    expect(status).toBe(200);
    expect(body).toContain('"id":9223372036854775807,"petId":9223372036854775806');
  });

  it.each([
    ['cancels a pending order', '/store/orders/1', 204],
    ['cancels a cancelled order again', '/store/orders/3', 204],
    ['refuses a shipped order', '/store/orders/2', 409],
    ['answers an unknown order', '/store/orders/4', 404],
    ['refuses a malformed id', '/store/orders/abc', 400],
    ['refuses an id past int64', '/store/orders/9223372036854775808', 400],
  ])('%s as documented', async (_, path, expected) => {
    expect((await call('DELETE', path)).status).toBe(expected);
  });

  it.each([
    ['no Authorization header', {}],
    [
      'an unknown key',
      { Authorization: `Bearer ${apiKeyFromBody('UnknownKey0000000000000000000000')}` },
    ],
    ['another scheme', { Authorization: `Basic ${key}` }],
  ])('answers 401 for %s as documented', async (_, headers: Record<string, string>) => {
    expect((await call('GET', '/store/orders', headers)).status).toBe(401);
  });

  it("answers API Gateway's 404 and 405 as documented", async () => {
    expect((await call('GET', '/pets/1')).status).toBe(404);
    expect((await call('POST', '/store/orders')).status).toBe(405);
    expect((await call('GET', '/store/orders/1')).status).toBe(405);
  });
});

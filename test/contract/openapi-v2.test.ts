/**
 * v2's OpenAPI document (openapi/openapi-v2.yaml) against the code — v2's route table, the list's
 * query parameters and page sizes, the error catalogue — and against real answers of the
 * handlers behind the local API Gateway emulator, on DynamoDB Local with every index.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileErrors, validate } from '@readme/openapi-parser';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../lib/api/errors.ts';
import { ROUTES_V2 } from '../../lib/api/routes.ts';
import { createListOrderPagesHandler } from '../../functions/list-order-pages.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from '../../lib/dynamodb/tables.ts';
import { apiKeyFromBody } from '../../lib/keys/api-key.ts';
import { registerKeys } from '../../lib/keys/plaintext-keys.ts';
import {
  LIST_PARAMETERS,
  PAGE_SIZE_DEFAULT,
  PAGE_SIZE_DIGITS,
  PAGE_SIZE_MAX,
  parseListQuery,
  type ListQueryErrorCode,
} from '../../lib/orders/list-query.ts';
import { ORDER_FIELDS, type Order } from '../../lib/orders/order.ts';
import { createGateway, createGatewayServer, type GatewayListener } from '../../local/gateway.ts';
import { loadFunctions } from '../../local/local-stack.ts';
import {
  expectHeadersTooLargeAsDocumented,
  expectPermissionsAsDocumented,
  expectValidAgainstOpenApi,
  HTTP_METHODS,
  loadOpenApiDocument,
  OPENAPI_PATHS,
  openApiRequestErrors,
  openApiResponseErrors,
  type OpenApiDocument,
  type OperationObject,
  type Schema,
} from '../support/openapi.ts';
import { invokeHttp, proxyEvent } from '../support/lambda.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let document: OpenApiDocument;

beforeAll(async () => {
  document = await loadOpenApiDocument('v2');
});

function operations(): { method: string; path: string; operation: OperationObject }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [{ method: method.toUpperCase(), path, operation }] : [];
    }),
  );
}

const list = () => document.paths['/store/orders']!.get!;

/** The four codes a refused query answers with, as the code names them. */
const QUERY_CODES: readonly ListQueryErrorCode[] = [
  'UNKNOWN_PARAMETER',
  'INVALID_PARAMETER',
  'INVALID_DATE_RANGE',
  'INVALID_PAGE_TOKEN',
];

describe("v2's OpenAPI document", () => {
  it('is valid OpenAPI, per a real validator', async () => {
    const result = await validate(OPENAPI_PATHS.v2);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
  });

  it('is OpenAPI 3.1.x, version 2.0.0, every server base address ending in /v2', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info.version).toBe('2.0.0');
    expect(document.servers?.length).toBeGreaterThan(0);
    for (const server of document.servers ?? []) expect(server.url).toMatch(/\/v2$/);
  });

  it("has exactly the operations of v2's route table: the list beta, the cancel stable", () => {
    const documented = operations().map(({ method, path, operation }) => ({
      method,
      path,
      operationId: operation.operationId,
      stability: operation['x-stability'],
    }));
    expect(documented).toEqual(
      ROUTES_V2.map(({ method, path, operationId }) => ({
        method,
        path,
        operationId,
        stability: operationId === 'listOrderPages' ? 'beta' : 'stable',
      })),
    );
    for (const { operation } of operations()) {
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
    }
  });

  it("takes exactly the list's query parameters, with the code's page sizes", () => {
    const parameters = (list().parameters as { name: string; in: string; schema: Schema }[]) ?? [];
    const query = parameters.filter((p) => p.in === 'query');
    expect(query.map((p) => p.name)).toEqual([...LIST_PARAMETERS]);
    const pageSize = query.find((p) => p.name === 'pageSize')!.schema;
    expect(pageSize).toMatchObject({ minimum: 1, default: PAGE_SIZE_DEFAULT });
    expect(pageSize).not.toHaveProperty('format');
    // A larger size is served as the most, not refused, up to what the API reads: the largest
    // number of PAGE_SIZE_DIGITS digits, written digit for digit (JavaScript reads it as 10^64).
    const text = readFileSync(OPENAPI_PATHS.v2, 'utf8');
    expect(text).toMatch(new RegExp(`^ +maximum: ${'9'.repeat(PAGE_SIZE_DIGITS)}$`, 'm'));
    expect(pageSize.maximum).toBe(10 ** PAGE_SIZE_DIGITS);
    const body = list().responses!['200']!.content!['application/json']!.schema!;
    const served = (body.properties as Record<string, Schema>).pageSize!;
    expect(served).toMatchObject({ minimum: 1, maximum: PAGE_SIZE_MAX });
  });

  it('lists on every operation the 413 API Gateway answers a request whose headers pass its limit', () => {
    for (const { operation } of operations()) {
      const tooLarge = operation.responses!['413']!.content!['application/json']!.schema!;
      expect(JSON.stringify(tooLarge)).toContain('"const":"REQUEST_TOO_LARGE"');
    }
  });

  it("describes v2's orders as v1's Order, field for field: no trail of a cancel", async () => {
    const v1 = await loadOpenApiDocument('v1');
    const body = list().responses!['200']!.content!['application/json']!.schema!;
    const orders = (body.properties as Record<string, Schema>).orders!;
    expect(orders.items).toEqual(v1.components.schemas.Order);
    expect(Object.keys((orders.items as Schema).properties as object)).toEqual([...ORDER_FIELDS]);
    expect(document.components.schemas).not.toHaveProperty('Order');
  });

  it('answers a refused query with exactly the four codes of the list, each 400 in the catalogue', () => {
    const refused = list().responses!['400']!.content!['application/json']!.schema!;
    const codes = ((refused.allOf as Schema[])[1]!.properties as Record<string, Schema>).code!
      .enum as string[];
    expect([...codes].sort()).toEqual([...QUERY_CODES].sort());
    for (const code of QUERY_CODES) expect(ERROR_CATALOGUE[code].status).toBe(400);
  });
});

/**
 * What the list's parameters take, as the document says and as the API reads them: a validating
 * proxy or a generated client must refuse what the API refuses, and let through what it serves.
 */
describe("the list's parameters: the document takes what the API takes", () => {
  const documented = async (query: Record<string, string>) =>
    (
      await openApiRequestErrors({
        version: 'v2',
        method: 'GET',
        path: '/store/orders',
        headers: {},
        query,
      })
    ).length === 0;
  const served = (name: string, value: string) => 'ok' in parseListQuery([[name, value]]);

  it.each([
    ['1', true],
    ['100', true],
    ['0100', true],
    ['101', true],
    ['9'.repeat(PAGE_SIZE_DIGITS), true],
    ['9'.repeat(PAGE_SIZE_DIGITS + 1), false],
    ['0', false],
    ['-1', false],
    ['2.5', false],
  ] as const)('pageSize=%s: %s by both', async (value, valid) => {
    expect(served('pageSize', value)).toBe(valid);
    expect(await documented({ pageSize: value })).toBe(valid);
  });

  it.each([
    ['2026-12-01T00:00:00Z', true],
    ['2026-12-01t09:30:00.123456789+01:00', true],
    ['0000-01-01T00:00:00-23:59', true],
    ['2028-02-29T23:59:59.5z', true],
    ['2026-12-01T00:00:00.0000000001Z', false],
    ['2026-12-01T00:00:00', false],
    ['2026-12-01 00:00:00Z', false],
    ['2026-12-01T00:00:00+0100', false],
    ['2026-12-31T23:59:60Z', false],
    ['2026-12-01T24:00:00Z', false],
    ['2026-02-29T00:00:00Z', false],
    ['2026-04-31T00:00:00Z', false],
    ['2026-12-01T00:00:00+24:00', false],
  ] as const)('shipDateFrom=%s: %s by both', async (value, valid) => {
    expect(served('shipDateFrom', value)).toBe(valid);
    expect(await documented({ shipDateFrom: value })).toBe(valid);
    expect(await documented({ shipDateTo: value })).toBe(valid);
  });

  it('a date-time is valid by the document exactly when the API takes it (generated date-times)', async () => {
    const digits = (n: number, min: number, max: number) =>
      fc.integer({ min, max }).map((v) => String(v).padStart(n, '0'));
    const offset = fc.oneof(
      fc.constantFrom('Z', 'z', ''),
      fc
        .tuple(
          fc.constantFrom('+', '-'),
          digits(2, 0, 25),
          fc.constantFrom(':', ''),
          digits(2, 0, 61),
        )
        .map((parts) => parts.join('')),
    );
    const dateTime = fc
      .tuple(
        digits(4, 0, 9999),
        digits(2, 0, 13),
        digits(2, 0, 32),
        fc.constantFrom('T', 't', ' '),
        digits(2, 0, 25),
        digits(2, 0, 61),
        digits(2, 0, 61),
        fc.option(fc.stringMatching(/^[0-9]{1,12}$/), { nil: undefined }),
        offset,
      )
      .map(
        ([y, mo, d, t, h, mi, s, fraction, zone]) =>
          `${y}-${mo}-${d}${t}${h}:${mi}:${s}${fraction === undefined ? '' : `.${fraction}`}${zone}`,
      );
    let both = 0;
    await fc.assert(
      fc.asyncProperty(dateTime, async (value) => {
        const valid = served('shipDateFrom', value);
        expect(await documented({ shipDateFrom: value }), value).toBe(valid);
        if (valid) both++;
      }),
      { numRuns: 600 },
    );
    // The generator reaches both sides.
    expect(both).toBeGreaterThan(20);
  });
});

describe('real answers of v2, through the local API Gateway emulator', () => {
  const key = apiKeyFromBody('OpenApiContractV2Key000000000000');
  /** Keys that hold one permission each. */
  const onlyKeys = {
    read: apiKeyFromBody('OpenApiContractV2ReadOnlyKey0000'),
    cancel: apiKeyFromBody('OpenApiContractV2CancelOnlyKey00'),
  };
  const orders: Order[] = [
    ...Array.from({ length: 7 }, (_, i) => ({
      id: BigInt(i + 1),
      petId: 10n,
      quantity: 1,
      shipDate: `2026-12-0${i + 1}T09:00:00Z`,
      complete: false,
      status: 'pending' as const,
    })),
    { id: 8n, petId: 20n, complete: true, status: 'shipped' },
    { id: 9223372036854775807n, petId: 9223372036854775806n, status: 'pending' },
  ];
  let tables: TestTables;
  let handle: GatewayListener;
  let server: Server;
  let origin: string;

  beforeAll(async () => {
    tables = await createTestTables('openapi-v2');
    await new DynamoDbOrderStore(tables.client, tables.tables.orders).putOrders(orders);
    await registerKeys(
      new DynamoDbKeyStore(tables.client, tables.tables.apiKeys),
      [
        { key, plan: 'enterprise', limits: { perMinute: 10_000, perDay: 100_000 } },
        { key: onlyKeys.read, plan: 'pro', permissions: ['read'] },
        { key: onlyKeys.cancel, plan: 'pro', permissions: ['cancel'] },
      ],
      new Date(),
    );
    const functions = await loadFunctions({ endpoint: tables.endpoint, tables: tables.tables });
    handle = createGateway({
      functions,
      authorizer: functions.authorizer,
      authorizerTtlSeconds: 0,
    });
    server = createServer((request, response) => void handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await tables?.drop();
  });

  /** A request to v2 (`target`: the path after /v2, with its query), checked against the document. */
  async function call(method: string, target: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${origin}/v2${target}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...headers },
    });
    const body = await response.text();
    await expectValidAgainstOpenApi(response, body, method, target.split('?')[0]!, 'v2');
    return { status: response.status, body, headers: response.headers };
  }

  it('walks a filter page by page through the Link headers to the last page, int64 exact', async () => {
    const seen: string[] = [];
    let target: string | undefined = '/store/orders?pageSize=3';
    let pages = 0;
    while (target) {
      const page = await call('GET', target);
      expect(page.status).toBe(200);
      pages++;
      const body = JSON.parse(page.body) as { orders: unknown[]; nextPageToken?: string };
      expect(body.orders.length).toBeLessThanOrEqual(3);
      for (const match of page.body.matchAll(/"id":(-?\d+)/g)) seen.push(match[1]!);
      const link = page.headers.get('link');
      expect(link === null).toBe(body.nextPageToken === undefined);
      target = link ? /^<\/v2([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
    }
    // Three full pages; the last may be followed by an empty one (only a missing token ends).
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(pages).toBeLessThanOrEqual(4);
    expect(seen).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9223372036854775807']);
  });

  it('serves a filter by ship date in date order, and a 304 for the tag of an unchanged page', async () => {
    const page = await call(
      'GET',
      '/store/orders?shipDateFrom=2026-12-03T00:00:00Z&shipDateTo=2026-12-05T00:00:00Z',
    );
    expect(page.status).toBe(200);
    expect([...page.body.matchAll(/"id":(\d+)/g)].map((m) => m[1])).toEqual(['3', '4']);
    // A page of the table itself (no index) is tagged at once.
    const first = await call('GET', '/store/orders?pageSize=2');
    const tag = first.headers.get('etag')!;
    expect(tag).toMatch(/^W\/"/);
    const again = await call('GET', '/store/orders?pageSize=2', { 'If-None-Match': tag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
  });

  it.each([
    ['/store/orders?sort=id', 'UNKNOWN_PARAMETER'],
    ['/store/orders?__proto__=1', 'UNKNOWN_PARAMETER'],
    ['/store/orders?constructor=x', 'UNKNOWN_PARAMETER'],
    ['/store/orders?status=lost', 'INVALID_PARAMETER'],
    ['/store/orders?petId=12.5', 'INVALID_PARAMETER'],
    ['/store/orders?pageSize=0', 'INVALID_PARAMETER'],
    [`/store/orders?pageSize=${'9'.repeat(PAGE_SIZE_DIGITS + 1)}`, 'INVALID_PARAMETER'],
    ['/store/orders?shipDateFrom=2026-12-01T00:00:00.0000000001Z', 'INVALID_PARAMETER'],
    ['/store/orders?petId=1&petId=2', 'INVALID_PARAMETER'],
    [
      '/store/orders?shipDateFrom=2026-12-05T00:00:00Z&shipDateTo=2026-12-05T00:00:00Z',
      'INVALID_DATE_RANGE',
    ],
    ['/store/orders?pageToken=not-a-token', 'INVALID_PAGE_TOKEN'],
  ])('answers %s with 400 %s, as documented', async (target, code) => {
    const answer = await call('GET', target);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ code, status: 400 });
  });

  it('takes a status repeated 600 times as one, and links the next page with it once', async () => {
    const repeated = Array.from({ length: 600 }, () => 'status=pending').join('&');
    const page = await call('GET', `/store/orders?${repeated}&pageSize=1`);
    expect(page.status).toBe(200);
    // Checked against the document by call(): the Link within its maxLength.
    const link = page.headers.get('link')!;
    expect(link.match(/status=pending/g)).toHaveLength(1);
  });

  it('refuses a token with other filters than the page that issued it', async () => {
    const first = await call('GET', '/store/orders?status=pending&pageSize=1');
    const token = (JSON.parse(first.body) as { nextPageToken: string }).nextPageToken;
    const other = await call('GET', `/store/orders?status=shipped&pageToken=${token}`);
    expect(other.status).toBe(400);
    expect(JSON.parse(other.body)).toMatchObject({ code: 'INVALID_PAGE_TOKEN' });
  });

  it('serves a page size of 64 digits as the most, as documented', async () => {
    const page = await call('GET', `/store/orders?pageSize=${'9'.repeat(PAGE_SIZE_DIGITS)}`);
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body)).toMatchObject({ pageSize: PAGE_SIZE_MAX });
  });

  it('answers a request whose headers pass 10,240 bytes with 413, as each operation documents', async () => {
    // npm start's server in front of the same gateway: API Gateway's limit on a request's head.
    const edge = createGatewayServer(() => handle);
    await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = edge.address() as AddressInfo;
      await expectHeadersTooLargeAsDocumented(port, 'v2', key);
    } finally {
      edge.closeAllConnections();
      edge.close();
    }
  });

  it('refuses each operation with 403 PERMISSION_DENIED, as documented, to a key without its x-permission, and counts it', async () => {
    // Order 8 has shipped: the cancel a key may make changes nothing (409).
    await expectPermissionsAsDocumented(document, '8', onlyKeys, (method, path, onlyKey) =>
      call(method, path, { Authorization: `Bearer ${onlyKey}` }),
    );
  });

  it("v2 shows no trail: not when, not who, not which request; its orders are v1's", async () => {
    expect((await call('DELETE', '/store/orders/2')).status).toBe(204);
    const v1 = await fetch(`${origin}/v1/store/orders`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    const v1Body = await v1.text();
    await expectValidAgainstOpenApi(v1, v1Body, 'GET', '/store/orders', 'v1');
    const cancelled =
      '{"id":2,"petId":10,"quantity":1,"shipDate":"2026-12-02T09:00:00Z","complete":false,"status":"cancelled"}';
    expect(v1Body).toContain(cancelled);
    // The table's pages (no filter) and an index's (the cancelled ones): the same JSON as v1's.
    for (const target of ['/store/orders?pageSize=3', '/store/orders?status=cancelled']) {
      const page = await call('GET', target);
      expect(page.status, target).toBe(200);
      expect(page.body, target).toContain(cancelled);
      expect(page.body, target).not.toMatch(/cancelledAt|cancelledBy|cancelRequestId|key_/);
    }
    expect(v1Body).not.toMatch(/cancelledAt|cancelledBy|cancelRequestId|key_/);
  });

  it("cancels as v1 does, and answers API Gateway's 405 and 404 on v2's paths", async () => {
    expect((await call('DELETE', '/store/orders/1')).status).toBe(204);
    expect((await call('DELETE', '/store/orders/8')).status).toBe(409);
    expect((await call('DELETE', '/store/orders/99')).status).toBe(404);
    expect((await call('POST', '/store/orders')).status).toBe(405);
    expect((await call('GET', '/pets')).status).toBe(404);
  });
});

describe('v2 beside v1', () => {
  let tables: TestTables;
  beforeAll(async () => {
    tables = await createTestTables('v2-beside-v1');
    await new DynamoDbOrderStore(tables.client, tables.tables.orders).putOrders([
      { id: 1n, status: 'pending' },
    ]);
  });
  afterAll(() => tables?.drop());

  const caller = { keyId: 'key_v1v2', plan: 'free', perMinute: '60', perDay: '1000' };
  const event = (path: string, query: Record<string, string> | null = null) => ({
    ...proxyEvent({ method: 'GET', resource: '/store/orders', path, authorizer: caller }),
    multiValueQueryStringParameters: query
      ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]]))
      : null,
  });
  const stores = (indexes: ReadonlySet<OrderIndexName>) => {
    const orders = new DynamoDbOrderStore(tables.client, tables.tables.orders);
    const limiter = new DynamoDbRateLimiter(tables.client, tables.tables.rateLimits);
    return {
      orders: () => orders,
      pages: () => new DynamoDbOrderPages(tables.client, tables.tables.orders, { indexes }),
      limiter: () => limiter,
    };
  };

  it("counts a key's v1 lists and v2 pages together, against one limit", async () => {
    const deps = stores(new Set(ORDER_INDEX_NAMES));
    const v1 = createListOrdersHandler(deps);
    const v2 = createListOrderPagesHandler(deps);
    const remaining = [];
    for (const [handler, path] of [
      [v1, '/store/orders'],
      [v2, '/store/orders'],
      [v1, '/store/orders'],
      [v2, '/store/orders'],
    ] as const) {
      const answer = await invokeHttp(handler, event(path));
      expect(answer.statusCode).toBe(200);
      remaining.push(Number(answer.headers['X-RateLimit-Remaining']));
    }
    expect(remaining).toEqual([59, 58, 57, 56]);
  });

  it('answers 503 with Retry-After, as documented, while the index a filter needs is not there', async () => {
    const v2 = createListOrderPagesHandler(stores(new Set()));
    const answer = await invokeHttp(v2, event('/store/orders', { status: 'pending' }));
    expect(answer.statusCode).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    // An index is built in minutes, not a second: a minute's wait.
    expect(answer.headers['Retry-After']).toBe('60');
    const problems = await openApiResponseErrors({
      version: 'v2',
      method: 'GET',
      path: '/store/orders',
      status: answer.statusCode,
      headers: answer.headers,
      body: answer.body,
    });
    expect(problems).toEqual([]);
    // The table itself needs no index.
    expect((await invokeHttp(v2, event('/store/orders'))).statusCode).toBe(200);
  });
});

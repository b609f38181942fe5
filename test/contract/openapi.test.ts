/**
 * The OpenAPI document against the code (route table, error catalogue, plans, limiter settings)
 * and against responses: samples here, real ones from the handlers behind the local API Gateway
 * emulator, and real ones from the handlers on a fixed clock (rate limits, bans, failures).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { ERROR_CATALOGUE, type ErrorCode } from '../../lib/api/errors.ts';
import { WWW_AUTHENTICATE } from '../../lib/api/gateway-responses.ts';
import { API_STAGE, ROUTES } from '../../lib/api/routes.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { apiKeyFromBody } from '../../lib/keys/api-key.ts';
import { callerToContext } from '../../lib/keys/authenticate.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import type { Caller } from '../../lib/keys/key-record.ts';
import { registerKeys } from '../../lib/keys/plaintext-keys.ts';
import {
  DEFAULT_LIMITER_SETTINGS,
  limiterSettingsFromEnv,
  MAX_BAN_SECONDS,
  rateLimitHeaders,
} from '../../lib/limits/limiter.ts';
import { MAX_LIMIT, PLAN_LIMITS, type Limits } from '../../lib/limits/plans.ts';
import { DAY_MS, decide, retryAfterSeconds } from '../../lib/limits/sliding-window.ts';
import { OrderNotFound, parseOrderId } from '../../lib/orders/operations.ts';
import {
  INT64_MAX,
  INT64_MIN,
  isShipDate,
  ORDER_FIELDS,
  orderToJson,
  type Order,
} from '../../lib/orders/order.ts';
import { createGateway, createGatewayServer, type GatewayListener } from '../../local/gateway.ts';
import { MAX_HEADER_BYTES } from '../../local/http-edge.ts';
import { loadFunctions } from '../../local/local-stack.ts';
import { failDynamoDbCalls, invokeHttp, proxyEvent, type HttpResult } from '../support/lambda.ts';
import {
  expectHeadersTooLargeAsDocumented,
  expectPermissionsAsDocumented,
  expectValidAgainstOpenApi,
  componentStatus,
  findConst,
  HTTP_METHODS,
  loadOpenApiDocument,
  OPENAPI_PATH,
  openApiRequestErrors,
  openApiResponseErrors,
  RATE_LIMIT_HEADERS,
  type OpenApiDocument,
  type OperationObject,
  type ResponseObject,
  type Schema,
} from '../support/openapi.ts';
import { rawRequest } from '../support/raw-http.ts';
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
    status: componentStatus(response),
    response,
  }));
  return [...perOperation, ...components];
}

/**
 * The codes an Error schema allows: what every `code` const and enum it holds (through `allOf`)
 * lets through.
 */
function codesOf(schema: Schema | undefined): string[] {
  const sets: string[][] = [];
  const collect = (part: Schema | undefined) => {
    const code = (part?.properties as Record<string, Schema> | undefined)?.code;
    if (typeof code?.const === 'string') sets.push([code.const]);
    if (Array.isArray(code?.enum)) sets.push(code.enum as string[]);
    for (const sub of (part?.allOf as Schema[] | undefined) ?? []) collect(sub);
  };
  collect(schema);
  const [first = [], ...rest] = sets;
  return first.filter((code) => rest.every((set) => set.includes(code)));
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
/**
 * The rate-limit headers of a free key's first request at 08:00:15 UTC on 2026-11-22 (the
 * examples of the document, and what the handlers answer then: see the fixed-clock tests).
 */
const RATE_HEADERS = {
  'X-RateLimit-Limit': '60',
  'X-RateLimit-Remaining': '59',
  'X-RateLimit-Reset': '1795334460',
  'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
  RateLimit: '"minute";r=59;t=46, "day";r=999;t=57586',
};
/** What the list's answers carry besides: it varies by Accept-Encoding, and is for one client. */
const LIST_HEADERS = { Vary: 'Accept-Encoding', 'Cache-Control': 'private, no-cache' };
/** What a function's answer carries (the list's, see LIST_HEADERS). */
const FUNCTION_HEADERS = { ...JSON_HEADERS, ...RATE_HEADERS, ...LIST_HEADERS };
/** The statuses each operation documents, by what answers them. */
const STATUSES = {
  listOrders: { function: [200, 304, 403, 406], either: [429, 500, 503], gateway: [401, 413] },
  cancelOrder: {
    function: [204, 400, 403, 404, 409],
    either: [429, 500, 503],
    gateway: [401, 413],
  },
} as const;

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
      const codes = codesOf(media?.schema) as ErrorCode[];
      expect(codes.length, `${where} names its codes`).toBeGreaterThan(0);
      for (const code of codes) {
        expect(ERROR_CATALOGUE[code]?.status, `${where}: status of ${code}`).toBe(status);
      }
      const examples = examplesOf(response) as {
        code: ErrorCode;
        message: string;
        status: number;
      }[];
      expect(examples.length, `${where} has an example`).toBeGreaterThan(0);
      const [code] = codes;
      for (const example of examples) {
        if (codes.length === 1 && code !== undefined) {
          expect(example, where).toEqual({ code, message: ERROR_CATALOGUE[code].message, status });
        } else {
          // Several codes (429): real messages, which say how long to wait.
          expect(codes, where).toContain(example.code);
          expect(Object.keys(example).sort(), where).toEqual(['code', 'message', 'status']);
          expect(example.status, where).toBe(status);
          expect(example.message, where).toMatch(/retry after|rate limit/i);
        }
      }
      if (codes.length > 1) {
        expect(new Set(examples.map((e) => e.code)), `${where}: an example per code`).toEqual(
          new Set(codes),
        );
      }
    }
  });

  it('documents WWW-Authenticate on every 401 and Retry-After on every 429 and 503', () => {
    for (const { where, status, response } of errorResponses()) {
      if (status === 401) {
        expect(response.headers?.['WWW-Authenticate']?.required, where).toBe(true);
        expect(response.headers?.['WWW-Authenticate']?.schema?.const, where).toBe(WWW_AUTHENTICATE);
      }
      if (status === 429 || status === 503) {
        expect(response.headers?.['Retry-After']?.required, where).toBe(true);
        expect(response.headers?.['Retry-After']?.schema?.minimum, where).toBe(1);
      }
    }
  });

  it('documents 429 on both operations, with exactly RATE_LIMITED and API_KEY_TEMPORARILY_BANNED', () => {
    expect(operations()).toHaveLength(2);
    for (const { method, path, operation } of operations()) {
      const response = operation.responses?.['429'];
      expect(response, `${method} ${path} 429`).toBeDefined();
      const schema = response?.content?.['application/json']?.schema;
      expect(codesOf(schema).sort(), `${method} ${path} 429`).toEqual([
        'API_KEY_TEMPORARILY_BANNED',
        'RATE_LIMITED',
      ]);
      expect(findConst(schema, 'status')).toBe(429);
    }
  });

  it('documents the statuses of each operation: those a function answers, API Gateway, or both', () => {
    for (const { operation } of operations()) {
      const expected = STATUSES[operation.operationId as keyof typeof STATUSES];
      expect(
        Object.keys(operation.responses ?? {})
          .map(Number)
          .sort(),
      ).toEqual([...expected.function, ...expected.either, ...expected.gateway].sort());
    }
  });

  it('documents the five rate-limit headers: required where only a function answers, optional on 429, 500 and 503, absent on 401', () => {
    for (const { method, path, operation } of operations()) {
      const expected = STATUSES[operation.operationId as keyof typeof STATUSES];
      const headersOf = (status: number) => operation.responses?.[String(status)]?.headers ?? {};
      for (const status of expected.function) {
        for (const name of RATE_LIMIT_HEADERS) {
          const where = `${method} ${path} ${status} ${name}`;
          expect(headersOf(status)[name]?.required, where).toBe(true);
          expect(headersOf(status)[name]?.schema, where).toBeDefined();
        }
      }
      for (const status of expected.either) {
        for (const name of RATE_LIMIT_HEADERS) {
          const where = `${method} ${path} ${status} ${name}`;
          expect(headersOf(status)[name], where).toBeDefined();
          expect(headersOf(status)[name]?.required ?? false, where).toBe(false);
        }
      }
      for (const status of expected.gateway) {
        for (const name of RATE_LIMIT_HEADERS) {
          expect(headersOf(status)[name], `${method} ${path} ${status} ${name}`).toBeUndefined();
        }
      }
    }
    // API Gateway's own answers never carry them.
    for (const name of [
      'BadRequest',
      'RouteNotFound',
      'MethodNotAllowed',
      'RequestTooLarge',
      'GatewayInternalError',
      'Unauthorized',
    ]) {
      const response = document.components.responses[name];
      expect(response, name).toBeDefined();
      for (const header of RATE_LIMIT_HEADERS) {
        expect(response?.headers?.[header], `${name} ${header}`).toBeUndefined();
      }
    }
  });

  it('gives the rate-limit headers examples that agree with each other', () => {
    const headers = document.components.headers ?? {};
    const examples = Object.fromEntries(
      RATE_LIMIT_HEADERS.map((name) => [name, String(headers[name]?.example)]),
    );
    expect(examples).toEqual(RATE_HEADERS);
  });

  it('describes the plans, the formula, the ban and the failure mode with the numbers of the code', () => {
    // As a reader sees it: line breaks are only where the text was wrapped.
    const description = (document.info.description ?? '').replace(/[ \n]+/g, ' ');
    expect(description).toContain('## Rate limits');
    const n = (value: number) => value.toLocaleString('en-US');
    for (const [plan, limits] of Object.entries(PLAN_LIMITS)) {
      expect(description).toContain(
        `| \`${plan}\` | ${n(limits.perMinute)} | ${n(limits.perDay)} |`,
      );
    }
    expect(description).toContain('| `enterprise` | set per key | set per key |');
    expect(description).toContain('`estimate = floor(previous × (W − elapsed) / W) + current`');
    const { maxRefusalsPerMinute, banMs, failureMode } = DEFAULT_LIMITER_SETTINGS;
    expect(description).toContain(
      `A key with more than ${maxRefusalsPerMinute} such refusals within one minute window`,
    );
    expect(description).toContain(
      'A client that waits `Retry-After` after every 429 is never banned',
    );
    expect(description).toContain(`banned for ${banMs / 60_000} minutes`);
    expect(description).toContain(`(${banMs / 1000} seconds)`);
    expect(failureMode).toBe('closed');
    expect(description).toContain('the service fails closed');
  });

  it('writes the int64 bounds digit for digit, though JavaScript reads the maximum as 2^63', () => {
    const text = readFileSync(OPENAPI_PATH, 'utf8');
    // Order.id, Order.petId and the orderId parameter.
    expect(text.match(/^ +minimum: -9223372036854775808$/gm)).toHaveLength(3);
    expect(text.match(/^ +maximum: 9223372036854775807$/gm)).toHaveLength(3);
    // What any JavaScript YAML parser hands the tools: the exact range is the source-text check's.
    const id = (document.components.schemas.Order?.properties as Record<string, Schema>).id;
    expect(id?.maximum).toBe(2 ** 63);
    expect(BigInt(id?.minimum as number)).toBe(INT64_MIN);
  });

  it('lists the fields of the code in the Order schema, in the order the API writes them', () => {
    const properties = Object.keys(document.components.schemas.Order?.properties ?? {});
    expect(properties).toEqual([...ORDER_FIELDS]);
    const json = orderToJson({
      id: INT64_MAX,
      petId: 1n,
      quantity: 1,
      shipDate: '2026-11-20T09:00:00Z',
      complete: true,
      status: 'shipped',
    });
    expect(Object.keys(JSON.parse(json) as object)).toEqual(properties);
  });

  it('gives bounds that hold for the longest values the service writes', async () => {
    const invalidIdMessage = (raw: string) => {
      try {
        parseOrderId(raw);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error(`${raw} was accepted`);
    };
    const schemas = document.components.schemas;
    // Error.message: the longest is an invalid order id quoted, every character escaped.
    const { maxLength, pattern } = (schemas.Error?.properties as Record<string, Schema>)
      .message as {
      maxLength: number;
      pattern: string;
    };
    const messages = [
      ...Object.values(ERROR_CATALOGUE).map(({ message }) => message),
      invalidIdMessage('\u0007\u202e"'.repeat(100)),
      invalidIdMessage('\ud83d\ude00'.repeat(100)),
      new OrderNotFound(INT64_MIN).message,
    ];
    for (const message of messages) {
      expect([...message].length, message).toBeLessThanOrEqual(maxLength);
      expect(message).toMatch(new RegExp(pattern, 'u'));
    }
    // shipDate: RFC 3339 with at most nine digits of fractions.
    const shipDate = (schemas.Order?.properties as Record<string, Schema>).shipDate;
    const longest = '2026-11-20T09:00:00.123456789+01:00';
    expect(isShipDate(longest)).toBe(true);
    expect(longest.length).toBe(shipDate?.maxLength);
    expect(isShipDate('2026-11-20T09:00:00.1234567891+01:00')).toBe(false);
    // Rate-limit headers of the highest limits: the schemas' formats, patterns and lengths.
    const now = Date.UTC(2026, 10, 22, 0, 0, 0);
    const limits = { perMinute: MAX_LIMIT, perDay: MAX_LIMIT };
    expect(
      await openApiResponseErrors({
        method: 'GET',
        path: '/store/orders',
        status: 200,
        headers: {
          ...JSON_HEADERS,
          ...LIST_HEADERS,
          ETag: 'W/"AAAAAAAAAAAAAAAAAAAAAA"',
          ...rateLimitHeaders(decide({}, now, limits), now, limits),
        },
        body: '[]',
      }),
    ).toEqual([]);
    // Retry-After: the day window (a day and a moment) or a ban, which the settings cap.
    const retryAfter = document.components.headers?.['Retry-After']?.schema?.maximum as number;
    expect(retryAfterSeconds(DAY_MS + 1)).toBeLessThanOrEqual(retryAfter);
    expect(MAX_BAN_SECONDS).toBeLessThanOrEqual(retryAfter);
    expect(() =>
      limiterSettingsFromEnv({ RATE_LIMIT_BAN_SECONDS: String(MAX_BAN_SECONDS + 1) }),
    ).toThrow(/RATE_LIMIT_BAN_SECONDS must be an integer from 1 to 86400/);
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

describe('openApiResponseErrors: what the project checks beyond openapi-backend', () => {
  const errorBody = (code: string, status: number) =>
    JSON.stringify({ code, message: 'm', status });
  const notFound = {
    method: 'DELETE',
    path: '/store/orders/42',
    status: 404,
    headers: FUNCTION_HEADERS,
    body: errorBody('ORDER_NOT_FOUND', 404),
  };
  const list = { method: 'GET', path: '/store/orders', status: 200, headers: FUNCTION_HEADERS };

  it('accepts a documented answer, on a concrete path or on a path template', async () => {
    expect(await openApiResponseErrors(notFound)).toEqual([]);
    expect(await openApiResponseErrors({ ...notFound, path: '/store/orders/{orderId}' })).toEqual(
      [],
    );
  });

  it.each([
    ['an unknown code', { ...notFound, body: errorBody('NO_SUCH_ORDER', 404) }],
    ['a code of another response', { ...notFound, body: errorBody('ROUTE_NOT_FOUND', 404) }],
    ['a missing field', { ...notFound, body: '{"code":"ORDER_NOT_FOUND","status":404}' }],
    ['an order property the schema lacks', { ...list, body: '[{"id":1,"price":10}]' }],
    ['a shipDate that is no date-time', { ...list, body: '[{"id":1,"shipDate":"next week"}]' }],
    ['a quantity past int32', { ...list, body: '[{"id":1,"quantity":2147483648}]' }],
    ['a string id', { ...list, body: '[{"id":"1"}]' }],
    [
      'a malformed RateLimit-Policy',
      { ...list, body: '[]', headers: { ...FUNCTION_HEADERS, 'RateLimit-Policy': '60;w=60' } },
    ],
  ])(
    'refuses what the schemas refuse (JSON Schema 2020-12 with formats): %s',
    async (_, answer) => {
      expect(await openApiResponseErrors(answer)).not.toEqual([]);
    },
  );

  const unavailable = {
    ...list,
    status: 503,
    headers: {
      ...JSON_HEADERS,
      'Retry-After': '1',
      'RateLimit-Policy': RATE_HEADERS['RateLimit-Policy'],
    },
    body: errorBody('SERVICE_UNAVAILABLE', 503),
  };
  it.each([
    ['a negative header', { ...list, body: '[]' }, 'X-RateLimit-Remaining', '-1'],
    ['a header that is no integer', { ...list, body: '[]' }, 'X-RateLimit-Limit', 'sixty'],
    ['a Retry-After under 1', unavailable, 'Retry-After', '0'],
  ])('refuses by its header schema %s', async (_, answer, name, value) => {
    expect(await openApiResponseErrors(answer)).toEqual([]);
    const problems = await openApiResponseErrors({
      ...answer,
      headers: { ...answer.headers, [name]: value },
    });
    // The schema's own finding, not only the cross-header check's.
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`: header ${name} `, 'i')));
  });

  it('refuses an Error body whose status is not the HTTP status', async () => {
    const problems = await openApiResponseErrors({
      ...notFound,
      body: errorBody('ORDER_NOT_FOUND', 400),
    });
    expect(problems).toContainEqual(
      expect.stringContaining('Error.status 400 is not the HTTP status'),
    );
  });

  it('refuses a status the operation does not document', async () => {
    const problems = await openApiResponseErrors({
      ...list,
      status: 409,
      headers: JSON_HEADERS,
      body: errorBody('ORDER_ALREADY_SHIPPED', 409),
    });
    expect(problems).toEqual([expect.stringContaining('status 409 is not documented')]);
  });

  it('refuses an error body with another Content-Type', async () => {
    const problems = await openApiResponseErrors({
      ...notFound,
      headers: { ...RATE_HEADERS, 'content-type': 'text/plain' },
    });
    expect(problems).toEqual([expect.stringContaining('Content-Type text/plain')]);
  });

  it('requires the headers the document marks required, and only those', async () => {
    expect(
      await openApiResponseErrors({ ...list, headers: JSON_HEADERS, body: '[]' }),
    ).toContainEqual(expect.stringContaining('header X-RateLimit-Limit is required but missing'));
    const unauthorized = { ...list, status: 401, body: errorBody('UNAUTHORIZED', 401) };
    expect(
      await openApiResponseErrors({
        ...unauthorized,
        headers: { ...JSON_HEADERS, 'www-authenticate': WWW_AUTHENTICATE },
      }),
    ).toEqual([]);
    expect(await openApiResponseErrors({ ...unauthorized, headers: JSON_HEADERS })).toEqual([
      expect.stringContaining('header WWW-Authenticate is required but missing'),
    ]);
    // A 429 of API Gateway's stage throttle: Retry-After, and none of the optional headers.
    const limited = { ...notFound, status: 429, body: errorBody('RATE_LIMITED', 429) };
    expect(
      await openApiResponseErrors({ ...limited, headers: { ...JSON_HEADERS, 'Retry-After': '1' } }),
    ).toEqual([]);
    expect(await openApiResponseErrors({ ...limited, headers: JSON_HEADERS })).toEqual([
      expect.stringContaining('header Retry-After is required but missing'),
    ]);
  });

  it('accepts a 304 without a body, with the validators and the rate-limit headers, and refuses one with a body or without them', async () => {
    const notModified = {
      method: 'GET',
      path: '/store/orders',
      status: 304,
      headers: { ...RATE_HEADERS, ...LIST_HEADERS, ETag: 'W/"3dKq0b9nX1mZ7pA2cR5vTg"' },
      body: '',
    };
    expect(await openApiResponseErrors(notModified)).toEqual([]);
    expect(
      await openApiResponseErrors({
        ...notModified,
        headers: { ...JSON_HEADERS, ...notModified.headers },
        body: '[]',
      }),
    ).toEqual([expect.stringContaining('no body is documented')]);
    const withoutRemaining = Object.fromEntries(
      Object.entries(notModified.headers).filter(([name]) => name !== 'X-RateLimit-Remaining'),
    );
    expect(await openApiResponseErrors({ ...notModified, headers: withoutRemaining })).toContain(
      'GET /store/orders (listOrders) 304: header X-RateLimit-Remaining is required but missing',
    );
    expect(
      await openApiResponseErrors({
        ...notModified,
        headers: { ...notModified.headers, ETag: '"a strong tag"' },
      }),
    ).not.toEqual([]);
  });

  it('accepts a 204 without a body and refuses one with a body', async () => {
    const cancelled = { ...notFound, status: 204, headers: RATE_HEADERS };
    expect(await openApiResponseErrors({ ...cancelled, body: '' })).toEqual([]);
    expect(
      await openApiResponseErrors({ ...cancelled, headers: FUNCTION_HEADERS, body: '{}' }),
    ).toEqual([expect.stringContaining('no body is documented')]);
  });

  describe('on rate-limit headers', () => {
    /** The problems of an empty list answered with these rate-limit headers. */
    const listWith = (headers: Record<string, string>) =>
      openApiResponseErrors({
        ...list,
        body: '[]',
        headers: { ...JSON_HEADERS, ...LIST_HEADERS, ...headers },
      });

    it("accepts API Gateway's own 500 without them, but not a function's INVALID_ORDER_ID", async () => {
      const internal = errorBody('INTERNAL_ERROR', 500);
      expect(
        await openApiResponseErrors({
          ...list,
          status: 500,
          headers: JSON_HEADERS,
          body: internal,
        }),
      ).toEqual([]);
      expect(
        await openApiResponseErrors({
          ...notFound,
          path: '/store/orders/x',
          status: 400,
          headers: JSON_HEADERS,
          body: errorBody('INVALID_ORDER_ID', 400),
        }),
      ).not.toEqual([]);
    });

    it('accepts RateLimit-Policy alone (the counts are not known), but not some of the others', async () => {
      const unavailable = { ...notFound, status: 503, body: errorBody('SERVICE_UNAVAILABLE', 503) };
      const policy = { 'RateLimit-Policy': RATE_HEADERS['RateLimit-Policy'], 'Retry-After': '1' };
      expect(
        await openApiResponseErrors({ ...unavailable, headers: { ...JSON_HEADERS, ...policy } }),
      ).toEqual([]);
      expect(
        await openApiResponseErrors({
          ...unavailable,
          headers: { ...JSON_HEADERS, ...policy, 'X-RateLimit-Limit': '60' },
        }),
      ).toContainEqual(expect.stringContaining('rate-limit headers come together'));
    });

    it.each([
      [
        'a RateLimit-Policy with a wrong window length',
        { 'RateLimit-Policy': '"minute";q=60;w=61, "day";q=1000;w=86400' },
      ],
      [
        'a RateLimit with the non-binding window first',
        { RateLimit: '"day";r=999;t=57585, "minute";r=59;t=45' },
      ],
      [
        "an X-RateLimit-Remaining that is not the binding window's",
        { 'X-RateLimit-Remaining': '58' },
      ],
      ["an X-RateLimit-Limit that is not the binding window's", { 'X-RateLimit-Limit': '1000' }],
      ['an X-RateLimit-Reset that is not a whole minute', { 'X-RateLimit-Reset': '1795334461' }],
      [
        'more quota later than two window lengths',
        { RateLimit: '"minute";r=59;t=121, "day";r=999;t=57585' },
      ],
      [
        'more remaining than the quota',
        { 'X-RateLimit-Remaining': '61', RateLimit: '"minute";r=61;t=45, "day";r=999;t=57585' },
      ],
    ])('refuses %s', async (_, changed: Record<string, string>) => {
      expect(await listWith({ ...RATE_HEADERS, ...changed })).not.toEqual([]);
    });

    it('accepts a 429 whose Retry-After is the longest t of the windows with none left, and no other', async () => {
      const refused = (rateLimit: string, retryAfter: string) =>
        openApiResponseErrors({
          ...list,
          status: 429,
          body: errorBody('RATE_LIMITED', 429),
          headers: {
            ...JSON_HEADERS,
            ...RATE_HEADERS,
            'X-RateLimit-Remaining': '0',
            RateLimit: rateLimit,
            'Retry-After': retryAfter,
          },
        });
      expect(await refused('"minute";r=0;t=3, "day";r=940;t=57586', '3')).toEqual([]);
      expect(await refused('"minute";r=0;t=3, "day";r=940;t=57586', '60')).toContainEqual(
        expect.stringContaining('Retry-After 60 is not the longest t'),
      );
    });

    it('accepts the day window as the binding one, and on a tie (it ends later)', async () => {
      const day = {
        'X-RateLimit-Limit': '5',
        'X-RateLimit-Remaining': '4',
        'X-RateLimit-Reset': '1795392000',
        'RateLimit-Policy': '"minute";q=100;w=60, "day";q=5;w=86400',
        RateLimit: '"day";r=4;t=57585, "minute";r=99;t=45',
      };
      expect(await listWith(day)).toEqual([]);
      const tie = {
        'X-RateLimit-Limit': '5',
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': '1795392000',
        'RateLimit-Policy': '"minute";q=5;w=60, "day";q=5;w=86400',
        RateLimit: '"day";r=0;t=57586, "minute";r=0;t=46',
      };
      expect(await listWith(tie)).toEqual([]);
      const minuteFirst = { ...tie, RateLimit: '"minute";r=0;t=46, "day";r=0;t=57586' };
      expect(await listWith(minuteFirst)).toContainEqual(
        expect.stringContaining('binding window first'),
      );
    });
  });

  describe('on order lists', () => {
    it('accepts int64 ids past 2^53, up to the int64 maximum', async () => {
      const body =
        '[{"id":9007199254740993,"petId":-9223372036854775808,"quantity":2147483647,' +
        '"shipDate":"2026-11-20T09:00:00Z","complete":false,"status":"pending"},' +
        '{"id":9223372036854775807,"status":"cancelled"}]';
      expect(await openApiResponseErrors({ ...list, body })).toEqual([]);
    });

    it('refuses an integer past the int64 range, which JSON.parse rounds into it', async () => {
      const body = '[{"id":9223372036854775808,"status":"pending"}]';
      expect(await openApiResponseErrors({ ...list, body })).toEqual([
        expect.stringContaining('outside the int64 range'),
      ]);
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
      // What the check costs, in this process's CPU time: wall time on a shared 2-core machine
      // also measures the other test files (1.8 s alone, 8.7 s beside them in CI).
      const started = process.cpuUsage();
      expect(await openApiResponseErrors({ ...list, body: `[${orders.join(',')}]` })).toEqual([]);
      const { user, system } = process.cpuUsage(started);
      expect((user + system) / 1000).toBeLessThan(5_000);
    });
  });

  describe("on API Gateway's own answers", () => {
    it('accepts 404 ROUTE_NOT_FOUND on an unknown path, and nothing else there', async () => {
      const unknown = { method: 'GET', path: '/pets/1', headers: JSON_HEADERS };
      const body = errorBody('ROUTE_NOT_FOUND', 404);
      expect(await openApiResponseErrors({ ...unknown, status: 404, body })).toEqual([]);
      expect(await openApiResponseErrors({ ...unknown, status: 200, body: '[]' })).not.toEqual([]);
    });

    it('accepts 405 with Allow on a known path with another method', async () => {
      const other = {
        method: 'POST',
        path: '/store/orders',
        status: 405,
        body: errorBody('METHOD_NOT_ALLOWED', 405),
      };
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
            ...notFound,
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
    const good = new Response(body, { status: 200, headers: FUNCTION_HEADERS });
    await expectValidAgainstOpenApi(good, body, 'GET', '/store/orders');
    const bad = new Response(body, { status: 201, headers: JSON_HEADERS });
    await expect(expectValidAgainstOpenApi(bad, body, 'GET', '/store/orders')).rejects.toThrow(
      /status 201 is not documented/,
    );
  });
});

describe('real responses, through the local API Gateway emulator', () => {
  const key = apiKeyFromBody('OpenApiContractTestKey0000000000');
  /** An enterprise key allowed one request a minute. */
  const tinyKey = apiKeyFromBody('OpenApiContractTinyKey0000000000');
  /** Keys that hold one permission each. */
  const onlyKeys = {
    read: apiKeyFromBody('OpenApiContractReadOnlyKey000000'),
    cancel: apiKeyFromBody('OpenApiContractCancelOnlyKey0000'),
  };
  const orders: Order[] = [
    { id: 1n, petId: 10n, quantity: 1, shipDate: '2026-11-20T09:00:00Z', status: 'pending' },
    { id: 2n, petId: 20n, quantity: 2, complete: true, status: 'shipped' },
    { id: 3n, status: 'cancelled' },
    { id: 9223372036854775807n, petId: 9223372036854775806n, status: 'pending' },
  ];
  let tables: TestTables;
  let handle: GatewayListener;
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    tables = await createTestTables('openapi');
    await new DynamoDbOrderStore(tables.client, tables.tables.orders).putOrders(orders);
    await registerKeys(
      new DynamoDbKeyStore(tables.client, tables.tables.apiKeys),
      [
        { key, plan: 'pro' },
        { key: tinyKey, plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } },
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
  ): Promise<{ status: number; body: string; headers: Headers }> {
    const response = await fetch(`${baseUrl}${path}`, { method, headers });
    const body = await response.text();
    await expectValidAgainstOpenApi(response, body, method, path);
    return { status: response.status, body, headers: response.headers };
  }

  it('refuses each operation with 403 PERMISSION_DENIED, as documented, to a key without its x-permission, and counts it', async () => {
    // Order 3 is cancelled: the cancel a key may make changes nothing (204 again).
    await expectPermissionsAsDocumented(document, '3', onlyKeys, (method, path, onlyKey) =>
      call(method, path, { Authorization: `Bearer ${onlyKey}` }),
    );
  });

  it("puts the pro plan's rate-limit headers on a function's answer, and none on a 401", async () => {
    const listed = await call('GET', '/store/orders');
    expect(listed.headers.get('X-RateLimit-Limit')).toBe(String(PLAN_LIMITS.pro.perMinute));
    expect(listed.headers.get('RateLimit-Policy')).toBe(
      `"minute";q=${PLAN_LIMITS.pro.perMinute};w=60, "day";q=${PLAN_LIMITS.pro.perDay};w=86400`,
    );
    const refused = await call('GET', '/store/orders', {});
    expect(refused.status).toBe(401);
    for (const name of RATE_LIMIT_HEADERS) expect(refused.headers.get(name), name).toBeNull();
  });

  it('answers 429 RATE_LIMITED as documented to a key over its limit', async () => {
    const auth = { Authorization: `Bearer ${tinyKey}` };
    // One request a minute: the second is refused, unless a minute began in between.
    let answer = await call('GET', '/store/orders', auth);
    expect(answer.status).toBe(200);
    for (let i = 0; i < 2 && answer.status !== 429; i++) {
      answer = await call(
        i % 2 ? 'GET' : 'DELETE',
        i % 2 ? '/store/orders' : '/store/orders/4',
        auth,
      );
    }
    expect(answer.status).toBe(429);
    const retryAfter = answer.headers.get('Retry-After');
    expect(JSON.parse(answer.body)).toEqual({
      code: 'RATE_LIMITED',
      message: `Rate limit exceeded: retry after ${retryAfter} seconds.`,
      status: 429,
    });
    expect(answer.headers.get('X-RateLimit-Limit')).toBe('1');
    expect(answer.headers.get('X-RateLimit-Remaining')).toBe('0');
  });

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

  /**
   * Accept-Encoding and If-None-Match: the service reads them (RFC 9110) and restricts neither;
   * only HTTP's grammar and the head's size limit bound them. What the API serves, the document
   * must allow: a validating proxy or a generated client would refuse it otherwise.
   */
  describe('headers the service reads without restricting them', () => {
    let edge: Server;
    let port: number;
    beforeAll(async () => {
      // npm start's server in front of the same gateway: API Gateway's limits on a request's head.
      edge = createGatewayServer(() => handle);
      await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', resolve));
      port = (edge.address() as AddressInfo).port;
    });
    afterAll(() => {
      edge.closeAllConnections();
      edge.close();
    });

    const bytes = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => from + i);
    /** Every byte HTTP carries in a field value, between letters (a value's edges lose spaces). */
    const EVERY_FIELD_VALUE_BYTE = Buffer.from([
      0x78,
      0x09,
      ...bytes(0x20, 0x7e),
      ...bytes(0x80, 0xff),
      0x78,
    ]);
    const SERVED: [string, Buffer][] = [
      ['every byte HTTP allows in a field value', EVERY_FIELD_VALUE_BYTE],
      ['non-ASCII text (UTF-8)', Buffer.from('gzip;q=0.9, identité, 圧縮, W/"ÉTAG"', 'utf8')],
      // Far past the limits the document once declared (1,024 and 8,192 characters), within
      // the head's 10,240 bytes with the request's other headers.
      ['a long value', Buffer.from('gzip, br;q=0.5, '.repeat((MAX_HEADER_BYTES - 512) / 16))],
    ];
    const HEADERS = ['Accept-Encoding', 'If-None-Match'];

    /** A list request with one more header, its value sent byte for byte. */
    const listWith = (name: string, value: Buffer) =>
      rawRequest(
        port,
        Buffer.concat([
          Buffer.from(
            `GET /${API_STAGE}/store/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\n` +
              `Connection: close\r\n${name}: `,
          ),
          value,
          Buffer.from('\r\n\r\n'),
        ]),
      );
    /** What the document says of the same request, the value as the service reads it. */
    const documentErrors = (name: string, value: Buffer) =>
      openApiRequestErrors({
        method: 'GET',
        path: '/store/orders',
        headers: { Authorization: `Bearer ${key}`, [name]: value.toString('latin1') },
      });

    it.each(HEADERS.flatMap((name) => SERVED.map(([what, value]) => [name, what, value] as const)))(
      '%s with %s: served, and valid by the document',
      async (name, _, value) => {
        expect((await listWith(name, value)).status).toBe(200);
        expect(await documentErrors(name, value)).toEqual([]);
      },
    );

    it.each(HEADERS)(
      '%s with a byte HTTP does not allow in a field value: refused, and invalid by the document',
      async (name) => {
        for (const byte of [0x01, 0x7f]) {
          const value = Buffer.from([0x78, byte, 0x78]);
          expect((await listWith(name, value)).status).toBe(400);
          expect(await documentErrors(name, value)).not.toEqual([]);
        }
      },
    );

    it('a request whose headers pass the limit: 413, as each operation documents', async () => {
      await expectHeadersTooLargeAsDocumented(port, API_STAGE, key);
    });

    it.each(HEADERS)('%s: the document bounds it by no less than the head’s limit', (name) => {
      const [, item] = Object.entries(document.paths).find(([path]) => path === '/store/orders')!;
      const parameter = (item.get!.parameters as { name: string; schema: Schema }[]).find(
        (p) => p.name === name,
      );
      expect(parameter?.schema.maxLength ?? Infinity).toBeGreaterThanOrEqual(MAX_HEADER_BYTES);
    });
  });
});

describe('real responses from the handlers, on a fixed clock', () => {
  /** 08:00:15 UTC: 45 s left in the minute, 57,585 s in the day (the document's examples). */
  const EXAMPLE_NOW = Date.UTC(2026, 10, 22, 8, 0, 15);
  /**
   * The same time of day, tomorrow: never a fixed date, since counter items expire by TTL two
   * days after their day window starts and DynamoDB Local deletes expired items as they come.
   */
  const DAY_MS = 86_400_000;
  const NOW = (Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS + (EXAMPLE_NOW % DAY_MS);
  const BAN_SECONDS = DEFAULT_LIMITER_SETTINGS.banMs / 1000;
  let tables: TestTables;
  /** The orders' own client, so that its failures leave the rate limiter alone. */
  let ordersClient: ReturnType<typeof createDocumentClient>;
  let sequence = 0;

  beforeAll(async () => {
    tables = await createTestTables('openapi-limits');
    ordersClient = createDocumentClient({ endpoint: tables.endpoint });
    await new DynamoDbOrderStore(ordersClient, tables.tables.orders).putOrders([
      { id: 1n, status: 'pending' },
      { id: 2n, status: 'shipped' },
    ]);
  });

  afterAll(async () => {
    ordersClient?.destroy();
    await tables?.drop();
  });

  /** Both functions for one new caller, sharing a limiter (one container) and a clock. */
  function functionsFor(limits: Limits) {
    const caller: Caller = {
      keyId: `key_contract${++sequence}`,
      plan: 'enterprise',
      limits,
      permissions: ALL_PERMISSIONS,
    };
    const limiter = new DynamoDbRateLimiter(tables.client, tables.tables.rateLimits);
    const clock = { now: NOW };
    const deps = {
      orders: () => new DynamoDbOrderStore(ordersClient, tables.tables.orders),
      limiter: () => limiter,
      now: () => clock.now,
    };
    const list = createListOrdersHandler(deps);
    const cancel = createCancelOrderHandler(deps);
    const authorizer = { principalId: caller.keyId, ...callerToContext(caller) };
    return {
      clock,
      /** Calls an operation and checks the answer against the document. */
      call: async (method: 'GET' | 'DELETE', path: string): Promise<HttpResult> => {
        const orderId = path.split('/')[3];
        const result = await invokeHttp(
          method === 'GET' ? list : cancel,
          proxyEvent({
            method,
            resource: method === 'GET' ? '/store/orders' : '/store/orders/{orderId}',
            path,
            pathParameters: orderId === undefined ? null : { orderId },
            authorizer,
          }),
        );
        const problems = await openApiResponseErrors({
          method,
          path,
          status: result.statusCode,
          headers: result.headers,
          body: result.body,
        });
        expect(problems, `${method} ${path} → ${result.statusCode}`).toEqual([]);
        return result;
      },
    };
  }

  const bodyOf = (result: HttpResult) => JSON.parse(result.body) as Record<string, unknown>;

  it("counts every answer of a function (400, 404 and 409 too), with the document's example headers first", async () => {
    const { call } = functionsFor(PLAN_LIMITS.free);
    const listed = await call('GET', '/store/orders');
    expect(listed.statusCode).toBe(200);
    // The document's example headers, its reset moved from the example's day to this one.
    expect(RATE_HEADERS['X-RateLimit-Reset']).toBe(String((EXAMPLE_NOW + 45_000) / 1000));
    expect(listed.headers).toMatchObject({
      ...RATE_HEADERS,
      'X-RateLimit-Reset': String((NOW + 45_000) / 1000),
    });
    const answers = [
      await call('DELETE', '/store/orders/abc'),
      await call('DELETE', '/store/orders/999'),
      await call('DELETE', '/store/orders/2'),
      await call('DELETE', '/store/orders/1'),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([400, 404, 409, 204]);
    expect(answers.map((a) => a.headers['X-RateLimit-Remaining'])).toEqual([
      '58',
      '57',
      '56',
      '55',
    ]);
    expect(answers.at(-1)?.headers.RateLimit).toBe('"minute";r=55;t=46, "day";r=995;t=57586');
  });

  it('answers 429 RATE_LIMITED as documented on both operations (one request a minute, called twice)', async () => {
    const { call } = functionsFor({ perMinute: 1, perDay: 1000 });
    expect((await call('GET', '/store/orders')).statusCode).toBe(200);
    for (const [method, path] of [
      ['GET', '/store/orders'],
      ['DELETE', '/store/orders/1'],
    ] as const) {
      const refused = await call(method, path);
      expect(refused.statusCode).toBe(429);
      // The next request fits once floor(1 × (W − e) / W) < 1: 1 ms into the next minute.
      expect(refused.headers['Retry-After']).toBe('46');
      expect(bodyOf(refused)).toEqual({
        code: 'RATE_LIMITED',
        message: 'Rate limit exceeded: retry after 46 seconds.',
        status: 429,
      });
      expect(refused.headers).toMatchObject({
        'X-RateLimit-Limit': '1',
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': String((NOW + 45_000) / 1000),
        RateLimit: '"minute";r=0;t=46, "day";r=999;t=57586',
      });
    }
  });

  it('bans on the refusal over the threshold, then answers API_KEY_TEMPORARILY_BANNED as documented', async () => {
    const { call, clock } = functionsFor({ perMinute: 1, perDay: 1000 });
    expect((await call('GET', '/store/orders')).statusCode).toBe(200);
    // Sent at once, each before the Retry-After of the one before: the first refusal waited for
    // nothing it was told and does not count, the next ten do, the one after starts the ban.
    const refusals: HttpResult[] = [];
    for (let i = 0; i <= DEFAULT_LIMITER_SETTINGS.maxRefusalsPerMinute + 1; i++) {
      refusals.push(await call('GET', '/store/orders'));
    }
    expect(refusals.map((r) => bodyOf(r).code)).toEqual([
      ...Array(DEFAULT_LIMITER_SETTINGS.maxRefusalsPerMinute + 1).fill('RATE_LIMITED'),
      'API_KEY_TEMPORARILY_BANNED',
    ]);
    expect(refusals.at(-2)?.headers['Retry-After']).toBe('46');
    expect(refusals.at(-1)?.headers['Retry-After']).toBe(String(BAN_SECONDS));
    expect(bodyOf(refusals.at(-1) as HttpResult).message).toBe(
      `The API key is temporarily banned for repeated requests over its rate limit: retry after ${BAN_SECONDS} seconds.`,
    );

    clock.now = NOW + 5 * 60_000;
    for (const [method, path] of [
      ['GET', '/store/orders'],
      ['DELETE', '/store/orders/1'],
    ] as const) {
      const banned = await call(method, path);
      expect(banned.statusCode).toBe(429);
      expect(banned.headers['Retry-After']).toBe(String(BAN_SECONDS - 300));
      expect(banned.headers['X-RateLimit-Remaining']).toBe('0');
      expect(bodyOf(banned)).toEqual({
        code: 'API_KEY_TEMPORARILY_BANNED',
        message: `The API key is temporarily banned for repeated requests over its rate limit: retry after ${BAN_SECONDS - 300} seconds.`,
        status: 429,
      });
    }
    // The ban ends when it said, not extended by the requests made during it.
    clock.now = NOW + BAN_SECONDS * 1000;
    expect((await call('GET', '/store/orders')).statusCode).toBe(200);
  });

  it('fails closed when the rate-limit store fails transiently: 503 with Retry-After, and no counts it does not know', async () => {
    const { call } = functionsFor(PLAN_LIMITS.free);
    expect((await call('GET', '/store/orders')).headers['X-RateLimit-Remaining']).toBe('59');
    const restore = failDynamoDbCalls(tables.client, () =>
      Object.assign(new Error('slow down'), { name: 'ThrottlingException', $metadata: {} }),
    );
    try {
      const unavailable = await call('DELETE', '/store/orders/1');
      expect(unavailable.statusCode).toBe(503);
      expect(bodyOf(unavailable).code).toBe('SERVICE_UNAVAILABLE');
      expect(Number(unavailable.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
      expect(unavailable.headers['RateLimit-Policy']).toBe(
        '"minute";q=60;w=60, "day";q=1000;w=86400',
      );
      expect(unavailable.headers['X-RateLimit-Remaining']).toBeUndefined();
      expect(unavailable.headers['RateLimit']).toBeUndefined();
    } finally {
      restore();
    }
  });

  it('answers 500 without rate-limit counts when the rate-limit store fails permanently', async () => {
    const { call } = functionsFor(PLAN_LIMITS.free);
    const restore = failDynamoDbCalls(tables.client, () =>
      Object.assign(new Error('denied'), { name: 'AccessDeniedException', $metadata: {} }),
    );
    try {
      const failed = await call('DELETE', '/store/orders/1');
      expect(failed.statusCode).toBe(500);
      expect(bodyOf(failed).code).toBe('INTERNAL_ERROR');
      expect(failed.headers['X-RateLimit-Remaining']).toBeUndefined();
    } finally {
      restore();
    }
  });

  it('puts the rate-limit headers on the 500 and 503 a function gives when the orders fail', async () => {
    const { call } = functionsFor(PLAN_LIMITS.free);
    for (const [failure, status] of [
      [() => Object.assign(new Error('bug'), { name: 'ValidationException', $metadata: {} }), 500],
      [() => Object.assign(new Error('slow'), { name: 'ThrottlingException', $metadata: {} }), 503],
    ] as const) {
      const restore = failDynamoDbCalls(ordersClient, failure);
      try {
        const listed = await call('GET', '/store/orders');
        expect(listed.statusCode).toBe(status);
        expect(listed.headers['X-RateLimit-Limit']).toBe('60');
      } finally {
        restore();
      }
    }
  });
});

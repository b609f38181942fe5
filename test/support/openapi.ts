/**
 * Checks real responses against `openapi/openapi.yaml`. openapi-backend does the OpenAPI work:
 * it finds the operation of a method and path, and validates bodies and header values against
 * the schemas. This module adds what is this project's own:
 * - API Gateway's answers outside any operation (`components/responses`: 404 on an unknown path,
 *   405 on a known path with another method, 413, 400, a gateway 500), and a 405's `Allow`;
 * - a documented status, Content-Type and body presence, and `required` headers (openapi-backend
 *   requires either every documented header or none);
 * - int64 digits: JSON.parse rounds 9223372036854775808 to the int64 maximum, so integers are
 *   range-checked on their source text;
 * - Error bodies whose `status` is the HTTP status;
 * - rate-limit headers that agree with each other.
 *
 * openapi-backend reads OpenAPI 3.0; for this 3.1 document it gets it dereferenced by
 * @readme/openapi-parser (which keeps `$ref` siblings), `quick` (its own definition check uses the
 * 3.0 meta-schema) and Ajv's 2020-12 dialect with formats.
 */
import { fileURLToPath } from 'node:url';
import { dereference } from '@readme/openapi-parser';
import ajv2020Module, { type ErrorObject } from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import { OpenAPIBackend, type Document } from 'openapi-backend';
import { expect } from 'vitest';
import type { ApiStage } from '../../lib/api/routes.ts';
import { MAX_HEADER_BYTES } from '../../local/http-edge.ts';
import { INT64_MAX, INT64_MIN } from '../../lib/orders/order.ts';
import type { SourceReviver } from '../../lib/orders/order-input.ts';
import { rawRequest } from './raw-http.ts';

export const OPENAPI_PATH = fileURLToPath(new URL('../../openapi/openapi.yaml', import.meta.url));

/** Each version's document: v1's, and v2's (which refers to v1's components). */
export const OPENAPI_PATHS: Readonly<Record<ApiStage, string>> = {
  v1: OPENAPI_PATH,
  v2: fileURLToPath(new URL('../../openapi/openapi-v2.yaml', import.meta.url)),
};

export const HTTP_METHODS = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
] as const;

/** JSON Schema, as far as the tests read it. */
export type Schema = Record<string, unknown>;

export interface HeaderObject {
  readonly required?: boolean;
  readonly schema?: Schema;
  readonly example?: unknown;
}

export interface MediaTypeObject {
  readonly schema?: Schema;
  readonly example?: unknown;
  readonly examples?: Record<string, { readonly value?: unknown }>;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Record<string, HeaderObject>;
  readonly content?: Record<string, MediaTypeObject>;
}

export interface OperationObject {
  readonly operationId: string;
  readonly responses?: Record<string, ResponseObject>;
  readonly [key: string]: unknown;
}

export type PathItemObject = Partial<Record<(typeof HTTP_METHODS)[number], OperationObject>>;

/** The dereferenced document: no `$ref` left. */
export interface OpenApiDocument {
  readonly openapi: string;
  readonly info: { readonly version: string; readonly description?: string };
  readonly servers?: readonly { readonly url: string }[];
  readonly paths: Record<string, PathItemObject>;
  readonly components: {
    readonly schemas: Record<string, Schema>;
    readonly responses: Record<string, ResponseObject>;
    readonly headers?: Record<string, HeaderObject>;
  };
}

/** API Gateway's own answers (`components/responses`), by where each can occur. */
const GATEWAY_RESPONSES = {
  /** The path is not in the document. */
  unknownPath: ['RouteNotFound', 'BadRequest'],
  /** The path is in the document, the method is not. */
  unknownMethod: ['MethodNotAllowed', 'BadRequest'],
  /** A documented operation: besides its own responses (its 413 among them, listed on each). */
  operation: ['BadRequest', 'GatewayInternalError'],
} as const;

/** The rate-limit headers of a function's answer (CONTRACT 4.2), in the document's spelling. */
export const RATE_LIMIT_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
] as const;

const documentPromises = new Map<ApiStage, Promise<OpenApiDocument>>();

/** A version's document (v1's by default), dereferenced (shared: do not modify it). */
export function loadOpenApiDocument(version: ApiStage = 'v1'): Promise<OpenApiDocument> {
  let document = documentPromises.get(version);
  if (!document) {
    document = dereference(OPENAPI_PATHS[version]) as unknown as Promise<OpenApiDocument>;
    documentPromises.set(version, document);
  }
  return document;
}

/**
 * Each operation of a document with the permission it says a key needs (`x-permission`), and
 * the path with `{orderId}` set to `orderId`, to be sent as it is.
 */
function documentedPermissions(
  document: OpenApiDocument,
  orderId: string,
): { method: string; path: string; permission: string }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = item[method];
      if (!operation) return [];
      const permission = operation['x-permission'];
      if (typeof permission !== 'string') throw new Error(`${method} ${path} has no x-permission`);
      return [
        { method: method.toUpperCase(), path: path.replace('{orderId}', orderId), permission },
      ];
    }),
  );
}

/**
 * Asks each operation of a document with a key holding only another permission than its
 * `x-permission` (`onlyKeys`: a key that holds only that permission, for each), which must be
 * answered 403 PERMISSION_DENIED naming the permission, counted (one request fewer remaining);
 * and with a key that holds only its permission, which must not be. `send` checks each answer
 * against the document.
 */
export async function expectPermissionsAsDocumented(
  document: OpenApiDocument,
  orderId: string,
  onlyKeys: Readonly<Record<string, string>>,
  send: (
    method: string,
    path: string,
    key: string,
  ) => Promise<{ status: number; body: string; headers: Headers }>,
): Promise<void> {
  const operations = documentedPermissions(document, orderId);
  expect(operations.map((o) => o.permission).sort()).toEqual(Object.keys(onlyKeys).sort());
  for (const { method, path, permission } of operations) {
    const [other, otherKey] = Object.entries(onlyKeys).find(([held]) => held !== permission)!;
    const where = `${method} ${path} with a key that may only ${other}`;
    const first = await send(method, path, otherKey);
    const second = await send(method, path, otherKey);
    for (const refused of [first, second]) {
      expect(refused.status, where).toBe(403);
      expect(JSON.parse(refused.body), where).toEqual({
        code: 'PERMISSION_DENIED',
        status: 403,
        message: expect.stringContaining(`lacks the "${permission}" permission`),
      });
    }
    // Counted like any other request.
    expect(
      Number(first.headers.get('x-ratelimit-remaining')) -
        Number(second.headers.get('x-ratelimit-remaining')),
      where,
    ).toBe(1);
    const allowed = await send(method, path, onlyKeys[permission]!);
    expect(allowed.status, `${method} ${path} with a key that may only ${permission}`).not.toBe(
      403,
    );
  }
}

/** The `const` a schema (through `allOf`) gives one of its properties. */
export function findConst(schema: Schema | undefined, property: string): unknown {
  const own = (schema?.properties as Record<string, Schema> | undefined)?.[property]?.const;
  if (own !== undefined) return own;
  for (const part of (schema?.allOf as Schema[] | undefined) ?? []) {
    const found = findConst(part, property);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The status a `components/responses` entry stands for: its Error schema's `status` const. */
export function componentStatus(response: ResponseObject): number {
  return Number(findConst(response.content?.['application/json']?.schema, 'status'));
}

// Both are CommonJS: under `nodenext` the default import is `module.exports`, whose `default`
// is the class (or plugin) itself.
const Ajv2020 = ajv2020Module.default;
const addFormats = ajvFormatsModule.default;

const backendPromises = new Map<ApiStage, Promise<OpenAPIBackend>>();

/**
 * openapi-backend over a version's document. API Gateway's own answers, which belong to no
 * operation, are added as operations of their own (`gateway:RouteNotFound`…) so that they are
 * validated alike: they are v1's components, whichever version answers.
 */
function backend(version: ApiStage = 'v1'): Promise<OpenAPIBackend> {
  const known = backendPromises.get(version);
  if (known) return known;
  const made = Promise.all([loadOpenApiDocument(version), loadOpenApiDocument('v1')]).then(
    async ([document, v1]) => {
      const gatewayPaths = Object.fromEntries(
        Object.entries(v1.components.responses).map(([name, response]) => [
          `/~gateway/${name}`,
          {
            get: {
              operationId: `gateway:${name}`,
              responses: { [componentStatus(response)]: response },
            },
          },
        ]),
      );
      const api = new OpenAPIBackend({
        definition: {
          ...document,
          paths: { ...document.paths, ...gatewayPaths },
        } as unknown as Document,
        quick: true,
        customizeAjv: (_draft07, options) => {
          // strict: false lets the document's own keywords (`example`, `x-stability`) through.
          const ajv = new Ajv2020({ ...options, strict: false, allErrors: true });
          addFormats(ajv);
          ajv.addFormat('int32', {
            type: 'number',
            validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
          });
          // The range is checked on the source text (parseJson): a double cannot tell.
          ajv.addFormat('int64', { type: 'number', validate: Number.isInteger });
          return ajv;
        },
      });
      await api.init();
      return api;
    },
  );
  backendPromises.set(version, made);
  return made;
}

/** Schema errors, at most ten, each with where it is and what it names. */
function describeSchemaErrors(where: string, errors: readonly ErrorObject[]): string[] {
  return errors
    .slice(0, 10)
    .map((e) => `${where}${e.instancePath} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}

/**
 * Parses JSON and lists every integer literal outside the int64 range (the widest integer
 * format of the document), which JSON.parse only approximates.
 */
function parseJson(text: string): { value?: unknown; problems: string[] } {
  const problems: string[] = [];
  const reviver: SourceReviver = (_key, value, context) => {
    const source = context?.source;
    if (typeof value === 'number' && source !== undefined && /^-?\d{16,}$/.test(source)) {
      const exact = BigInt(source);
      if (exact < INT64_MIN || exact > INT64_MAX) {
        problems.push(`body: integer ${source} is outside the int64 range`);
      }
    }
    return value;
  };
  try {
    const value: unknown = /\d{16}/.test(text)
      ? JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1])
      : JSON.parse(text);
    return { value, problems };
  } catch (error) {
    return { problems: [`body is not valid JSON: ${(error as Error).message}`] };
  }
}

/** A response's headers by name, whatever its case. */
type HeaderLookup = (name: string) => string | null;

const WINDOW_SECONDS: Readonly<Record<string, number>> = { minute: 60, day: 86_400 };

/**
 * Whether the rate-limit headers of a response agree with each other (their formats are the
 * schemas' business): all five, none, or RateLimit-Policy alone (the counts are not known: the
 * counter store failed); `X-RateLimit-*` describe the first window of `RateLimit`, which is the
 * binding one (fewer remaining; on a tie the day, whose fixed window ends later); nothing remains
 * beyond the quota; more quota comes within two window lengths (a ban aside); and on a 429 the
 * headers agree with Retry-After: the binding window has none left, and Retry-After is the
 * longest `t` of the windows with none left.
 */
function rateLimitHeaderProblems(headers: HeaderLookup, status: number): string[] {
  const present = RATE_LIMIT_HEADERS.filter((name) => headers(name) !== null);
  if (present.length === 0) return [];
  if (present.length === 1 && present[0] === 'RateLimit-Policy') return [];
  if (present.length < RATE_LIMIT_HEADERS.length) {
    const missing = RATE_LIMIT_HEADERS.filter((name) => headers(name) === null);
    return [`rate-limit headers come together, but ${missing.join(', ')} missing`];
  }
  const quotas = new Map(
    [...(headers('RateLimit-Policy') ?? '').matchAll(/"(\w+)";q=(\d+)/g)].map(([, window, q]) => [
      window as string,
      Number(q),
    ]),
  );
  const items = [...(headers('RateLimit') ?? '').matchAll(/"(\w+)";r=(\d+);t=(\d+)/g)].map(
    ([, window, r, t]) => ({ window: window as string, r: Number(r), t: Number(t) }),
  );
  const [binding, other] = items;
  if (!binding || !other || quotas.size !== 2) return []; // The schemas report the format.
  const problems: string[] = [];
  if (String(quotas.get(binding.window)) !== headers('X-RateLimit-Limit')) {
    problems.push(`X-RateLimit-Limit is not the ${binding.window} quota of RateLimit-Policy`);
  }
  if (String(binding.r) !== headers('X-RateLimit-Remaining')) {
    problems.push('X-RateLimit-Remaining is not the remaining count of the first RateLimit window');
  }
  if (binding.r > other.r || (binding.r === other.r && binding.window !== 'day')) {
    problems.push(
      'RateLimit does not put the binding window first (fewer remaining, day on a tie)',
    );
  }
  const retryAfter = headers('Retry-After');
  for (const item of items) {
    if (item.r > (quotas.get(item.window) ?? 0)) {
      problems.push(`RateLimit: ${item.window} has ${item.r} remaining, beyond its quota`);
    }
    const banWait = status === 429 && item.r === 0 && String(item.t) === retryAfter;
    if (item.t > 2 * (WINDOW_SECONDS[item.window] ?? 0) && !banWait) {
      problems.push(`RateLimit: more ${item.window} quota in ${item.t} s, beyond two windows`);
    }
  }
  if (status === 429) {
    const longest = Math.max(...items.filter((item) => item.r === 0).map((item) => item.t));
    if (binding.r !== 0 || String(longest) !== retryAfter) {
      problems.push(
        `429: Retry-After ${retryAfter} is not the longest t of the windows with none remaining`,
      );
    }
  }
  const reset = Number(headers('X-RateLimit-Reset'));
  if (reset % (WINDOW_SECONDS[binding.window] ?? 1) !== 0) {
    problems.push(`X-RateLimit-Reset ${reset} is not the end of a ${binding.window} window`);
  }
  return problems;
}

export interface ResponseToCheck {
  /** The version whose document the response is checked against (v1 by default). */
  readonly version?: ApiStage;
  readonly method: string;
  /** A path template of the document or a stage-relative path (`/store/orders/42`). */
  readonly path: string;
  readonly status: number;
  readonly headers: Record<string, string> | Headers;
  readonly body: string;
}

/** Problems of a response against one documented response of an operation; empty if none. */
function responseProblems(
  api: OpenAPIBackend,
  operationId: string,
  documented: ResponseObject,
  input: ResponseToCheck,
  headers: { readonly all: Record<string, string>; readonly get: HeaderLookup },
): string[] {
  const problems: string[] = [];
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (header.required && headers.get(name) === null) {
      problems.push(`header ${name} is required but missing`);
    }
  }
  const headerResult = api.validator.validateResponseHeaders(headers.all, operationId, {
    statusCode: input.status,
  });
  problems.push(
    ...(headerResult.errors ?? []).map(
      (e) => `header ${e.instancePath.replace('/headers/', '')} ${e.message ?? e.keyword}`,
    ),
  );
  if (RATE_LIMIT_HEADERS.some((name) => documented.headers?.[name] !== undefined)) {
    problems.push(...rateLimitHeaderProblems(headers.get, input.status));
  }

  const documentedTypes = Object.keys(documented.content ?? {});
  if (input.body.length === 0) {
    if (input.method.toUpperCase() !== 'HEAD' && documentedTypes.length > 0) {
      problems.push(`a body (${documentedTypes.join(', ')}) is documented, got none`);
    }
    return problems;
  }
  if (documentedTypes.length === 0) {
    return [...problems, `no body is documented, got ${input.body.length} characters`];
  }
  const contentType = headers.get('content-type');
  const mediaType = (contentType?.split(';', 1)[0] ?? '').trim().toLowerCase();
  if (!documentedTypes.includes(mediaType)) {
    return [
      ...problems,
      `Content-Type ${contentType ?? '(none)'} is not documented (documented: ${documentedTypes.join(', ')})`,
    ];
  }
  const parsed = parseJson(input.body);
  problems.push(...parsed.problems);
  if (!('value' in parsed)) return problems;
  const bodyResult = api.validator.validateResponse(parsed.value, operationId, input.status);
  problems.push(...describeSchemaErrors('body', bodyResult.errors ?? []));
  const errorStatus = (parsed.value as { status?: unknown } | null)?.status;
  if (input.status >= 400 && errorStatus !== undefined && errorStatus !== input.status) {
    problems.push(`Error.status ${JSON.stringify(errorStatus)} is not the HTTP status`);
  }
  return problems;
}

/**
 * Human-readable problems of a response against the OpenAPI document; empty when it conforms.
 */
export async function openApiResponseErrors(input: ResponseToCheck): Promise<string[]> {
  // API Gateway's own answers are v1's components, whichever version answers.
  const [api, document] = await Promise.all([backend(input.version), loadOpenApiDocument('v1')]);
  const method = input.method.toUpperCase();
  const all = Object.fromEntries(new Headers(input.headers));
  const headers = { all, get: (name: string) => all[name.toLowerCase()] ?? null };
  const match = (m: string) =>
    api.router.matchOperation({ method: m, path: input.path, headers: {} });
  const operation = match(method);
  const allowed = HTTP_METHODS.filter(match).map((m) => m.toUpperCase());
  const context = operation
    ? `${method} ${operation.path} (${operation.operationId})`
    : `${method} ${input.path} (${allowed.length > 0 ? `no such operation; the path has ${allowed.join(', ')}` : 'no such path'})`;

  // The documented responses that may fit, best first: the operation's own, then API Gateway's
  // for where the request landed. Those carry no rate-limit header: an answer with one is a
  // function's.
  const candidates: { operationId: string; where: string; response: ResponseObject }[] = [];
  const own = (operation?.responses as Record<string, ResponseObject> | undefined)?.[
    String(input.status)
  ];
  if (operation?.operationId && own) {
    candidates.push({ operationId: operation.operationId, where: context, response: own });
  }
  const gateway = operation
    ? GATEWAY_RESPONSES.operation
    : allowed.length > 0
      ? GATEWAY_RESPONSES.unknownMethod
      : GATEWAY_RESPONSES.unknownPath;
  const fromFunction = RATE_LIMIT_HEADERS.some((name) => headers.get(name) !== null);
  for (const name of fromFunction ? [] : gateway) {
    const response = document.components.responses[name] as ResponseObject;
    if (componentStatus(response) === input.status) {
      const where = `${context} (components/responses/${name})`;
      candidates.push({ operationId: `gateway:${name}`, where, response });
    }
  }
  if (candidates.length === 0) return [`${context}: status ${input.status} is not documented`];

  let problems: string[] = [];
  for (const { operationId, where, response } of candidates) {
    const found = responseProblems(api, operationId, response, input, headers);
    if (found.length === 0) {
      problems = [];
      break;
    }
    if (problems.length === 0) problems = found.map((p) => `${where} ${input.status}: ${p}`);
  }
  // A 405 names exactly the methods the document gives the path.
  const allow = headers.get('allow');
  const sorted = (methods: readonly string[]) => [...methods].sort().join(', ');
  if (!operation && input.status === 405 && allow !== null) {
    const listed = allow.split(',').map((m) => m.trim().toUpperCase());
    if (sorted(listed) !== sorted(allowed)) {
      problems.push(
        `${context} 405: Allow "${allow}" differs from the documented methods (${allowed.join(', ')})`,
      );
    }
  }
  return problems;
}

export interface RequestToCheck {
  /** The version whose document the request is checked against (v1 by default). */
  readonly version?: ApiStage;
  readonly method: string;
  /** A stage-relative path (`/store/orders`). */
  readonly path: string;
  /** Header values as the service reads them (bytes 0x80–0xFF as one character each). */
  readonly headers: Record<string, string>;
  /** Query parameters as the service reads them (decoded; a repeated one as a list). */
  readonly query?: Record<string, string | string[]>;
}

/**
 * Human-readable problems of a request's parameters against the OpenAPI document (what a
 * validating proxy or a generated client would refuse); empty when it conforms.
 */
export async function openApiRequestErrors(input: RequestToCheck): Promise<string[]> {
  const { version, ...request } = input;
  const api = await backend(version);
  const result = api.validator.validateRequest({ ...request, query: input.query ?? {} });
  return describeSchemaErrors(`${input.method} ${input.path} `, result.errors ?? []);
}

/** Fails the test, listing every problem, when the response does not conform to the document. */
export async function expectValidAgainstOpenApi(
  response: Response,
  body: string,
  method: string,
  path: string,
  version: ApiStage = 'v1',
): Promise<void> {
  const problems = await openApiResponseErrors({
    version,
    method,
    path,
    status: response.status,
    headers: response.headers,
    body,
  });
  expect(
    problems,
    `${method} ${path} → ${response.status} does not conform to the OpenAPI document:\n` +
      problems.map((problem) => `  - ${problem}`).join('\n'),
  ).toEqual([]);
}

/**
 * A request to each operation of a version's document whose headers pass API Gateway's limit,
 * sent to the local API's server at `port` with `key`: answered 413 `REQUEST_TOO_LARGE`, as the
 * operation lists it (a path parameter is 1).
 */
export async function expectHeadersTooLargeAsDocumented(
  port: number,
  version: ApiStage,
  key: string,
): Promise<void> {
  const document = await loadOpenApiDocument(version);
  for (const [template, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS.filter((m) => item[m])) {
      const path = template.replace(/\{[^}]+\}/g, '1');
      const answer = await rawRequest(
        port,
        `${method.toUpperCase()} /${version}${path} HTTP/1.1\r\nHost: a\r\n` +
          `Authorization: Bearer ${key}\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES)}\r\n` +
          'Connection: close\r\n\r\n',
      );
      const where = `${method.toUpperCase()} ${path}`;
      expect(answer.status, where).toBe(413);
      expect(JSON.parse(answer.body), where).toMatchObject({ code: 'REQUEST_TOO_LARGE' });
      const problems = await openApiResponseErrors({ version, method, path, ...answer });
      expect(problems, where).toEqual([]);
    }
  }
}

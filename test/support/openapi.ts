/**
 * Checks real responses against `openapi/openapi.yaml`: the status must be documented for the
 * operation (or be an answer API Gateway gives itself, from `components/responses`), the
 * Content-Type must match, the body must validate against the schema, the required headers must
 * be there and every documented header that is there must validate against its schema (so a
 * header the document marks optional, like the rate-limit headers of a 429, is checked when
 * present). The rate-limit headers must also agree with each other. The document is
 * dereferenced once and each schema compiled once, so a body of 100,000 orders is checked in
 * well under a second.
 */
import { fileURLToPath } from 'node:url';
import { dereference } from '@readme/openapi-parser';
import ajv2020Module, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import { INT64_MAX, INT64_MIN } from '../../lib/orders/order.ts';
import type { SourceReviver } from '../../lib/orders/order-input.ts';

export const OPENAPI_PATH = fileURLToPath(new URL('../../openapi/openapi.yaml', import.meta.url));

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

/** JSON Schema, as far as this module reads it. */
export type Schema = Record<string, unknown>;

export interface HeaderObject {
  readonly required?: boolean;
  readonly schema?: Schema;
  readonly example?: unknown;
  readonly description?: string;
}

export interface ExampleObject {
  readonly summary?: string;
  readonly value?: unknown;
}

export interface MediaTypeObject {
  readonly schema?: Schema;
  readonly example?: unknown;
  readonly examples?: Record<string, ExampleObject>;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Record<string, HeaderObject>;
  readonly content?: Record<string, MediaTypeObject>;
}

export interface OperationObject {
  readonly operationId?: string;
  readonly 'x-stability'?: string;
  readonly responses?: Record<string, ResponseObject>;
  readonly [key: string]: unknown;
}

export type PathItemObject = Partial<Record<(typeof HTTP_METHODS)[number], OperationObject>> & {
  readonly [key: string]: unknown;
};

/** The dereferenced document: no `$ref` left. */
export interface OpenApiDocument {
  readonly openapi: string;
  readonly info: {
    readonly title: string;
    readonly version: string;
    readonly description?: string;
  };
  readonly servers?: readonly { readonly url: string; readonly description?: string }[];
  readonly paths: Record<string, PathItemObject>;
  readonly components: {
    readonly schemas: Record<string, Schema>;
    readonly responses: Record<string, ResponseObject>;
    readonly headers?: Record<string, HeaderObject>;
    readonly [key: string]: unknown;
  };
  readonly [key: string]: unknown;
}

/**
 * Answers API Gateway gives itself, outside any operation (see `components/responses`):
 * where each can occur.
 */
const GATEWAY_RESPONSES = {
  /** The path is not in the document. */
  unknownPath: ['RouteNotFound', 'BadRequest'],
  /** The path is in the document, the method is not. */
  unknownMethod: ['MethodNotAllowed', 'BadRequest'],
  /** A documented operation: besides its own responses. */
  operation: ['RequestTooLarge', 'BadRequest', 'GatewayInternalError'],
} as const;

let documentPromise: Promise<OpenApiDocument> | undefined;

/** The document, dereferenced (shared: do not modify it). */
export function loadOpenApiDocument(): Promise<OpenApiDocument> {
  documentPromise ??= dereference(OPENAPI_PATH) as unknown as Promise<OpenApiDocument>;
  return documentPromise;
}

// Both are CommonJS: under `nodenext` the default import is `module.exports`, whose `default`
// is the class (or plugin) itself, at run time and in the types alike.
const Ajv2020 = ajv2020Module.default;
const addFormats = ajvFormatsModule.default;
// strict: false lets the document's own keywords (`example`, `x-stability`) through.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const compiled = new WeakMap<object, ValidateFunction>();

/** The validator of a schema of the dereferenced document, compiled on first use. */
function validatorFor(schema: Schema): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/** At most this many schema errors are listed for one body. */
const MAX_LISTED_ERRORS = 10;

function describeSchemaErrors(where: string, errors: readonly ErrorObject[]): string[] {
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map((e) => {
    const at = e.instancePath === '' ? '' : ` ${e.instancePath}`;
    const params = e.params as {
      additionalProperty?: string;
      allowedValue?: unknown;
      allowedValues?: unknown;
    };
    const detail =
      e.keyword === 'additionalProperties'
        ? ` (${params.additionalProperty})`
        : e.keyword === 'const'
          ? ` (${JSON.stringify(params.allowedValue)})`
          : e.keyword === 'enum'
            ? ` (${JSON.stringify(params.allowedValues)})`
            : '';
    return `${where}${at} ${e.message ?? e.keyword}${detail}`;
  });
  if (errors.length > MAX_LISTED_ERRORS) {
    listed.push(`${where}: ${errors.length - MAX_LISTED_ERRORS} more schema errors`);
  }
  return listed;
}

export type Validated<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * Where a method and path land in the document: `path` is a path template of the document
 * (`/store/orders/{orderId}`) or a stage-relative path (`/store/orders/42`, with or without a
 * query string or a trailing slash).
 */
export type DocumentMatch =
  | { kind: 'operation'; template: string; operation: OperationObject }
  | { kind: 'unknown-method'; template: string; allowed: string[] }
  | { kind: 'unknown-path' };

function segmentsMatch(template: string, path: string): boolean {
  const t = template.split('/');
  const p = path.split('/');
  return (
    t.length === p.length &&
    t.every((part, i) => (/^\{[^}]+\}$/.test(part) ? p[i] !== '' : part === p[i]))
  );
}

export function matchDocumentPath(
  document: OpenApiDocument,
  method: string,
  path: string,
): DocumentMatch {
  let clean = path.split(/[?#]/, 1)[0] ?? '';
  if (clean.length > 1 && clean.endsWith('/')) clean = clean.slice(0, -1);
  const templates = Object.keys(document.paths);
  // A concrete path wins over a templated one (OpenAPI's rule), then the fewest parameters.
  const template =
    templates.find((t) => t === clean) ??
    templates
      .filter((t) => segmentsMatch(t, clean))
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))[0];
  if (template === undefined) return { kind: 'unknown-path' };
  const item = document.paths[template] as PathItemObject;
  const operation = item[method.toLowerCase() as (typeof HTTP_METHODS)[number]];
  if (operation) return { kind: 'operation', template, operation };
  return {
    kind: 'unknown-method',
    template,
    allowed: HTTP_METHODS.filter((m) => item[m] !== undefined).map((m) => m.toUpperCase()),
  };
}

function headerLookup(headers: Record<string, string> | Headers): (name: string) => string | null {
  if (headers instanceof Headers) return (name) => headers.get(name);
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return (name) => lower.get(name.toLowerCase()) ?? null;
}

/** A header's text as the JSON value its schema describes (`"1"` → 1 for an integer). */
function headerValue(text: string, schema: Schema): unknown {
  const types = ([] as unknown[]).concat(schema.type ?? []);
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(text)) {
    return Number(text);
  }
  if (types.includes('boolean') && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

function mediaTypeOf(contentType: string): string {
  return (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
}

function mediaTypeMatches(documented: string, actual: string): boolean {
  const [type, subtype] = documented.toLowerCase().split('/');
  const [actualType, actualSubtype] = actual.split('/');
  return (type === '*' || type === actualType) && (subtype === '*' || subtype === actualSubtype);
}

function isJsonMediaType(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** A run of digits long enough to be past 2^53, where a JS number stops being exact. */
const LONG_DIGITS = /\d{16}/;

/**
 * Parses JSON, and lists every integer literal outside the int64 range (the widest integer
 * format of the document): after `JSON.parse` such a number is only an approximation, and the
 * schema could not tell 9223372036854775808 from 9223372036854775807.
 */
function parseJson(text: string): Validated<unknown> & { int64Problems?: string[] } {
  const int64Problems: string[] = [];
  const reviver: SourceReviver = (_key, value, context) => {
    const source = context?.source;
    if (typeof value === 'number' && source !== undefined && /^-?\d{16,}$/.test(source)) {
      const exact = BigInt(source);
      if (exact < INT64_MIN || exact > INT64_MAX) {
        int64Problems.push(`body: integer ${source} is outside the int64 range`);
      }
    }
    return value;
  };
  try {
    const value: unknown = LONG_DIGITS.test(text)
      ? JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1])
      : JSON.parse(text);
    return { ok: true, value, int64Problems };
  } catch (error) {
    return { ok: false, problem: `body is not valid JSON: ${(error as Error).message}` };
  }
}

/** The rate-limit headers of a function's answer (CONTRACT 4.2), in the document's spelling. */
export const RATE_LIMIT_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
] as const;

const WINDOW_SECONDS: Readonly<Record<string, number>> = { minute: 60, day: 86_400 };

/**
 * Whether the rate-limit headers of a response agree with each other (their formats are the
 * schemas' business): all five, none, or RateLimit-Policy alone (the counts are not known: the
 * counter store failed); `X-RateLimit-*` describe the first window of
 * `RateLimit`, which is the binding one (fewer remaining, the minute window on a tie); nothing
 * remains beyond the quota, and no window ends further away than its length.
 */
function rateLimitHeaderProblems(
  where: string,
  headers: (name: string) => string | null,
): string[] {
  const present = RATE_LIMIT_HEADERS.filter((name) => headers(name) !== null);
  if (present.length === 0) return [];
  if (present.length === 1 && present[0] === 'RateLimit-Policy') return [];
  if (present.length < RATE_LIMIT_HEADERS.length) {
    const missing = RATE_LIMIT_HEADERS.filter((name) => headers(name) === null);
    return [`${where}: rate-limit headers come together, but ${missing.join(', ')} missing`];
  }
  const quotas = new Map<string, number>();
  for (const [, window, q, w] of (headers('RateLimit-Policy') ?? '').matchAll(
    /"(\w+)";q=(\d+);w=(\d+)/g,
  )) {
    quotas.set(window as string, Number(q));
    if (Number(w) !== WINDOW_SECONDS[window as string]) {
      return [`${where}: RateLimit-Policy gives the ${window} window ${w} seconds`];
    }
  }
  const items = [...(headers('RateLimit') ?? '').matchAll(/"(\w+)";r=(\d+);t=(\d+)/g)].map(
    ([, window, r, t]) => ({ window: window as string, r: Number(r), t: Number(t) }),
  );
  const [binding, other] = items;
  if (!binding || !other || quotas.size !== 2) return []; // The schemas report the format.
  const problems: string[] = [];
  const say = (problem: string) => problems.push(`${where}: ${problem}`);
  if (String(quotas.get(binding.window)) !== headers('X-RateLimit-Limit')) {
    say(`X-RateLimit-Limit is not the ${binding.window} quota of RateLimit-Policy`);
  }
  if (String(binding.r) !== headers('X-RateLimit-Remaining')) {
    say(`X-RateLimit-Remaining is not the remaining count of the first RateLimit window`);
  }
  if (binding.r > other.r || (binding.r === other.r && binding.window !== 'minute')) {
    say(`RateLimit does not put the binding window first (fewer remaining, minute on a tie)`);
  }
  for (const item of items) {
    if (item.r > (quotas.get(item.window) ?? 0)) {
      say(`RateLimit: ${item.window} has ${item.r} remaining, beyond its quota`);
    }
    if (item.t > (WINDOW_SECONDS[item.window] ?? 0)) {
      say(`RateLimit: the ${item.window} window ends in ${item.t} s, beyond its length`);
    }
  }
  const reset = Number(headers('X-RateLimit-Reset'));
  if (reset % (WINDOW_SECONDS[binding.window] ?? 1) !== 0) {
    say(`X-RateLimit-Reset ${reset} is not the end of a ${binding.window} window`);
  }
  return problems;
}

/** Problems of a response against one documented response; empty when it conforms. */
function responseProblems(
  where: string,
  documented: ResponseObject,
  headers: (name: string) => string | null,
  body: string,
  /** A HEAD response: the documented body is never sent. */
  head: boolean,
): string[] {
  const problems: string[] = [];
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (name.toLowerCase() === 'content-type') continue; // Described by `content`, not here.
    const value = headers(name);
    if (value === null) {
      if (header.required) problems.push(`${where}: header ${name} is required but missing`);
      continue;
    }
    if (header.schema) {
      const validate = validatorFor(header.schema);
      if (!validate(headerValue(value, header.schema))) {
        problems.push(
          ...describeSchemaErrors(
            `${where}: header ${name} ${JSON.stringify(value)}`,
            validate.errors ?? [],
          ),
        );
      }
    }
  }
  const documentedHeaders = documented.headers ?? {};
  if (RATE_LIMIT_HEADERS.some((name) => name in documentedHeaders)) {
    problems.push(...rateLimitHeaderProblems(where, headers));
  }

  const content = documented.content;
  if (body.length === 0) {
    if (!head && content && Object.keys(content).length > 0) {
      problems.push(
        `${where}: a body (${Object.keys(content).join(', ')}) is documented, got none`,
      );
    }
    return problems;
  }
  if (!content || Object.keys(content).length === 0) {
    problems.push(`${where}: no body is documented, got ${body.length} characters`);
    return problems;
  }
  const contentType = headers('content-type');
  if (contentType === null) {
    problems.push(
      `${where}: Content-Type is missing (documented: ${Object.keys(content).join(', ')})`,
    );
    return problems;
  }
  const mediaType = mediaTypeOf(contentType);
  const documentedType = Object.keys(content).find((t) => mediaTypeMatches(t, mediaType));
  if (documentedType === undefined) {
    problems.push(
      `${where}: Content-Type ${contentType} is not documented (documented: ${Object.keys(content).join(', ')})`,
    );
    return problems;
  }
  const schema = content[documentedType]?.schema;
  if (!schema || !isJsonMediaType(mediaType)) return problems;
  const parsed = parseJson(body);
  if (!parsed.ok) {
    problems.push(`${where}: ${parsed.problem}`);
    return problems;
  }
  problems.push(...(parsed.int64Problems ?? []).map((p) => `${where}: ${p}`));
  const validate = validatorFor(schema);
  if (!validate(parsed.value)) {
    problems.push(...describeSchemaErrors(`${where}: body`, validate.errors ?? []));
  }
  return problems;
}

export interface ResponseToCheck {
  readonly method: string;
  /** A path template of the document or a stage-relative path (`/store/orders/42`). */
  readonly path: string;
  readonly status: number;
  readonly headers: Record<string, string> | Headers;
  readonly body: string;
}

/**
 * Human-readable problems of a response against the OpenAPI document; empty when it conforms.
 */
export async function openApiResponseErrors(input: ResponseToCheck): Promise<string[]> {
  const document = await loadOpenApiDocument();
  const method = input.method.toUpperCase();
  const match = matchDocumentPath(document, method, input.path);
  const headers = headerLookup(input.headers);
  const status = String(input.status);

  // The candidate documented responses for this status, best first.
  const candidates: { where: string; response: ResponseObject }[] = [];
  let context: string;
  let gatewayNames: readonly string[];
  if (match.kind === 'operation') {
    const { operation } = match;
    context = `${method} ${match.template} (${operation.operationId ?? 'no operationId'})`;
    const responses = operation.responses ?? {};
    const own =
      responses[status] ?? responses[`${status[0] ?? ''}XX`] ?? responses.default ?? undefined;
    if (own) candidates.push({ where: `${context} ${status}`, response: own });
    gatewayNames = GATEWAY_RESPONSES.operation;
  } else if (match.kind === 'unknown-method') {
    context = `${method} ${match.template} (no such operation; the path has ${match.allowed.join(', ')})`;
    gatewayNames = GATEWAY_RESPONSES.unknownMethod;
  } else {
    context = `${method} ${input.path} (no such path)`;
    gatewayNames = GATEWAY_RESPONSES.unknownPath;
  }
  // API Gateway's own answers carry no rate-limit header: an answer with one is a function's.
  const fromFunction = RATE_LIMIT_HEADERS.some((name) => headers(name) !== null);
  for (const name of fromFunction ? [] : gatewayNames) {
    const response = document.components.responses[name];
    if (response && responseStatus(response) === input.status) {
      candidates.push({ where: `${context} ${status} (components/responses/${name})`, response });
    }
  }

  if (candidates.length === 0) {
    return [`${context}: status ${status} is not documented`];
  }
  let best: string[] | undefined;
  for (const { where, response } of candidates) {
    const problems = responseProblems(where, response, headers, input.body, method === 'HEAD');
    if (problems.length === 0) {
      best = [];
      break;
    }
    best ??= problems;
  }
  const problems = best ?? [];
  // A 405 must name exactly the methods the document gives the path.
  const allow = headers('allow');
  if (match.kind === 'unknown-method' && input.status === 405 && allow !== null) {
    const listed = allow
      .split(',')
      .map((m) => m.trim().toUpperCase())
      .filter((m) => m !== '')
      .sort();
    if (listed.join(', ') !== [...match.allowed].sort().join(', ')) {
      problems.push(
        `${context} 405: Allow "${allow}" differs from the documented methods (${match.allowed.join(', ')})`,
      );
    }
  }
  return problems;
}

/**
 * The status a `components/responses` entry stands for: the `status` constant of its Error
 * schema (the document names these responses, not their status).
 */
function responseStatus(response: ResponseObject): number | undefined {
  for (const media of Object.values(response.content ?? {})) {
    const found = findConst(media.schema, 'status');
    if (typeof found === 'number') return found;
  }
  return undefined;
}

/** The `const` a schema (through `allOf`) gives one of its properties. */
export function findConst(schema: Schema | undefined, property: string): unknown {
  if (!schema) return undefined;
  const properties = schema.properties as Record<string, Schema> | undefined;
  const own = properties?.[property]?.const;
  if (own !== undefined) return own;
  for (const part of (schema.allOf as Schema[] | undefined) ?? []) {
    const found = findConst(part, property);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Fails the test, listing every problem, when the response does not conform to the document. */
export async function expectValidAgainstOpenApi(
  response: Response,
  body: string,
  method: string,
  path: string,
): Promise<void> {
  const problems = await openApiResponseErrors({
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

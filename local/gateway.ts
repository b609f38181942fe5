/**
 * An emulation of API Gateway (REST) in front of the real handlers, with the semantics that
 * matter to a client:
 *  - routing from the shared route table: unknown path → 404 ROUTE_NOT_FOUND before
 *    authentication; known path, other method → 405 METHOD_NOT_ALLOWED with `Allow`;
 *  - a TOKEN authorizer on `Authorization`: a missing header is refused without invoking it;
 *    `Unauthorized` → 401; another error → AUTHORIZER_CONFIGURATION_ERROR; Allow policies cached per token
 *    for the TTL, and checked against the method ARN like API Gateway does;
 *  - REST v1 proxy events with `requestContext.authorizer`;
 *  - buffered responses limited to 6 MB, streamed responses piped as they are produced;
 *  - gateway responses from the shared definitions, in the Error shape.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  gatewayAnswer,
  methodNotAllowedAnswer,
  type GatewayAnswer,
  type GatewayResponseDefinition,
  type GatewayResponseType,
} from '../lib/api/gateway-responses.ts';
import {
  API_STAGE,
  resolveRoute,
  type OperationId,
  type RouteDefinition,
  type RouteMatch,
} from '../lib/api/routes.ts';
import {
  createContext,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
  PayloadTooLargeError,
} from './lambda-runtime.ts';

const REGION = 'local';
const ACCOUNT_ID = '000000000000';
const API_ID = 'local';
/** API Gateway's integration timeout. */
const INTEGRATION_TIMEOUT_MS = 29_000;
/** API Gateway REST's request payload limit. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export interface GatewayOptions {
  readonly functions: Readonly<Record<OperationId, unknown>>;
  readonly authorizer: unknown;
  /** Authorizer result cache TTL; 0 turns the cache off. */
  readonly authorizerTtlSeconds: number;
  readonly integrationTimeoutMs?: number;
  /** One line per request; never carries a key. */
  readonly log?: (line: string) => void;
  /** The route table and gateway responses (default: the service's, as the stack deploys them). */
  readonly routes?: readonly RouteDefinition[];
  readonly gatewayResponses?: readonly GatewayResponseDefinition[];
  readonly now?: () => number;
}

interface AuthorizerResult {
  readonly principalId: string;
  readonly policyDocument: {
    Statement: { Effect: string; Action: string | string[]; Resource: string | string[] }[];
  };
  readonly context?: Record<string, string | number | boolean>;
}

type Authorization =
  { ok: true; result: AuthorizerResult } | { ok: false; answer: GatewayResponseType };

function isAuthorizerResult(value: unknown): value is AuthorizerResult {
  const r = value as AuthorizerResult | undefined;
  return (
    typeof r?.principalId === 'string' &&
    Array.isArray(r.policyDocument?.Statement) &&
    (r.context === undefined ||
      Object.values(r.context).every((v) => ['string', 'number', 'boolean'].includes(typeof v)))
  );
}

function wildcardMatch(pattern: string, value: string): boolean {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`).test(value);
}

/** Whether a policy allows the method ARN: an explicit Deny wins, then any Allow. */
function policyAllows(result: AuthorizerResult, methodArn: string): boolean {
  let allowed = false;
  for (const statement of result.policyDocument.Statement) {
    const actions = ([] as string[]).concat(statement.Action);
    const resources = ([] as string[]).concat(statement.Resource);
    if (!actions.some((a) => a === 'execute-api:Invoke' || a === 'execute-api:*' || a === '*'))
      continue;
    if (!resources.some((r) => wildcardMatch(r, methodArn))) continue;
    if (statement.Effect === 'Deny') return false;
    if (statement.Effect === 'Allow') allowed = true;
  }
  return allowed;
}

function headerValue(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(',') : value;
}

function rawHeaders(request: IncomingMessage): {
  single: Record<string, string>;
  multi: Record<string, string[]>;
} {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i] as string;
    const value = request.rawHeaders[i + 1] as string;
    single[name] = value;
    (multi[name] ??= []).push(value);
  }
  return { single, multi };
}

async function readBody(request: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) return 'too-large';
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function createGateway(options: GatewayOptions) {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { result: AuthorizerResult; expires: number }>();
  const answerOf = (type: GatewayResponseType) => gatewayAnswer(type, options.gatewayResponses);
  const integrationTimeoutMs = options.integrationTimeoutMs ?? INTEGRATION_TIMEOUT_MS;

  const methodArn = (match: RouteMatch, path: string): string =>
    `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${API_ID}/${API_STAGE}/${match.route.method}${path}`;

  async function authorize(token: string, arn: string): Promise<Authorization> {
    const cached = options.authorizerTtlSeconds > 0 ? cache.get(token) : undefined;
    let result = cached && cached.expires > now() ? cached.result : undefined;
    if (!result) {
      let output: unknown;
      try {
        output = await (options.authorizer as (e: unknown, c: unknown) => Promise<unknown>)(
          { type: 'TOKEN', authorizationToken: token, methodArn: arn },
          createContext('authorizer'),
        );
      } catch (error) {
        // As API Gateway: "Unauthorized" is a 401; any other error is a configuration error.
        return {
          ok: false,
          answer:
            (error as Error)?.message === 'Unauthorized'
              ? 'UNAUTHORIZED'
              : 'AUTHORIZER_CONFIGURATION_ERROR',
        };
      }
      if (!isAuthorizerResult(output))
        return { ok: false, answer: 'AUTHORIZER_CONFIGURATION_ERROR' };
      result = output;
      if (options.authorizerTtlSeconds > 0) {
        cache.set(token, { result, expires: now() + options.authorizerTtlSeconds * 1000 });
      }
    }
    return policyAllows(result, arn)
      ? { ok: true, result }
      : { ok: false, answer: 'ACCESS_DENIED' };
  }

  function proxyEvent(
    request: IncomingMessage,
    url: URL,
    match: RouteMatch,
    authorizer: AuthorizerResult,
    body: Buffer,
    requestId: string,
  ) {
    const { single, multi } = rawHeaders(request);
    const query: Record<string, string> = {};
    const multiQuery: Record<string, string[]> = {};
    for (const [name, value] of url.searchParams) {
      query[name] = value;
      (multiQuery[name] ??= []).push(value);
    }
    const stagePath = url.pathname.slice(API_STAGE.length + 1);
    const hasQuery = Object.keys(query).length > 0;
    const startedAt = now();
    return {
      resource: match.route.path,
      path: stagePath,
      httpMethod: match.route.method,
      headers: single,
      multiValueHeaders: multi,
      queryStringParameters: hasQuery ? query : null,
      multiValueQueryStringParameters: hasQuery ? multiQuery : null,
      pathParameters: Object.keys(match.pathParameters).length > 0 ? match.pathParameters : null,
      stageVariables: null,
      requestContext: {
        accountId: ACCOUNT_ID,
        apiId: API_ID,
        authorizer: {
          principalId: authorizer.principalId,
          integrationLatency: 0,
          ...Object.fromEntries(
            Object.entries(authorizer.context ?? {}).map(([k, v]) => [k, String(v)]),
          ),
        },
        domainName: single.Host ?? single.host ?? '127.0.0.1',
        httpMethod: match.route.method,
        identity: {
          sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
          userAgent: single['User-Agent'] ?? null,
        },
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        requestId,
        requestTime: new Date(startedAt).toUTCString(),
        requestTimeEpoch: startedAt,
        resourceId: API_ID,
        resourcePath: match.route.path,
        stage: API_STAGE,
      },
      body: body.length > 0 ? body.toString('utf8') : null,
      isBase64Encoded: false,
    };
  }

  function send(
    response: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: string,
  ): void {
    response.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
    response.end(body);
  }

  function sendAnswer(response: ServerResponse, answer: GatewayAnswer, requestId: string): number {
    send(
      response,
      answer.status,
      { ...answer.headers, 'x-amzn-RequestId': requestId },
      JSON.stringify(answer.body),
    );
    return answer.status;
  }

  async function withTimeout<T>(work: Promise<T>): Promise<T | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), integrationTimeoutMs);
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function integrate(
    response: ServerResponse,
    handler: unknown,
    functionName: string,
    event: unknown,
    requestId: string,
  ): Promise<number> {
    const context = createContext(functionName, integrationTimeoutMs);
    if (isStreamingHandler(handler)) {
      const started = await withTimeout(
        invokeStreaming(handler, event, context).catch(() => 'failed' as const),
      );
      if (started === 'timeout')
        return sendAnswer(response, answerOf('INTEGRATION_TIMEOUT'), requestId);
      if (started === 'failed')
        return sendAnswer(response, answerOf('INTEGRATION_FAILURE'), requestId);
      const status = started.prelude?.statusCode ?? 200;
      response.writeHead(status, {
        ...(started.prelude?.headers ?? {}),
        'x-amzn-RequestId': requestId,
      });
      // The status line goes out as soon as the function sent its prelude, as with API Gateway.
      response.flushHeaders();
      started.body.on('error', () => response.destroy());
      // A client that goes away stops the function too (else it would wait on back-pressure).
      response.on('close', () => {
        if (!response.writableFinished) started.abort(new Error('client closed the connection'));
      });
      started.body.pipe(response);
      // A failure after the status line went out can only cut the connection short, as in AWS.
      await started.done.catch(() => response.destroy());
      return status;
    }
    let result: unknown;
    try {
      result = await withTimeout(invokeBuffered(handler, event, context));
    } catch (error) {
      if (!(error instanceof PayloadTooLargeError))
        options.log?.(`function ${functionName} failed: ${(error as Error).message}`);
      return sendAnswer(response, answerOf('INTEGRATION_FAILURE'), requestId);
    }
    if (result === 'timeout')
      return sendAnswer(response, answerOf('INTEGRATION_TIMEOUT'), requestId);
    const proxy = result as {
      statusCode?: unknown;
      headers?: Record<string, string>;
      body?: unknown;
    };
    if (
      typeof proxy?.statusCode !== 'number' ||
      (proxy.body !== undefined && typeof proxy.body !== 'string')
    ) {
      return sendAnswer(response, answerOf('INTEGRATION_FAILURE'), requestId);
    }
    const headers = { ...(proxy.headers ?? {}), 'x-amzn-RequestId': requestId };
    send(response, proxy.statusCode, headers, proxy.body ?? '');
    return proxy.statusCode;
  }

  async function handle(
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<{ status: number; keyId?: string }> {
    const requestId = randomUUID();
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = request.method ?? 'GET';
    const stagePrefix = `/${API_STAGE}`;
    const inStage = url.pathname === stagePrefix || url.pathname.startsWith(`${stagePrefix}/`);
    const resolution = inStage
      ? resolveRoute(method, url.pathname.slice(stagePrefix.length) || '/', options.routes)
      : ({ kind: 'not-found' } as const);
    if (resolution.kind === 'not-found') {
      return {
        status: sendAnswer(response, answerOf('MISSING_AUTHENTICATION_TOKEN'), requestId),
      };
    }
    if (resolution.kind === 'method-not-allowed') {
      return { status: sendAnswer(response, methodNotAllowedAnswer(resolution.allow), requestId) };
    }
    const body = await readBody(request);
    if (body === 'too-large')
      return { status: sendAnswer(response, answerOf('REQUEST_TOO_LARGE'), requestId) };

    const token = headerValue(request, 'authorization');
    if (token === undefined || token.trim() === '') {
      return { status: sendAnswer(response, answerOf('UNAUTHORIZED'), requestId) };
    }
    const match = resolution.match;
    const arn = methodArn(match, url.pathname.slice(stagePrefix.length));
    const authorization = await authorize(token, arn);
    if (!authorization.ok)
      return { status: sendAnswer(response, answerOf(authorization.answer), requestId) };

    const event = proxyEvent(request, url, match, authorization.result, body, requestId);
    const handler = options.functions[match.route.operationId];
    const status = await integrate(response, handler, match.route.operationId, event, requestId);
    return { status, keyId: authorization.result.principalId };
  }

  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const started = now();
    let outcome: { status: number; keyId?: string } = { status: 500 };
    try {
      outcome = await handle(request, response);
    } catch (error) {
      options.log?.(`gateway error: ${(error as Error).message}`);
      if (!response.headersSent)
        outcome = { status: sendAnswer(response, answerOf('DEFAULT_5XX'), randomUUID()) };
      else response.destroy();
    }
    // The request log names the caller by key id, never by key.
    options.log?.(
      `${request.method} ${new URL(request.url ?? '/', 'http://localhost').pathname} ${outcome.status} ${now() - started}ms${outcome.keyId ? ` ${outcome.keyId}` : ''}`,
    );
  };
}

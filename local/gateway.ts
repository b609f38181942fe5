/**
 * An emulation of API Gateway (REST) in front of the real handlers, with the semantics that
 * matter to a client:
 *  - routing from the shared route table: unknown path → 404 ROUTE_NOT_FOUND before
 *    authentication; known path, other method → 405 METHOD_NOT_ALLOWED with `Allow`;
 *  - a TOKEN authorizer on `Authorization` (./token-authorizer.ts): a missing header, or one
 *    that fails the identity validation expression, is refused (401) without invoking it; a
 *    Deny policy → ACCESS_DENIED (401 here); policies cached per token for the TTL;
 *  - REST v1 proxy events with `requestContext.authorizer`, and `requestTimeEpoch` stamped when
 *    the request arrived (before its body, the key check or a wait for a container);
 *  - buffered responses limited to 6 MB; streamed responses passed through as the function
 *    writes them, its bytes untouched (content codings included), the status line sent as soon
 *    as the function's prelude is in;
 *  - gateway responses from the shared definitions, in the Error shape — also for requests
 *    Node's HTTP parser refuses (./http-edge.ts);
 *  - a client that goes away at any moment stops its invocation (queued or running);
 *  - one access log line per request, in the stack's own format (./access-log-context.ts).
 * Functions run through an Invoker: containers for `npm start`, in-process handlers in tests.
 */
import { randomUUID } from 'node:crypto';
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from '../lib/api/errors.ts';
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
  type RouteResolution,
} from '../lib/api/routes.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { BEARER_KEY_PATTERN, quotableInput } from '../lib/keys/api-key.ts';
import {
  accessLogLine,
  newExchange,
  requestTimeText,
  type Exchange,
} from './access-log-context.ts';
import {
  BODY_FAILURE_MESSAGES,
  edgeServerOptions,
  lacksRequiredHost,
  parserRefusal,
  rawAnswer,
  readBody,
  requestTarget,
  type RequestTarget,
} from './http-edge.ts';
import { inProcessInvoker, type Invoker } from './invoker.ts';
import { tokenAuthorizer, type AuthorizerResult } from './token-authorizer.ts';

const REGION = 'local';
const ACCOUNT_ID = '000000000000';
const API_ID = 'local';
const STAGE_PREFIX = `/${API_STAGE}`;
/** API Gateway's integration timeout for buffered (non-streamed) integrations. */
const INTEGRATION_TIMEOUT_MS = 29_000;

export interface GatewayOptions {
  /** How functions run (default: the given handlers, in this process). */
  readonly invoker?: Invoker;
  /** In-process handlers, when no invoker is given (tests). */
  readonly functions?: Partial<Record<OperationId, unknown>>;
  readonly authorizer?: unknown;
  /** Authorizer result cache TTL; 0 turns the cache off. */
  readonly authorizerTtlSeconds: number;
  readonly integrationTimeoutMs?: number;
  /** The TOKEN authorizer's identity validation expression (default: the service's). */
  readonly identityValidation?: RegExp;
  /**
   * The access log (one line per request, in lib/api/access-log.ts's format, which carries no
   * key) and the emulator's own notes (cold starts, failed functions).
   */
  readonly log?: (line: string) => void;
  /** The route table and gateway responses (default: the service's, as the stack deploys them). */
  readonly routes?: readonly RouteDefinition[];
  readonly gatewayResponses?: readonly GatewayResponseDefinition[];
  readonly now?: () => number;
}

/** A path without its stage prefix (`/v1/store/orders` → `/store/orders`). */
const stagePath = (path: string): string => path.slice(STAGE_PREFIX.length);

/** The method ARN a request's authorizer policy is checked against. */
const methodArn = (match: RouteMatch, path: string): string =>
  `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${API_ID}/${API_STAGE}/${match.route.method}${stagePath(path)}`;

/** Name → last value and name → every value, as a proxy event carries headers and the query. */
function byName(pairs: Iterable<readonly [string, string]>) {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [name, value] of pairs) {
    single[name] = value;
    (multi[name] ??= []).push(value);
  }
  return { single, multi };
}

/** The REST v1 proxy event of a request, as API Gateway hands it to the function. */
function proxyEvent(
  request: IncomingMessage,
  target: RequestTarget,
  match: RouteMatch,
  authorizer: AuthorizerResult,
  body: Buffer,
  { requestId, arrivedAt }: Exchange,
) {
  const raw = request.rawHeaders;
  const { single, multi } = byName(
    Array.from({ length: raw.length / 2 }, (_, i) => [raw[2 * i]!, raw[2 * i + 1]!] as const),
  );
  const query = byName(new URLSearchParams(target.query));
  const hasQuery = Object.keys(query.single).length > 0;
  return {
    resource: match.route.path,
    path: stagePath(target.path),
    httpMethod: match.route.method,
    headers: single,
    multiValueHeaders: multi,
    queryStringParameters: hasQuery ? query.single : null,
    multiValueQueryStringParameters: hasQuery ? query.multi : null,
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
      path: target.path,
      protocol: `HTTP/${request.httpVersion}`,
      requestId,
      // Stamped on arrival, as API Gateway does: the body, the key check and any wait for a
      // container are part of the request's time.
      requestTime: requestTimeText(arrivedAt),
      requestTimeEpoch: arrivedAt,
      resourceId: API_ID,
      resourcePath: match.route.path,
      stage: API_STAGE,
    },
    body: body.length > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
  };
}

export interface GatewayListener {
  (request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** For Node's `clientError`: a request its parser refused gets the Error object too. */
  clientError(error: NodeJS.ErrnoException, socket: Duplex): void;
  /** For Node's `connect`: CONNECT is routed like any method, never a tunnel. */
  connect(request: IncomingMessage, socket: Duplex): void;
}

export function createGateway(options: GatewayOptions): GatewayListener {
  const now = options.now ?? Date.now;
  const answerOf = (type: GatewayResponseType) => gatewayAnswer(type, options.gatewayResponses);
  const integrationTimeoutMs = options.integrationTimeoutMs ?? INTEGRATION_TIMEOUT_MS;
  const identityValidation = options.identityValidation ?? new RegExp(BEARER_KEY_PATTERN);
  const invoker =
    options.invoker ?? inProcessInvoker({ ...options.functions, authorizer: options.authorizer });

  /** How long a function may run before it answers: its own timeout, within API Gateway's. */
  const timeoutOf = (name: FunctionName, streaming: boolean): number => {
    const own = FUNCTIONS[name].timeoutSeconds * 1000;
    return streaming ? own : Math.min(own, integrationTimeoutMs);
  };
  const authorize = tokenAuthorizer({
    invoker,
    ttlSeconds: options.authorizerTtlSeconds,
    timeoutMs: timeoutOf('authorizer', false),
    now,
  });

  /** The route of a method on a path: only the stage's paths have one. */
  const route = (method: string, path: string): RouteResolution =>
    path === STAGE_PREFIX || path.startsWith(`${STAGE_PREFIX}/`)
      ? resolveRoute(method, stagePath(path) || '/', options.routes)
      : { kind: 'not-found' };

  const arrived = (method: string, protocol: string, sourceIp: string | undefined): Exchange =>
    newExchange(randomUUID(), now(), method, protocol, sourceIp);
  const accessLog = (exchange: Exchange): void => options.log?.(accessLogLine(exchange, now()));

  /**
   * A request's way through the gateway, in order: what HTTP requires (./http-edge.ts), the
   * route, the body, the authorizer (./token-authorizer.ts), the function and its answer.
   */
  async function handle(
    request: IncomingMessage,
    response: ServerResponse,
    exchange: Exchange,
    signal: AbortSignal,
  ): Promise<void> {
    const refuse = (type: GatewayResponseType, logged?: string): void =>
      sendAnswer(response, exchange, type, logged);
    // The edge: HTTP/1.1 without Host, a target that is not a path.
    if (lacksRequiredHost(request)) return refuse('DEFAULT_4XX', 'The request has no Host header.');
    const target = requestTarget(request.url ?? '');
    if (!target) return refuse('DEFAULT_4XX');

    // The route: an unknown path is refused before authentication; another method gets the 405
    // of the ANY mock.
    const resolution = route(request.method ?? 'GET', target.path);
    if (resolution.kind === 'not-found') return refuse('MISSING_AUTHENTICATION_TOKEN');
    if (resolution.kind === 'method-not-allowed') {
      return sendAnswer(response, exchange, methodNotAllowedAnswer(resolution.allow));
    }
    const { match } = resolution;
    exchange.resourcePath = match.route.path;

    // The body, whole, before anything is invoked.
    const body = await readBody(request);
    if (body === 'gone') return;
    if (body === 'too-large') return refuse('REQUEST_TOO_LARGE');
    if (body === 'stalled' || body === 'malformed') {
      // The connection cannot carry another request: the answer closes it.
      response.shouldKeepAlive = false;
      return refuse('DEFAULT_4XX', BODY_FAILURE_MESSAGES[body]);
    }

    // The authorizer: a token missing, or not shaped like a key, is refused without invoking it.
    const token = request.headers.authorization;
    if (token === undefined || !identityValidation.test(token)) return refuse('UNAUTHORIZED');
    const checked = now();
    const authorization = await authorize(token, methodArn(match, target.path));
    exchange.authorizerLatency = now() - checked;
    if (!authorization.ok) {
      exchange.principalId = authorization.principalId;
      return refuse(authorization.answer);
    }
    exchange.principalId = authorization.result.principalId;

    // The function, and its answer.
    const event = proxyEvent(request, target, match, authorization.result, body, exchange);
    await integrate(response, exchange, match.route, event, signal);
  }

  /** Invokes the route's function and answers with what it gave (or the gateway's error). */
  async function integrate(
    response: ServerResponse,
    exchange: Exchange,
    { operationId: name, streaming }: RouteDefinition,
    event: unknown,
    signal: AbortSignal,
  ): Promise<void> {
    const invoked = now();
    const invocation = await invoker.invoke(name, event, {
      signal,
      timeoutMs: timeoutOf(name, streaming),
    });
    exchange.integrationLatency = now() - invoked;
    if (signal.aborted) {
      if (invocation.kind === 'streaming') invocation.body.destroy();
      return;
    }
    switch (invocation.kind) {
      case 'timed-out':
        // API Gateway gave up first (its 29 s), or the function ran out of its own time.
        if (!streaming && FUNCTIONS[name].timeoutSeconds * 1000 > integrationTimeoutMs) {
          return sendAnswer(response, exchange, 'INTEGRATION_TIMEOUT');
        }
        break;
      case 'failed':
        options.log?.(`function ${name} failed: ${quotableInput(invocation.message, 200)}`);
        break;
      case 'streaming': {
        const status = invocation.prelude?.statusCode ?? 200;
        exchange.status = status;
        exchange.integrationStatus = status;
        response.writeHead(status, {
          ...invocation.prelude?.headers,
          'x-amzn-RequestId': exchange.requestId,
        });
        // The status line goes out as soon as the function sent its prelude, as with API Gateway.
        response.flushHeaders();
        invocation.body.on('data', (chunk: Uint8Array) => {
          exchange.responseLength += chunk.byteLength;
        });
        invocation.body.on('error', () => response.destroy());
        invocation.body.pipe(response);
        // A failure after the status line went out can only cut the connection short, as in AWS.
        await invocation.done.catch(() => response.destroy());
        return;
      }
      case 'returned': {
        const proxy = invocation.result as {
          statusCode?: unknown;
          headers?: Record<string, string>;
          body?: unknown;
        };
        if (
          typeof proxy?.statusCode !== 'number' ||
          (proxy.body !== undefined && typeof proxy.body !== 'string')
        ) {
          break; // not a proxy integration's answer
        }
        exchange.integrationStatus = proxy.statusCode;
        const headers = { ...proxy.headers, 'x-amzn-RequestId': exchange.requestId };
        send(response, exchange, proxy.statusCode, headers, proxy.body ?? '');
        return;
      }
    }
    // What the function gave is no answer: too large, a failure, its own timeout, another shape.
    sendAnswer(response, exchange, 'INTEGRATION_FAILURE');
  }

  function send(
    response: ServerResponse,
    exchange: Exchange,
    status: number,
    headers: Record<string, string>,
    body: string,
  ): void {
    response.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
    response.end(body);
    exchange.status = status;
    exchange.responseLength = response.req.method === 'HEAD' ? 0 : Buffer.byteLength(body);
  }

  /**
   * A gateway response (logged as what it was) or the 405 of the ANY mock: on the response, or
   * straight on the socket of a request that has none (refused by the parser, CONNECT), which
   * then closes.
   */
  function sendAnswer(
    to: ServerResponse | Duplex,
    exchange: Exchange,
    typeOrAnswer: GatewayResponseType | GatewayAnswer,
    logged?: string,
  ): void {
    const answer = typeof typeOrAnswer === 'string' ? answerOf(typeOrAnswer) : typeOrAnswer;
    if (typeof typeOrAnswer === 'string') {
      exchange.errorType = typeOrAnswer;
      exchange.errorMessage = logged ?? answer.body.message;
    }
    if (to instanceof ServerResponse) {
      const headers = { ...answer.headers, 'x-amzn-RequestId': exchange.requestId };
      send(to, exchange, answer.status, headers, JSON.stringify(answer.body));
      return;
    }
    exchange.status = answer.status;
    exchange.responseLength = rawAnswer(to, answer, exchange.requestId, exchange.method);
  }

  const listener = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const protocol = `HTTP/${request.httpVersion}`;
    const exchange = arrived(request.method ?? '-', protocol, request.socket.remoteAddress);
    // Watched from the first moment: a client may leave while the request is still queued.
    const left = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) left.abort(new Error('the client went away'));
    });
    try {
      await handle(request, response, exchange, left.signal);
    } catch (error) {
      options.log?.(`gateway error: ${quotableInput((error as Error).message, 200)}`);
      if (!response.headersSent) sendAnswer(response, exchange, 'DEFAULT_5XX');
      else response.destroy();
    }
    if (left.signal.aborted) {
      // Nobody is left to answer; what was sent (if anything) stays as it was.
      exchange.errorMessage = 'The client went away: its invocation was stopped.';
    }
    accessLog(exchange);
  };

  const clientError = (error: NodeJS.ErrnoException, socket: Duplex): void => {
    const refusal = parserRefusal(error, socket);
    if (!refusal) return;
    const sourceIp = (socket as { remoteAddress?: string }).remoteAddress;
    const exchange = arrived(refusal.method, '-', sourceIp);
    sendAnswer(socket, exchange, refusal.type, refusal.message);
    accessLog(exchange);
  };

  const connect = (request: IncomingMessage, socket: Duplex): void => {
    const protocol = `HTTP/${request.httpVersion}`;
    const exchange = arrived('CONNECT', protocol, request.socket.remoteAddress);
    const target = requestTarget(request.url ?? '');
    const resolution = target && route('CONNECT', target.path);
    if (resolution?.kind === 'method-not-allowed') {
      sendAnswer(socket, exchange, methodNotAllowedAnswer(resolution.allow));
    } else {
      sendAnswer(socket, exchange, target ? 'MISSING_AUTHENTICATION_TOKEN' : 'DEFAULT_4XX');
    }
    accessLog(exchange);
  };

  return Object.assign(listener, { clientError, connect });
}

/**
 * An HTTP server in front of the gateway `current()` gives (503 while there is none yet, as the
 * local API starts), with API Gateway's limits (./http-edge.ts), and every request Node's parser
 * refuses answered with the Error object, as API Gateway answers them.
 */
export function createGatewayServer(
  current: () => GatewayListener | undefined,
  options: { readonly requestReadTimeoutMs?: number } = {},
): Server {
  const starting = {
    ...gatewayAnswer('AUTHORIZER_FAILURE'),
    body: errorBody('SERVICE_UNAVAILABLE', 'The local API is starting.'),
  };
  const server = createServer(
    edgeServerOptions(options.requestReadTimeoutMs),
    (request, response) => {
      const gateway = current();
      if (gateway) void gateway(request, response);
      else response.writeHead(starting.status, starting.headers).end(JSON.stringify(starting.body));
    },
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const gateway = current();
    if (gateway) gateway.clientError(error, socket);
    else socket.destroy();
  });
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const gateway = current();
    if (gateway) gateway.connect(request, socket);
    else socket.destroy();
  });
  return server;
}

/**
 * An emulation of API Gateway (REST) in front of the real handlers, with the semantics that
 * matter to a client:
 *  - routing from the shared route table, per stage (./stage-routes.ts): unknown path → 404
 *    ROUTE_NOT_FOUND before authentication; known path, other method → 405 METHOD_NOT_ALLOWED
 *    with `Allow`;
 *  - a TOKEN authorizer on `Authorization` (./token-authorizer.ts): a missing header, or one
 *    that fails the identity validation expression, is refused (401) without invoking it; a
 *    Deny policy → ACCESS_DENIED (401 here); policies cached per stage and token for the TTL;
 *  - REST v1 proxy events with `requestContext.authorizer` (./proxy-event.ts), and
 *    `requestTimeEpoch` stamped when the request arrived (before its body, the key check or a
 *    wait for a container);
 *  - buffered responses limited to 6 MB; streamed responses passed through as the function
 *    writes them, its bytes untouched (content codings included), the status line sent as soon
 *    as the function's prelude is in (./integration.ts);
 *  - gateway responses from the shared definitions, in the Error shape (./gateway-answers.ts) —
 *    also for requests Node's HTTP parser refuses (./http-edge.ts);
 *  - a client that goes away at any moment stops its invocation (queued or running);
 *  - a stage throttle, when given (./stage-throttle.ts: a token bucket per stage and method);
 *  - one access log line per request, in the stack's own format (./access-log-context.ts),
 *    written once its connection is done with it, naming who cut an answer short: the client
 *    that left, or the service whose stream failed after its status line.
 * Functions run through an Invoker: containers for `npm start`, in-process handlers in tests.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from '../lib/api/errors.ts';
import {
  gatewayAnswer,
  methodNotAllowedAnswer,
  type GatewayResponseDefinition,
  type GatewayResponseType,
} from '../lib/api/gateway-responses.ts';
import { STAGE_ROUTES, type OperationId } from '../lib/api/routes.ts';
import type { FunctionName } from '../lib/functions.ts';
import { BEARER_KEY_PATTERN, quotableInput } from '../lib/keys/api-key.ts';
import { accessLogLine, cutShort, newExchange, type Exchange } from './access-log-context.ts';
import { sendGatewayAnswer, sendGatewayResponse } from './gateway-answers.ts';
import {
  BODY_FAILURE_MESSAGES,
  edgeServerOptions,
  lacksRequiredHost,
  parserRefusal,
  readBody,
  requestTarget,
} from './http-edge.ts';
import { answerTimeoutMs, integrate, INTEGRATION_TIMEOUT_MS } from './integration.ts';
import { inProcessInvoker, type Invoker } from './invoker.ts';
import { methodArn, proxyEvent } from './proxy-event.ts';
import { routeRequest, type RoutedRequest, type StageRoutes } from './stage-routes.ts';
import { stageThrottle, type StageThrottle, type ThrottleGate } from './stage-throttle.ts';
import { tokenAuthorizer, type Authorization } from './token-authorizer.ts';

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
  /** The stages and their route tables (default: the service's, as the stack deploys them). */
  readonly stages?: StageRoutes;
  /** The gateway responses (default: the service's, as the stack deploys them). */
  readonly gatewayResponses?: readonly GatewayResponseDefinition[];
  /** Each function's own timeout in seconds, where not lib/functions.ts's (a stage as synthesized). */
  readonly timeouts?: Partial<Record<FunctionName, number>>;
  /** Each stage's throttle (none by default: the local API's own stages are not throttled). */
  readonly throttles?: Readonly<Record<string, StageThrottle>>;
  /** Each stage's access log format (default: the service's, lib/api/access-log.ts). */
  readonly accessLogFormats?: Readonly<Record<string, string>>;
  readonly now?: () => number;
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
  const stages = options.stages ?? STAGE_ROUTES;
  const integrationTimeoutMs = options.integrationTimeoutMs ?? INTEGRATION_TIMEOUT_MS;
  const identityValidation = options.identityValidation ?? new RegExp(BEARER_KEY_PATTERN);
  const invoker =
    options.invoker ?? inProcessInvoker({ ...options.functions, authorizer: options.authorizer });
  const timeouts = options.timeouts ?? {};
  const integration = { invoker, integrationTimeoutMs, timeouts, now, log: options.log };
  const authorize = tokenAuthorizer({
    invoker,
    ttlSeconds: options.authorizerTtlSeconds,
    timeoutMs: answerTimeoutMs('authorizer', false, integrationTimeoutMs, timeouts.authorizer),
    now,
  });
  const throttles = new Map<string, ThrottleGate>(
    Object.entries(options.throttles ?? {}).map(([stage, t]) => [stage, stageThrottle(t)]),
  );

  const refuse = (
    to: ServerResponse | Duplex,
    exchange: Exchange,
    type: GatewayResponseType,
    logged?: string,
  ): void => sendGatewayResponse(to, exchange, type, options.gatewayResponses, logged);
  const arrived = (method: string, protocol: string, sourceIp: string | undefined): Exchange =>
    newExchange(randomUUID(), now(), method, protocol, sourceIp);
  const accessLog = (exchange: Exchange): void =>
    options.log?.(accessLogLine(exchange, now(), options.accessLogFormats?.[exchange.stage ?? '']));

  /**
   * The authorizer's verdict on the request's token (its answer cached: ./token-authorizer.ts); a
   * token missing, or not shaped like a key, is refused without invoking it.
   */
  async function authorizeRequest(
    request: IncomingMessage,
    routed: RoutedRequest,
    exchange: Exchange,
  ): Promise<Authorization> {
    const token = request.headers.authorization;
    if (token === undefined || !identityValidation.test(token)) {
      return { ok: false, answer: 'UNAUTHORIZED' };
    }
    const checked = now();
    const authorization = await authorize(token, methodArn(routed), routed.stage);
    exchange.authorizerLatency = now() - checked;
    exchange.principalId = authorization.ok
      ? authorization.result.principalId
      : authorization.principalId;
    return authorization;
  }

  /**
   * A request's way through the gateway, in order: what HTTP requires (./http-edge.ts), the
   * route, the body, the authorizer, the function and its answer.
   */
  async function handle(
    request: IncomingMessage,
    response: ServerResponse,
    exchange: Exchange,
    signal: AbortSignal,
  ): Promise<void> {
    // The edge: HTTP/1.1 without Host, a target that is not a path.
    if (lacksRequiredHost(request)) {
      return refuse(response, exchange, 'DEFAULT_4XX', 'The request has no Host header.');
    }
    const target = requestTarget(request.url ?? '');
    if (!target) return refuse(response, exchange, 'DEFAULT_4XX');

    // The route: an unknown path is refused before authentication; another method gets the 405
    // of the ANY mock.
    const resolution = routeRequest(request.method ?? 'GET', target.path, stages);
    if (resolution.kind === 'not-found') {
      return refuse(response, exchange, 'MISSING_AUTHENTICATION_TOKEN');
    }
    if (resolution.kind === 'method-not-allowed') {
      return sendGatewayAnswer(response, exchange, methodNotAllowedAnswer(resolution.allow));
    }
    const { routed } = resolution;
    exchange.stage = routed.stage;
    exchange.resourcePath = routed.route.path;

    // The stage's throttle, per method, before anything else runs.
    const throttle = throttles.get(routed.stage);
    if (throttle && !throttle(`${routed.route.method} ${routed.route.path}`, now())) {
      return refuse(response, exchange, 'THROTTLED');
    }

    // The body, whole, before anything is invoked.
    const body = await readBody(request);
    if (body === 'gone') return;
    if (body === 'too-large') return refuse(response, exchange, 'REQUEST_TOO_LARGE');
    if (body === 'stalled' || body === 'malformed') {
      // The connection cannot carry another request: the answer closes it.
      response.shouldKeepAlive = false;
      return refuse(response, exchange, 'DEFAULT_4XX', BODY_FAILURE_MESSAGES[body]);
    }

    // The authorizer.
    const authorization = await authorizeRequest(request, routed, exchange);
    if (!authorization.ok) return refuse(response, exchange, authorization.answer);

    // The function, and its answer (or the gateway's, when it gave none).
    const event = proxyEvent(request, target, routed, authorization.result, body, exchange);
    const noAnswer = await integrate(response, exchange, routed.route, event, signal, integration);
    if (noAnswer) refuse(response, exchange, noAnswer);
  }

  /**
   * A request from its arrival to its access log line, written once its connection is done with
   * it: its answer out whole, or cut short (by the client, or by the service).
   */
  const listener = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const protocol = `HTTP/${request.httpVersion}`;
    const exchange = arrived(request.method ?? '-', protocol, request.socket.remoteAddress);
    const { left, closed } = watchForDeparture(response, exchange);
    try {
      await handle(request, response, exchange, left);
    } catch (error) {
      options.log?.(`gateway error: ${quotableInput((error as Error).message, 200)}`);
      if (!response.headersSent) {
        refuse(response, exchange, 'DEFAULT_5XX');
      } else {
        cutShort(exchange, 'service');
        response.destroy();
      }
    }
    await closed;
    accessLog(exchange);
  };

  const clientError = (error: NodeJS.ErrnoException, socket: Duplex): void => {
    const refusal = parserRefusal(error, socket);
    if (!refusal) return;
    const sourceIp = (socket as { remoteAddress?: string }).remoteAddress;
    const exchange = arrived(refusal.method, '-', sourceIp);
    refuse(socket, exchange, refusal.type, refusal.message);
    accessLog(exchange);
  };

  const connect = (request: IncomingMessage, socket: Duplex): void => {
    const protocol = `HTTP/${request.httpVersion}`;
    const exchange = arrived('CONNECT', protocol, request.socket.remoteAddress);
    const target = requestTarget(request.url ?? '');
    const resolution = target && routeRequest('CONNECT', target.path, stages);
    if (resolution?.kind === 'method-not-allowed') {
      sendGatewayAnswer(socket, exchange, methodNotAllowedAnswer(resolution.allow));
    } else {
      refuse(socket, exchange, target ? 'MISSING_AUTHENTICATION_TOKEN' : 'DEFAULT_4XX');
    }
    accessLog(exchange);
  };

  return Object.assign(listener, { clientError, connect });
}

/**
 * Watches a response from the first moment (a client may leave while its request is still
 * queued): its connection closing before the answer went out whole is the client's leaving —
 * unless the service cut it first — which stops the invocation (`left`). `closed` settles when
 * the connection is done with the response: the answer out whole, or cut short.
 */
function watchForDeparture(
  response: ServerResponse,
  exchange: Exchange,
): { left: AbortSignal; closed: Promise<void> } {
  const departure = new AbortController();
  const closed = new Promise<void>((resolve) => {
    response.once('close', () => {
      if (!response.writableFinished && cutShort(exchange, 'client')) {
        departure.abort(new Error('the client went away'));
      }
      resolve();
    });
  });
  return { left: departure.signal, closed };
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

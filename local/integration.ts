/**
 * The emulator's integration step (./gateway.ts): the route's function invoked on the proxy event
 * through an Invoker (./invoker.ts), and what it gave passed on to the client — a buffered answer
 * whole (./gateway-answers.ts), a stream as the function writes it — or, when it gave nothing API
 * Gateway could pass on, the gateway response to give instead.
 */
import type { ServerResponse } from 'node:http';
import type { RouteDefinition } from '../lib/api/routes.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { quotableInput } from '../lib/keys/api-key.ts';
import { cutShort, type Exchange } from './access-log-context.ts';
import { sendWhole } from './gateway-answers.ts';
import type { Invocation, Invoker } from './invoker.ts';

/** API Gateway's integration timeout for buffered (non-streamed) integrations. */
export const INTEGRATION_TIMEOUT_MS = 29_000;

/**
 * How long a function may run before it answers: its own timeout (`ownSeconds`, else the one
 * lib/functions.ts gives it), within API Gateway's.
 */
export function answerTimeoutMs(
  name: FunctionName,
  streaming: boolean,
  integrationTimeoutMs: number = INTEGRATION_TIMEOUT_MS,
  ownSeconds: number = FUNCTIONS[name].timeoutSeconds,
): number {
  const own = ownSeconds * 1000;
  return streaming ? own : Math.min(own, integrationTimeoutMs);
}

/** A proxy integration's answer, as a function returns it. */
export interface ProxyAnswer {
  readonly statusCode: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/** What a buffered function returned, if it is a proxy integration's answer. */
export function proxyAnswer(result: unknown): ProxyAnswer | undefined {
  const proxy = result as { statusCode?: unknown; body?: unknown } | null | undefined;
  if (typeof proxy?.statusCode !== 'number') return undefined;
  if (proxy.body !== undefined && typeof proxy.body !== 'string') return undefined;
  return proxy as ProxyAnswer;
}

export interface IntegrationSettings {
  readonly invoker: Invoker;
  /** API Gateway's integration timeout (INTEGRATION_TIMEOUT_MS unless a test shortens it). */
  readonly integrationTimeoutMs: number;
  /** Each function's own timeout in seconds, where not lib/functions.ts's (a stage as synthesized). */
  readonly timeouts?: Partial<Record<FunctionName, number>>;
  readonly now: () => number;
  /** The emulator's own notes (a failed function). */
  readonly log?: (line: string) => void;
}

/** The gateway response for an integration that gave no answer API Gateway could pass on. */
export type NoAnswer = 'INTEGRATION_TIMEOUT' | 'INTEGRATION_FAILURE';

/**
 * Invokes the route's function and passes its answer on. Resolves with the gateway response to
 * give instead when it gave none (too large, a failure, a timeout, another shape); with nothing
 * when its answer went out, or when the client went away (`signal`) and nobody is left to answer.
 */
export async function integrate(
  response: ServerResponse,
  exchange: Exchange,
  { operationId: name, streaming }: RouteDefinition,
  event: unknown,
  signal: AbortSignal,
  settings: IntegrationSettings,
): Promise<NoAnswer | undefined> {
  const invoked = settings.now();
  const ownSeconds = settings.timeouts?.[name] ?? FUNCTIONS[name].timeoutSeconds;
  const invocation = await settings.invoker.invoke(name, event, {
    signal,
    timeoutMs: answerTimeoutMs(name, streaming, settings.integrationTimeoutMs, ownSeconds),
  });
  exchange.integrationLatency = settings.now() - invoked;
  if (signal.aborted) {
    if (invocation.kind === 'streaming') invocation.body.destroy();
    return undefined;
  }
  switch (invocation.kind) {
    case 'streaming':
      await passStream(response, exchange, name, invocation, settings.log);
      return undefined;
    case 'returned': {
      const answer = proxyAnswer(invocation.result);
      if (!answer) return 'INTEGRATION_FAILURE';
      exchange.integrationStatus = answer.statusCode;
      sendWhole(response, exchange, answer.statusCode, answer.headers, answer.body ?? '');
      return undefined;
    }
    case 'timed-out': {
      // API Gateway gave up first (its 29 s), or the function ran out of its own time.
      const gatewayGaveUp = ownSeconds * 1000 > settings.integrationTimeoutMs;
      return !streaming && gatewayGaveUp ? 'INTEGRATION_TIMEOUT' : 'INTEGRATION_FAILURE';
    }
    case 'failed':
      settings.log?.(`function ${name} failed: ${quotableInput(invocation.message, 200)}`);
      return 'INTEGRATION_FAILURE';
    case 'too-large':
      return 'INTEGRATION_FAILURE';
  }
}

/**
 * A streamed answer passed through as the function writes it, its bytes untouched: the status
 * line as soon as the function's prelude is in, as with API Gateway. A failure after the status
 * line (the function's, or its time running out) can only cut the connection short, as in AWS:
 * the exchange records the cut as the service's — unless the client had left first, which is
 * what stopped the function — and the emulator notes why.
 */
async function passStream(
  response: ServerResponse,
  exchange: Exchange,
  name: FunctionName,
  invocation: Extract<Invocation, { kind: 'streaming' }>,
  log: ((line: string) => void) | undefined,
): Promise<void> {
  const status = invocation.prelude?.statusCode ?? 200;
  exchange.status = status;
  exchange.integrationStatus = status;
  response.writeHead(status, {
    ...invocation.prelude?.headers,
    'x-amzn-RequestId': exchange.requestId,
  });
  response.flushHeaders();
  const cut = (error: unknown): void => {
    if (cutShort(exchange, 'service')) {
      const reason = error instanceof Error ? error.message : String(error);
      log?.(`function ${name} failed after its status line: ${quotableInput(reason, 200)}`);
    }
    response.destroy();
  };
  invocation.body.on('data', (chunk: Uint8Array) => {
    exchange.responseLength += chunk.byteLength;
  });
  invocation.body.on('error', cut);
  invocation.body.pipe(response);
  await invocation.done.catch(cut);
}

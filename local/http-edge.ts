/**
 * The HTTP edge cases of the local API, kept apart from the API Gateway emulation proper
 * (./gateway.ts): what the emulator does with requests that never arrive whole, that Node's
 * parser refuses, that lack what HTTP requires or whose target is not a path — each answered in
 * the Error shape within the time API Gateway would hold the request, or closed where HTTP
 * allows nothing else.
 *
 * How long a request may take to arrive: AWS documents no timeout for reading a REST API request,
 * but API Gateway has the whole request (a proxy integration hands the body over as one string)
 * before it invokes anything, and the longest it documents waiting on any part of a request is
 * its integration timeout, 29 s ("Quotas for configuring and running a REST API": 50 ms to 29 s).
 * So a request whose head or body has not arrived in full 29 s after it began is answered 400
 * and its connection closed: Node's own defaults (a 5-minute request timeout, checked every 30 s)
 * would hold the connection for over five minutes and then close it without a word.
 */
import {
  STATUS_CODES,
  type IncomingMessage,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayAnswer } from '../lib/api/gateway-responses.ts';

/** The longest the emulator waits for a request's head and body to arrive (see above). */
export const REQUEST_READ_TIMEOUT_MS = 29_000;

/** API Gateway REST's request payload limit. */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

/** API Gateway REST's limit on the request's headers (names, values, line ends). */
export const MAX_HEADER_BYTES = 10_240;

/** Node's server options that make these limits hold, checked every second. */
export function edgeServerOptions(readTimeoutMs: number = REQUEST_READ_TIMEOUT_MS): ServerOptions {
  return {
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: readTimeoutMs,
    requestTimeout: readTimeoutMs,
    connectionsCheckingInterval: 1_000,
    // A request without Host is answered by the gateway, in the Error shape (below), not by
    // Node's bare 400.
    requireHostHeader: false,
  };
}

/** Why a request's body did not arrive: each is answered 400, then the connection closes. */
export const BODY_FAILURE_MESSAGES = {
  stalled: 'The request did not arrive in full in time.',
  malformed: 'The request body is malformed.',
} as const;
export type BodyFailure = keyof typeof BODY_FAILURE_MESSAGES;

/**
 * The body readers in progress, by socket: a parser error or a timeout that Node reports on the
 * socket (`clientError`) while a request's body is being read ends that read, so that the
 * request gets its answer instead of waiting for bytes that will never be parsed.
 */
const bodyReaders = new WeakMap<Duplex, (failure: BodyFailure) => void>();

/**
 * The request's body: all of it, or why not — over API Gateway's payload limit, or not
 * arriving (a stall, a malformed chunked encoding: see parserRefusal), or a client that left.
 */
export async function readBody(
  request: IncomingMessage,
): Promise<Buffer | 'too-large' | 'gone' | BodyFailure> {
  const socket = request.socket;
  const failure = Promise.withResolvers<BodyFailure>();
  bodyReaders.set(socket, failure.resolve);
  const read = (async (): Promise<Buffer | 'too-large' | 'gone'> => {
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of request) {
        size += (chunk as Buffer).length;
        if (size > MAX_REQUEST_BYTES) return 'too-large';
        chunks.push(chunk as Buffer);
      }
    } catch {
      return 'gone';
    }
    return Buffer.concat(chunks);
  })();
  try {
    return await Promise.race([read, failure.promise]);
  } finally {
    bodyReaders.delete(socket);
  }
}

/** Whether an HTTP/1.1 request lacks the Host header RFC 9112 §3.2 requires (answered 400). */
export function lacksRequiredHost(request: IncomingMessage): boolean {
  return request.headers.host === undefined && request.httpVersion !== '1.0';
}

export interface RequestTarget {
  readonly path: string;
  readonly query: string;
}

/**
 * The path and query of a request target in origin form (`/v1/x?y`) or absolute form
 * (`http://host/v1/x?y`), taken apart as text: nothing a client sends can make it throw.
 * Undefined for any other form (authority form `host:443`, asterisk `*`).
 */
export function requestTarget(raw: string): RequestTarget | undefined {
  let rest = raw;
  const absolute = /^https?:\/\/([^/?#]*)/i.exec(raw);
  if (absolute) {
    // host[:port], the port at most 65535; an IPv6 literal in brackets.
    const authority = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/.exec(
      absolute[1] ?? '',
    );
    if (!authority || Number(authority[1] ?? 0) > 65_535) return undefined;
    rest = raw.slice(absolute[0].length) || '/';
  }
  if (!rest.startsWith('/')) return undefined;
  // The path runs to the first `?` or `#`, the query from that `?` to the fragment.
  const [, path = '', query = ''] = /^([^?#]*)(?:\?([^#]*))?/.exec(rest)!;
  return { path, query };
}

/** The method of the request a refused packet starts with, as far as it can be read. */
export function methodOfPacket(packet: unknown): string | undefined {
  if (!Buffer.isBuffer(packet)) return undefined;
  return /^([A-Z]+) /.exec(packet.toString('latin1', 0, 16))?.[1];
}

/** A request Node's parser refused, as the gateway answers and logs (`message`) it. */
export interface ParserRefusal {
  readonly method: string;
  readonly type: 'REQUEST_TOO_LARGE' | 'DEFAULT_4XX';
  readonly message: string;
}

/**
 * What to answer to a `clientError` of Node's HTTP server — or nothing, where nobody needs an
 * answer from here (each case below), after taking care of the connection.
 */
export function parserRefusal(
  error: NodeJS.ErrnoException,
  socket: Duplex & { bytesRead?: number },
): ParserRefusal | undefined {
  // Nobody to answer: a connection reset, one that cannot be written to, or one that never sent
  // a byte (closed by the request timeout).
  if (!socket.writable || error.code === 'ECONNRESET' || socket.bytesRead === 0) {
    socket.destroy();
    return undefined;
  }
  // A request whose body is being read: the stall or the malformed body ends that read, and
  // the request is answered (400) by its own listener.
  const failBodyRead = bodyReaders.get(socket);
  if (failBodyRead) {
    failBodyRead(error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'stalled' : 'malformed');
    return undefined;
  }
  // Garbage after a request whose answer is still going out: that answer ends whole, then
  // the connection closes (as Node itself does).
  const inFlight = (socket as { _httpMessage?: ServerResponse })._httpMessage;
  if (inFlight && !inFlight.writableFinished) {
    inFlight.once('finish', () => socket.end());
    inFlight.once('close', () => socket.destroy());
    return undefined;
  }
  return {
    method: methodOfPacket((error as { rawPacket?: unknown }).rawPacket) ?? '-',
    type: error.code === 'HPE_HEADER_OVERFLOW' ? 'REQUEST_TOO_LARGE' : 'DEFAULT_4XX',
    message:
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? BODY_FAILURE_MESSAGES.stalled
        : `Refused by the HTTP parser: ${error.code ?? 'malformed request'}.`,
  };
}

/**
 * An HTTP/1.1 answer written straight to a socket (for requests the parser refused), closing
 * the connection; no body for a HEAD request. Returns the length of the body sent.
 */
export function rawAnswer(
  socket: Duplex,
  answer: GatewayAnswer,
  requestId: string,
  method: string,
): number {
  const body = JSON.stringify(answer.body);
  const head = [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}`,
    ...Object.entries({
      ...answer.headers,
      'Content-Length': String(Buffer.byteLength(body)),
      'x-amzn-RequestId': requestId,
      Connection: 'close',
    }).map(([name, value]) => `${name}: ${value}`),
  ].join('\r\n');
  const sent = method === 'HEAD' ? '' : body;
  socket.end(`${head}\r\n\r\n${sent}`);
  return Buffer.byteLength(sent);
}

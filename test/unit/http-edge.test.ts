/**
 * The local API's HTTP edge (local/http-edge.ts) with hostile input, on the real server
 * (createGatewayServer) with stand-in functions: a request that never arrives whole — a stalled
 * body, a malformed chunked body, a stalled head — is answered 400 in the Error shape within the
 * request read timeout (1 s here; 29 s in `npm start`, API Gateway's integration timeout) and
 * logged as what happened; a request without Host gets the Error shape; no HEAD answer carries
 * a body. Then its parts on their own: request targets, the Host rule, what a `clientError`
 * gets.
 */
import { EventEmitter, once } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { createGateway, createGatewayServer } from '../../local/gateway.ts';
import {
  edgeServerOptions,
  lacksRequiredHost,
  methodOfPacket,
  parserRefusal,
  REQUEST_READ_TIMEOUT_MS,
  requestTarget,
} from '../../local/http-edge.ts';
import { installLambdaRuntimeGlobals } from '../../local/lambda-runtime.ts';

installLambdaRuntimeGlobals();

const READ_TIMEOUT_MS = 1_000;
const key = generateApiKey();
let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

async function start(lines: string[] = []): Promise<number> {
  const gateway = createGateway({
    functions: {
      listOrders: () => Promise.resolve({ statusCode: 200, headers: {}, body: '[]' }),
      cancelOrder: () => Promise.resolve({ statusCode: 204, headers: {}, body: '' }),
    },
    authorizer: () => Promise.resolve({ principalId: 'key_x', policyDocument: { Statement: [] } }),
    authorizerTtlSeconds: 0,
    log: (line) => lines.push(line),
  });
  server = createGatewayServer(() => gateway, { requestReadTimeoutMs: READ_TIMEOUT_MS });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

interface Exchange {
  /** Everything the server sent before it closed the connection. */
  readonly text: string;
  /** Milliseconds from the last byte sent to the connection's close. */
  readonly closedAfterMs: number;
}

/** Sends bytes and reads until the server closes the connection (or 10 s pass). */
function exchange(port: number, bytes: string): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let sentAt = 0;
    const done = (): void => {
      clearTimeout(timer);
      resolve({ text: data, closedAfterMs: performance.now() - sentAt });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      done();
    }, 10_000);
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    socket.on('close', done);
    socket.on('error', () => undefined);
    socket.write(bytes, () => (sentAt = performance.now()));
  });
}

function parsed(text: string) {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

const errorShaped = (text: string, status: number, code: string) => {
  const answer = parsed(text);
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.headers['x-amzn-requestid']).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.parse(answer.body)).toMatchObject({ code, status });
  return answer;
};

const logged = (lines: string[]) =>
  lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, string>);

describe('a request that does not arrive whole', () => {
  it('is held at most as long as API Gateway’s integration timeout, 29 s, in npm start', () => {
    expect(REQUEST_READ_TIMEOUT_MS).toBe(29_000);
    expect(edgeServerOptions()).toMatchObject({
      headersTimeout: 29_000,
      requestTimeout: 29_000,
      connectionsCheckingInterval: 1_000,
    });
  });

  it.each([
    [
      'a body shorter than its Content-Length',
      `DELETE /v1/store/orders/1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Length: 10\r\n\r\nabc`,
    ],
    [
      'a chunked body that stops',
      `DELETE /v1/store/orders/1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n`,
    ],
  ])(
    '%s: 400 in the Error shape within the read timeout, then closed, logged as a stall',
    async (_, bytes) => {
      const lines: string[] = [];
      const port = await start(lines);
      const result = await exchange(port, bytes);
      errorShaped(result.text, 400, 'BAD_REQUEST');
      expect(result.closedAfterMs).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 50);
      expect(result.closedAfterMs).toBeLessThan(READ_TIMEOUT_MS + 2_500);
      expect(logged(lines)).toEqual([
        expect.objectContaining({
          status: '400',
          errorType: 'DEFAULT_4XX',
          errorMessage: 'The request did not arrive in full in time.',
          keyId: '-',
        }),
      ]);
    },
  );

  it('a malformed chunked body: 400 in the Error shape at once, before any key check', async () => {
    const lines: string[] = [];
    const port = await start(lines);
    const result = await exchange(
      port,
      `DELETE /v1/store/orders/1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
    );
    errorShaped(result.text, 400, 'BAD_REQUEST');
    expect(result.closedAfterMs).toBeLessThan(READ_TIMEOUT_MS);
    expect(logged(lines)).toEqual([
      expect.objectContaining({
        status: '400',
        errorMessage: 'The request body is malformed.',
        authorizerLatencyMs: '-',
      }),
    ]);
  });

  it('a head that stops: 400 in the Error shape within the read timeout', async () => {
    const lines: string[] = [];
    const port = await start(lines);
    const result = await exchange(port, 'GET /v1/store/orders HTTP/1.1\r\nHost: a\r\n');
    errorShaped(result.text, 400, 'BAD_REQUEST');
    expect(result.closedAfterMs).toBeLessThan(READ_TIMEOUT_MS + 2_500);
    expect(logged(lines)).toEqual([
      expect.objectContaining({
        status: '400',
        errorMessage: 'The request did not arrive in full in time.',
      }),
    ]);
  });
});

describe('requests HTTP refuses', () => {
  it('an HTTP/1.1 request without Host: 400 in the Error shape, with a request id', async () => {
    const lines: string[] = [];
    const port = await start(lines);
    const result = await exchange(
      port,
      'GET /v1/store/orders HTTP/1.1\r\nConnection: close\r\n\r\n',
    );
    errorShaped(result.text, 400, 'BAD_REQUEST');
    expect(logged(lines)).toEqual([
      expect.objectContaining({ status: '400', errorMessage: 'The request has no Host header.' }),
    ]);
  });

  it.each([
    ['bare LF line ends', 'HEAD /v1/store/orders HTTP/1.1\nHost: a\n\n', 400],
    [
      'headers over API Gateway’s 10,240 bytes',
      `HEAD /v1/store/orders HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      413,
    ],
    ['no Host', 'HEAD /v1/store/orders HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
    ['an unknown path', 'HEAD /v1/nowhere HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n', 404],
  ])('a HEAD request with %s: its status and headers, never a body', async (_, bytes, status) => {
    const port = await start();
    const result = await exchange(port, bytes);
    const answer = parsed(result.text);
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.body).toBe('');
  });
});

describe('a request target', () => {
  it.each([
    ['/v1/store/orders', { path: '/v1/store/orders', query: '' }],
    ['/v1/store/orders?a=1&b', { path: '/v1/store/orders', query: 'a=1&b' }],
    ['/v1/store/orders#x?a=1', { path: '/v1/store/orders', query: '' }],
    ['http://localhost:3000/v1/store/orders?a=1', { path: '/v1/store/orders', query: 'a=1' }],
    ['HTTPS://[::1]:65535', { path: '/', query: '' }],
    ['/%zz/../?%', { path: '/%zz/../', query: '%' }],
  ])('%j is a path and a query, taken apart as text', (raw, target) => {
    expect(requestTarget(raw)).toEqual(target);
  });

  it.each([
    ['the authority form', 'example.com:443'],
    ['the asterisk form', '*'],
    ['a relative path', 'v1/store/orders'],
    ['a port over 65535', 'http://localhost:65536/v1'],
    ['a host with a space', 'http://local host/v1'],
  ])('in %s is no path', (_, raw) => {
    expect(requestTarget(raw)).toBeUndefined();
  });
});

describe('the Host header', () => {
  const request = (httpVersion: string, host?: string) =>
    ({ httpVersion, headers: host === undefined ? {} : { host } }) as IncomingMessage;

  it('is required of HTTP/1.1, not of HTTP/1.0', () => {
    expect(lacksRequiredHost(request('1.1'))).toBe(true);
    expect(lacksRequiredHost(request('1.1', 'a'))).toBe(false);
    expect(lacksRequiredHost(request('1.0'))).toBe(false);
  });
});

describe('a clientError of the server', () => {
  const error = (code?: string, packet?: string) =>
    Object.assign(new Error('refused'), {
      code,
      rawPacket: packet === undefined ? undefined : Buffer.from(packet, 'latin1'),
    });
  /** A connection that has sent `bytesRead` bytes. */
  const socket = (bytesRead: number) => Object.assign(new PassThrough(), { bytesRead });

  it('reads the method of the refused packet where there is one', () => {
    expect(methodOfPacket(Buffer.from('HEAD /v1 HTTP/1.1\r\n'))).toBe('HEAD');
    expect(methodOfPacket(Buffer.from('head /v1'))).toBeUndefined();
    expect(methodOfPacket(undefined)).toBeUndefined();
  });

  const TIMED_OUT = 'The request did not arrive in full in time.';
  it.each([
    ['HPE_HEADER_OVERFLOW', 'HEAD /v1', 'HEAD', 'REQUEST_TOO_LARGE', 'HPE_HEADER_OVERFLOW'],
    ['HPE_INVALID_METHOD', 'G@T /v1', '-', 'DEFAULT_4XX', 'HPE_INVALID_METHOD'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'GET /v1', 'GET', 'DEFAULT_4XX', TIMED_OUT],
    [undefined, undefined, '-', 'DEFAULT_4XX', 'malformed request'],
  ])('%s (packet %j) is answered: method %s, %s, %s', (code, packet, method, type, logged) => {
    const connection = socket(20);
    const message = logged === TIMED_OUT ? logged : `Refused by the HTTP parser: ${logged}.`;
    expect(parserRefusal(error(code, packet), connection)).toEqual({ method, type, message });
    expect(connection.destroyed).toBe(false);
  });

  it('closes without an answer a connection reset, gone or silent', () => {
    const gone = socket(20);
    gone.end();
    for (const [connection, code] of [
      [socket(20), 'ECONNRESET'],
      [gone, 'HPE_INVALID_METHOD'],
      [socket(0), 'ERR_HTTP_REQUEST_TIMEOUT'],
    ] as const) {
      expect(parserRefusal(error(code), connection)).toBeUndefined();
      expect(connection.destroyed).toBe(true);
    }
  });

  it('lets an answer still going out end whole, then ends the connection', () => {
    const inFlight = Object.assign(new EventEmitter(), { writableFinished: false });
    const connection = Object.assign(socket(20), { _httpMessage: inFlight });
    expect(parserRefusal(error('HPE_INVALID_METHOD'), connection)).toBeUndefined();
    expect(connection.writableEnded).toBe(false);
    inFlight.emit('finish');
    expect(connection.writableEnded).toBe(true);
  });
});

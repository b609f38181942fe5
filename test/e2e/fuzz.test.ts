/**
 * A fuzz test of the local API as an attacker would send it: thousands of generated requests over
 * raw sockets — methods, paths, ids, headers, encodings, protocol-level oddities — through the
 * real `npm start` program. Whatever comes in: no crash, no 5xx, every answer but a 200 list or a
 * 204 is the Error object with its status, no message echoes a control or bidi character, and
 * the server still serves at the end.
 */
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { startLocalApi, tempStateFile, type LocalApi } from '../support/local-api.ts';
import { rawRequest, type RawAnswer } from '../support/raw-http.ts';

const REQUESTS = 2_200;
const CONCURRENCY = 8;
const SEED = 20261123;
const key = generateApiKey();
let api: LocalApi;
let port: number;

beforeAll(async () => {
  const keys = join(tempStateFile(), '..', 'keys.json');
  writeFileSync(
    keys,
    JSON.stringify([
      { key, plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 1_000_000_000 } },
    ]),
  );
  api = await startLocalApi({ args: ['--keys', keys] });
  port = Number(new URL(api.url).port);
});
afterAll(() => api.stop());

const CONTROL_OR_BIDI =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069]/u;

const segment = fc.oneof(
  fc.constantFrom(
    'store',
    'orders',
    'v1',
    'pets',
    '',
    '.',
    '..',
    '%2e%2e',
    '%zz',
    '%',
    '%E2%80%AE1',
  ),
  fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/),
  fc.string({ unit: 'grapheme', maxLength: 6 }).map(encodeURIComponent),
);
const id = fc.oneof(
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
  fc.constantFrom(
    '9223372036854775807',
    '9223372036854775808',
    '-9223372036854775808',
    '1e3',
    '007',
    '-0',
    '0x10',
    '%20%31',
    '1%00',
    '%E2%80%AE1',
    '%22quoted%22',
    `${generateApiKey()}`,
    'x'.repeat(3000),
  ),
);
const path = fc.oneof(
  fc.constant('/v1/store/orders'),
  id.map((value) => `/v1/store/orders/${value}`),
  fc.array(segment, { maxLength: 5 }).map((parts) => `/${parts.join('/')}`),
  fc.array(segment, { maxLength: 4 }).map((parts) => `/v1/${parts.join('/')}`),
  fc.constantFrom(
    '/',
    '/v1',
    '/v1/',
    '//v1//store//orders',
    '/V1/store/orders',
    '/v1/store/orders/',
  ),
);
const target = fc.oneof(
  { weight: 6, arbitrary: path },
  {
    weight: 1,
    arbitrary: fc
      .tuple(path, fc.string({ maxLength: 30 }))
      .map(([p, q]) => `${p}?${encodeURIComponent(q)}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'http://[x/',
      'http://a:99999/v1/store/orders',
      'http://%zz/',
      'http://127.0.0.1/v1/store/orders',
      '*',
      'example.com:443',
      `/v1/store/orders?key=${generateApiKey()}`,
      '/v1/store/orders#frag',
    ),
  },
);
const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'DELETE') },
  { weight: 3, arbitrary: fc.constantFrom('POST', 'PUT', 'PATCH', 'HEAD', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('TRACE', 'CONNECT', 'get', 'FOO') },
);
const authorization = fc.oneof(
  fc.constant(`Bearer ${key}`),
  fc.constant(`bearer   ${key}`),
  fc.constant(`Bearer ${generateApiKey()}`),
  fc.constantFrom(
    'Bearer',
    'Bearer ',
    'Basic dXNlcjpwYXNz',
    `Bearer ${key}x`,
    `Bearer ${key.slice(0, -1)}`,
  ),
  fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)),
  fc.constant(undefined),
);
const extraHeader = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'Accept-Encoding: gzip;q=0, br, *;q=0.1',
      'Accept-Encoding: zstd',
      'Accept-Encoding: ???',
      'Content-Type: text/plain',
      'Expect: 100-continue',
      'Upgrade: websocket',
      'Transfer-Encoding: chunked',
      'Content-Length: -1',
      'Content-Length: abc',
      'Content-Length: 5',
      `X-Big: ${'a'.repeat(12_000)}`,
      'X-Unicode: é',
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,10}$/), fc.stringMatching(/^[ -~]{0,30}$/))
      .map(([name, value]) => `${name}: ${value}`),
  },
);
/** Protocol-level oddities, each in about one request in sixteen. */
const rarely = <T>(usual: T, ...odd: T[]): fc.Arbitrary<T> =>
  fc.oneof(
    { weight: 15, arbitrary: fc.constant(usual) },
    { weight: 1, arbitrary: fc.constantFrom(...odd) },
  );
const version = fc.oneof(
  { weight: 3, arbitrary: rarely('HTTP/1.1', 'HTTP/2.0', 'HTTP/9', 'HTTP/1.1 x') },
  { weight: 1, arbitrary: fc.constant('HTTP/1.0') },
);
const lineEnd = rarely('\r\n', '\n');
const rawUtf8 = rarely(false, true);
const body = fc.oneof(
  { weight: 8, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
  { weight: 1, arbitrary: fc.constant('0\r\n\r\n') },
);

interface Generated {
  readonly method: string;
  readonly bytes: Buffer;
}

const request: fc.Arbitrary<Generated> = fc
  .record({
    method,
    target,
    version,
    authorization,
    extra: fc.array(extraHeader, { maxLength: 3 }),
    lineEnd,
    body,
    close: fc.boolean(),
    rawUtf8,
  })
  .map((r) => {
    const lines = [
      `${r.method} ${r.rawUtf8 ? `${r.target}é` : r.target} ${r.version}`,
      'Host: 127.0.0.1',
      ...(r.authorization === undefined ? [] : [`Authorization: ${r.authorization}`]),
      ...r.extra,
      ...(r.close ? ['Connection: close'] : []),
    ];
    return {
      method: r.method,
      bytes: Buffer.from(`${lines.join(r.lineEnd)}${r.lineEnd}${r.lineEnd}${r.body}`, 'utf8'),
    };
  });

/** What every answer must be. Returns a problem, or undefined. */
function problemWith(sent: Generated, answer: RawAnswer): string | undefined {
  if (answer.status === 0) return undefined; // the server may close a connection it cannot parse at all
  if (answer.status >= 500) return `a ${answer.status}`;
  if (answer.status === 204 || (answer.status === 200 && sent.method === 'GET')) return undefined;
  if (sent.method === 'HEAD') return undefined;
  let error: { code?: unknown; message?: unknown; status?: unknown };
  try {
    error = JSON.parse(answer.body) as typeof error;
  } catch {
    return `status ${answer.status} without an Error body: ${JSON.stringify(answer.body.slice(0, 80))}`;
  }
  if (typeof error.code !== 'string' || typeof error.message !== 'string')
    return 'an Error without code or message';
  if (error.status !== answer.status)
    return `Error.status ${String(error.status)} ≠ ${answer.status}`;
  if (!answer.headers['content-type']?.startsWith('application/json'))
    return 'not application/json';
  if (CONTROL_OR_BIDI.test(error.message))
    return `message echoes a control character: ${JSON.stringify(error.message)}`;
  return undefined;
}

describe(`the local API under ${REQUESTS} generated requests`, () => {
  it('never crashes, never answers 5xx, answers every error in the Error shape, and still serves', async () => {
    const samples = fc.sample(fc.noBias(request), { numRuns: REQUESTS, seed: SEED });
    const counts = new Map<string, number>();
    const problems: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < samples.length) {
        const sent = samples[next++]!;
        const answer = await rawRequest(port, sent.bytes, {
          head: sent.method === 'HEAD',
          timeoutMs: 3_000,
        });
        const code = /"code":"(\w+)"/.exec(answer.body)?.[1];
        const outcome = `${answer.status}${code ? ` ${code}` : ''}`;
        counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
        const problem = problemWith(sent, answer);
        if (problem)
          problems.push(
            `${problem} ← ${JSON.stringify(sent.bytes.toString('utf8').slice(0, 120))}`,
          );
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.log(
      `[fuzz] ${samples.length} requests (seed ${SEED}) by answer: ${[...counts]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([outcome, n]) => `${outcome} ×${n}`)
        .join(', ')}`,
    );
    expect(problems.slice(0, 10)).toEqual([]);
    expect(api.process.exitCode).toBeNull();
    const alive = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(alive.status).toBe(200);
  }, 180_000);

  it.each([
    [
      'a target that is not a URL',
      'GET http://[x/ HTTP/1.1\r\nHost: a\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    [
      'an impossible port',
      'GET http://a:99999/v1/store/orders HTTP/1.1\r\nHost: a\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    [
      'a bad escape in the authority',
      'GET http://%zz/ HTTP/1.1\r\nHost: a\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    [
      'an absolute target',
      'GET http://127.0.0.1:3000/v1/store/orders HTTP/1.1\r\nHost: a\r\n\r\n',
      401,
      'UNAUTHORIZED',
    ],
    [
      'a header over API Gateway’s limit',
      `GET /v1/store/orders HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      413,
      'REQUEST_TOO_LARGE',
    ],
    [
      'raw UTF-8 in the path',
      'GET /v1/store/ordérs HTTP/1.1\r\nHost: a\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    ['a lowercase method', 'get /v1/store/orders HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'BAD_REQUEST'],
    [
      'a negative Content-Length',
      'DELETE /v1/store/orders/1 HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    ['bare LF line ends', 'GET /v1/store/orders HTTP/1.1\nHost: a\n\n', 400, 'BAD_REQUEST'],
    [
      'CONNECT to a host',
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    [
      'CONNECT to a path of the API',
      'CONNECT /v1/store/orders HTTP/1.1\r\nHost: a\r\n\r\n',
      405,
      'METHOD_NOT_ALLOWED',
    ],
  ])('answers %s with the Error object', async (_, raw, status, code) => {
    const answer = await rawRequest(port, raw);
    expect(answer.status).toBe(status);
    expect(JSON.parse(answer.body)).toMatchObject({ code, status });
    expect(answer.headers['content-type']).toBe('application/json');
  });

  it('never echoes control or bidi characters in a message, and cuts long values', async () => {
    for (const id of ['%E2%80%AE1', '1%00', '%22%5C', 'x'.repeat(500)]) {
      const answer = await rawRequest(
        port,
        `DELETE /v1/store/orders/${id} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
      );
      const error = JSON.parse(answer.body) as { code: string; message: string };
      expect(error.code).toBe('INVALID_ORDER_ID');
      expect(error.message).not.toMatch(CONTROL_OR_BIDI);
      expect(error.message.length).toBeLessThan(120);
    }
    const bidi = await rawRequest(
      port,
      `DELETE /v1/store/orders/%E2%80%AE1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    );
    expect((JSON.parse(bidi.body) as { message: string }).message).toBe(
      'The order id "\\u202e1" is not a base-10 integer in the int64 range.',
    );
  });
});

/**
 * What the emulated API Gateway hands the functions (./gateway.ts): the method ARN its TOKEN
 * authorizer is asked about, and the REST v1 proxy event of a routed request, under the local
 * API's own identity (region, account, API id).
 */
import type { IncomingMessage } from 'node:http';
import { requestTimeText, type Exchange } from './access-log-context.ts';
import type { RequestTarget } from './http-edge.ts';
import type { RoutedRequest } from './stage-routes.ts';
import type { AuthorizerResult } from './token-authorizer.ts';

const REGION = 'local';
const ACCOUNT_ID = '000000000000';
const API_ID = 'local';

/** The method ARN a request's authorizer policy is checked against. */
export const methodArn = ({ stage, route, stagePath }: RoutedRequest): string =>
  `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${API_ID}/${stage}/${route.method}${stagePath}`;

/**
 * Name → last value and name → every value, as a proxy event carries headers and the query. Any
 * name is a key of its own, `__proto__` and `constructor` included (collected in a Map, then
 * defined as own properties, as JSON.parse defines them in the event API Gateway sends).
 */
function byName(pairs: Iterable<readonly [string, string]>) {
  const multi = new Map<string, string[]>();
  for (const [name, value] of pairs) multi.set(name, [...(multi.get(name) ?? []), value]);
  return {
    single: Object.fromEntries([...multi].map(([name, values]) => [name, values.at(-1)!])),
    multi: Object.fromEntries(multi),
  };
}

/** The REST v1 proxy event of a request, as API Gateway hands it to the function. */
export function proxyEvent(
  request: IncomingMessage,
  target: RequestTarget,
  { stage, route, stagePath, pathParameters }: RoutedRequest,
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
    resource: route.path,
    path: stagePath,
    httpMethod: route.method,
    headers: single,
    multiValueHeaders: multi,
    queryStringParameters: hasQuery ? query.single : null,
    multiValueQueryStringParameters: hasQuery ? query.multi : null,
    pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : null,
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
      httpMethod: route.method,
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
      resourcePath: route.path,
      stage,
    },
    body: body.length > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
  };
}

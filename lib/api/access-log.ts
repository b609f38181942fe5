/**
 * The API's access log: one JSON object per request, with who called (the key id the authorizer
 * returned as principal), what was called (the route template, never the path), how it ended and
 * how long it took, and the ids that lead to the function's logs and the X-Ray trace. One field
 * list for the stack (infra/access-log.ts, API Gateway's access log format) and the local
 * emulator (local/gateway.ts), which evaluates the same template with the `$context` variables it
 * emulates: the tests read what AWS would log.
 *
 * No field may carry anything a client can fill with a key: no header (not the Authorization
 * header, nor the User-Agent), no path (`$context.path` holds the order id as sent: a key pasted
 * as an order id would be logged), no query string. `$context.resourcePath` is the route
 * template (`/store/orders/{orderId}`), which no request changes.
 */

/** Field name → API Gateway `$context` variable; logged as a JSON string ("-" when absent). */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  extendedRequestId: '$context.extendedRequestId',
  requestTime: '$context.requestTime',
  requestTimeEpochMs: '$context.requestTimeEpoch',
  // The caller: the key id of an accepted key, `anonymous` for a refused one, "-" before auth.
  keyId: '$context.authorizer.principalId',
  sourceIp: '$context.identity.sourceIp',
  httpMethod: '$context.httpMethod',
  // Which version of the API was called (`v1`, `v2`): the stages share one access log.
  stage: '$context.stage',
  resourcePath: '$context.resourcePath',
  protocol: '$context.protocol',
  status: '$context.status',
  responseLength: '$context.responseLength',
  responseLatencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integration.latency',
  integrationStatus: '$context.integration.status',
  authorizerLatencyMs: '$context.authorizer.latency',
  errorType: '$context.error.responseType',
  xrayTraceId: '$context.xrayTraceId',
} as const;

/**
 * The error message (`errorMessage`) goes in as `$context.error.messageString`, which API Gateway
 * writes already quoted and escaped: a message with a quote in it cannot break the JSON.
 */
export const ERROR_MESSAGE_VARIABLE = '$context.error.messageString';

/** The access log format: the template API Gateway fills in for each request. */
export function accessLogTemplate(): string {
  const fields = Object.entries(ACCESS_LOG_FIELDS).map(
    ([name, variable]) => `"${name}":"${variable}"`,
  );
  fields.push(`"errorMessage":${ERROR_MESSAGE_VARIABLE}`);
  return `{${fields.join(',')}}`;
}

/** `$context` variables by name without the prefix (`requestId`, `authorizer.principalId`…). */
export type ContextVariables = Readonly<Record<string, string | number | undefined>>;

/**
 * The template filled in as API Gateway fills it: each `$context.x` replaced by its value ("-"
 * when it has none), `$context.error.messageString` by the quoted `error.message`. Values are
 * escaped for the JSON string they stand in.
 */
export function renderAccessLog(template: string, variables: ContextVariables): string {
  return template.replace(/\$context\.([A-Za-z][A-Za-z0-9.]*[A-Za-z0-9])/g, (_, name: string) => {
    if (name === 'error.messageString') {
      const message = variables['error.message'];
      return JSON.stringify(message === undefined ? '-' : String(message));
    }
    const value = variables[name];
    return value === undefined || value === '' ? '-' : JSON.stringify(String(value)).slice(1, -1);
  });
}

/**
 * The API's access log: one JSON object per request, with who called (the key id the authorizer
 * returned as principal, never the key: no header is logged), what was called, how it ended and
 * how long it took, and the ids that lead to the function's logs and the X-Ray trace.
 */
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';

/** Field name → API Gateway `$context` variable; logged as a JSON string ("-" when absent). */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  extendedRequestId: '$context.extendedRequestId',
  requestTime: '$context.requestTime',
  requestTimeEpochMs: '$context.requestTimeEpoch',
  // The caller: the key id of an accepted key, `anonymous` for a refused one, "-" before auth.
  keyId: '$context.authorizer.principalId',
  sourceIp: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  httpMethod: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  path: '$context.path',
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

export function accessLogFormat(): AccessLogFormat {
  const fields = Object.entries(ACCESS_LOG_FIELDS).map(
    ([name, variable]) => `"${name}":"${variable}"`,
  );
  fields.push(`"errorMessage":${ERROR_MESSAGE_VARIABLE}`);
  return AccessLogFormat.custom(`{${fields.join(',')}}`);
}

/**
 * Answers that API Gateway itself gives, before or instead of a function: each maps an
 * API Gateway response type to an error of the catalogue. The CDK stack installs them as
 * gateway responses; the local emulator answers with the same definitions.
 */
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  ERROR_CATALOGUE,
  errorBody,
  type ErrorBody,
  type ErrorCode,
} from './errors.ts';

export const WWW_AUTHENTICATE = 'Bearer realm="store-orders"';

/** The API Gateway response types this API customises (a subset of AWS's list). */
export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'RESOURCE_NOT_FOUND'
  | 'THROTTLED'
  | 'QUOTA_EXCEEDED'
  | 'REQUEST_TOO_LARGE'
  | 'AUTHORIZER_FAILURE'
  | 'AUTHORIZER_CONFIGURATION_ERROR'
  | 'INTEGRATION_FAILURE'
  | 'INTEGRATION_TIMEOUT'
  | 'API_CONFIGURATION_ERROR'
  | 'DEFAULT_4XX'
  | 'DEFAULT_5XX';

export interface GatewayResponseDefinition {
  readonly type: GatewayResponseType;
  readonly code: ErrorCode;
  readonly headers: Readonly<Record<string, string>>;
  /** Why API Gateway gives this answer here. */
  readonly when: string;
}

const retryAfter = { 'Retry-After': String(DEFAULT_RETRY_AFTER_SECONDS) };

export const GATEWAY_RESPONSES: readonly GatewayResponseDefinition[] = [
  {
    type: 'UNAUTHORIZED',
    code: 'UNAUTHORIZED',
    headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    when: 'the Authorization header is missing, or the authorizer refused the key',
  },
  {
    type: 'ACCESS_DENIED',
    code: 'UNAUTHORIZED',
    headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    when: 'an authorizer policy denied the call',
  },
  {
    type: 'MISSING_AUTHENTICATION_TOKEN',
    code: 'ROUTE_NOT_FOUND',
    headers: {},
    when: 'the path is not a resource of the API (answered before authentication)',
  },
  {
    type: 'RESOURCE_NOT_FOUND',
    code: 'ROUTE_NOT_FOUND',
    headers: {},
    when: 'API Gateway found no resource',
  },
  {
    type: 'THROTTLED',
    code: 'RATE_LIMITED',
    headers: retryAfter,
    when: 'the stage-level throttle (a safety net above the per-key limits) refused the call',
  },
  {
    type: 'QUOTA_EXCEEDED',
    code: 'RATE_LIMITED',
    headers: retryAfter,
    when: 'a usage-plan quota refused the call',
  },
  {
    type: 'REQUEST_TOO_LARGE',
    code: 'REQUEST_TOO_LARGE',
    headers: {},
    when: 'the request exceeds the API Gateway payload limit',
  },
  {
    type: 'AUTHORIZER_FAILURE',
    code: 'SERVICE_UNAVAILABLE',
    headers: retryAfter,
    when: 'the authorizer could not be run (e.g. it timed out)',
  },
  {
    // API Gateway gives this one type whenever the authorizer throws anything but
    // "Unauthorized", and caches none of them: here, its key store failed. It cannot tell a
    // transient failure from a permanent one, so both are 503 for the client (the request was
    // not served; retrying is safe, and works once the store is back); a permanent failure
    // pages the operator through the authorizer's own error log, metric and alarm.
    type: 'AUTHORIZER_CONFIGURATION_ERROR',
    code: 'SERVICE_UNAVAILABLE',
    headers: retryAfter,
    when: 'the authorizer failed (its key store failed, transiently or permanently) or returned something unusable',
  },
  {
    type: 'INTEGRATION_FAILURE',
    code: 'INTERNAL_ERROR',
    headers: {},
    when: 'the function failed or its buffered response exceeded 6 MB',
  },
  {
    type: 'INTEGRATION_TIMEOUT',
    code: 'SERVICE_UNAVAILABLE',
    headers: retryAfter,
    when: 'the function did not answer in time',
  },
  {
    type: 'API_CONFIGURATION_ERROR',
    code: 'INTERNAL_ERROR',
    headers: {},
    when: 'the API is misconfigured',
  },
  {
    type: 'DEFAULT_4XX',
    code: 'BAD_REQUEST',
    headers: {},
    when: 'any other client error API Gateway raises',
  },
  {
    type: 'DEFAULT_5XX',
    code: 'INTERNAL_ERROR',
    headers: {},
    when: 'any other server error API Gateway raises',
  },
];

export interface GatewayAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: ErrorBody;
}

export function gatewayResponse(
  type: GatewayResponseType,
  definitions: readonly GatewayResponseDefinition[] = GATEWAY_RESPONSES,
): GatewayResponseDefinition {
  const definition = definitions.find((r) => r.type === type);
  if (!definition) throw new Error(`No gateway response is defined for ${type}`);
  return definition;
}

/** What API Gateway answers for a response type: status, headers and the Error body. */
export function gatewayAnswer(
  type: GatewayResponseType,
  definitions: readonly GatewayResponseDefinition[] = GATEWAY_RESPONSES,
): GatewayAnswer {
  const { code, headers } = gatewayResponse(type, definitions);
  return {
    status: ERROR_CATALOGUE[code].status,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: errorBody(code),
  };
}

/**
 * The answer for a known path called with a method it does not have. API Gateway gives it from
 * an ANY method with a mock integration; the emulator from its router.
 */
export function methodNotAllowedAnswer(allow: readonly string[]): GatewayAnswer {
  return {
    status: ERROR_CATALOGUE.METHOD_NOT_ALLOWED.status,
    headers: { 'Content-Type': 'application/json', Allow: allow.join(', ') },
    body: errorBody('METHOD_NOT_ALLOWED'),
  };
}

/**
 * The local emulator's access log (./gateway.ts): what one request did, kept as the request goes
 * through the gateway — an Exchange — and rendered at its end into the stack's own format
 * (lib/api/access-log.ts) with the `$context` variables API Gateway would fill in.
 */
import { accessLogTemplate, renderAccessLog } from '../lib/api/access-log.ts';
import type { GatewayResponseType } from '../lib/api/gateway-responses.ts';

/** What one request did, as the access log's `$context` variables need it. */
export interface Exchange {
  readonly requestId: string;
  readonly arrivedAt: number;
  readonly method: string;
  readonly protocol: string;
  readonly sourceIp: string | undefined;
  resourcePath?: string;
  principalId?: string;
  status?: number;
  responseLength: number;
  authorizerLatency?: number;
  integrationLatency?: number;
  integrationStatus?: number;
  errorType?: GatewayResponseType;
  errorMessage?: string;
}

/** The exchange of a request that has just arrived: nothing sent yet. */
export function newExchange(
  requestId: string,
  arrivedAt: number,
  method: string,
  protocol: string,
  sourceIp: string | undefined,
): Exchange {
  return { requestId, arrivedAt, method, protocol, sourceIp, responseLength: 0 };
}

/** `$context.requestTime` as API Gateway writes it (CLF): `23/Nov/2026:12:00:00 +0000`. */
export function requestTimeText(epochMs: number): string {
  // From the fields of `Mon, 23 Nov 2026 12:00:00 GMT` (two-digit day, English month).
  const [, day, month, year, time] = new Date(epochMs).toUTCString().split(' ');
  return `${day}/${month}/${year}:${time} +0000`;
}

const TEMPLATE = accessLogTemplate();

/** The access log line of an exchange that ended at `endedAt`, with its `$context` variables. */
export function accessLogLine(exchange: Exchange, endedAt: number): string {
  return renderAccessLog(TEMPLATE, {
    requestId: exchange.requestId,
    extendedRequestId: exchange.requestId,
    requestTime: requestTimeText(exchange.arrivedAt),
    requestTimeEpoch: exchange.arrivedAt,
    'authorizer.principalId': exchange.principalId,
    'identity.sourceIp': exchange.sourceIp,
    httpMethod: exchange.method,
    resourcePath: exchange.resourcePath,
    protocol: exchange.protocol,
    status: exchange.status,
    responseLength: exchange.responseLength,
    responseLatency: endedAt - exchange.arrivedAt,
    'integration.latency': exchange.integrationLatency,
    'integration.status': exchange.integrationStatus,
    'authorizer.latency': exchange.authorizerLatency,
    'error.responseType': exchange.errorType,
    'error.message': exchange.errorMessage,
  });
}

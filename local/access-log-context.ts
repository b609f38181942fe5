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
  stage?: string;
  resourcePath?: string;
  principalId?: string;
  status?: number;
  responseLength: number;
  authorizerLatency?: number;
  integrationLatency?: number;
  integrationStatus?: number;
  errorType?: GatewayResponseType;
  errorMessage?: string;
  /** Who cut it short, if anyone did (see CUT_SHORT_MESSAGES). */
  cutShortBy?: CutShortBy;
}

/**
 * Who cut an exchange short — its connection closed before its answer went out whole — as the
 * access log's `errorMessage` says it (API Gateway's own log has no message for either):
 * - `client`: the client closed the connection first; its invocation, queued or running, was
 *   stopped;
 * - `service`: the emulator closed it, after the status line, because the service failed: a
 *   streamed function failed or ran out of time mid-stream (as API Gateway cuts such a stream),
 *   or the gateway itself failed.
 * The first to cut is the cause: the other side's close that follows changes nothing.
 */
export const CUT_SHORT_MESSAGES = {
  client: 'The client went away: its invocation was stopped.',
  service: 'The service cut the response short after its status line.',
} as const;
export type CutShortBy = keyof typeof CUT_SHORT_MESSAGES;

/** Records that `by` cut the exchange short; false when it had been cut already (by either). */
export function cutShort(exchange: Exchange, by: CutShortBy): boolean {
  if (exchange.cutShortBy !== undefined) return false;
  exchange.cutShortBy = by;
  return true;
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

/**
 * The access log line of an exchange that ended at `endedAt`, with its `$context` variables, in
 * the service's format or a stage's own (`format`, as a synthesized template gives it).
 */
export function accessLogLine(exchange: Exchange, endedAt: number, format = TEMPLATE): string {
  return renderAccessLog(format, {
    requestId: exchange.requestId,
    extendedRequestId: exchange.requestId,
    requestTime: requestTimeText(exchange.arrivedAt),
    requestTimeEpoch: exchange.arrivedAt,
    'authorizer.principalId': exchange.principalId,
    'identity.sourceIp': exchange.sourceIp,
    httpMethod: exchange.method,
    stage: exchange.stage,
    resourcePath: exchange.resourcePath,
    protocol: exchange.protocol,
    status: exchange.status,
    responseLength: exchange.responseLength,
    responseLatency: endedAt - exchange.arrivedAt,
    'integration.latency': exchange.integrationLatency,
    'integration.status': exchange.integrationStatus,
    'authorizer.latency': exchange.authorizerLatency,
    'error.responseType': exchange.errorType,
    'error.message':
      exchange.cutShortBy === undefined
        ? exchange.errorMessage
        : CUT_SHORT_MESSAGES[exchange.cutShortBy],
  });
}

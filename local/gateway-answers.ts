/**
 * How the emulator (./gateway.ts) sends an answer it holds whole — a function's buffered answer,
 * a gateway response, the ANY mock's 405 — and records it in the request's exchange: its status
 * and length, and for a gateway response its type and message, as the access log names them.
 */
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  gatewayAnswer,
  type GatewayAnswer,
  type GatewayResponseDefinition,
  type GatewayResponseType,
} from '../lib/api/gateway-responses.ts';
import type { Exchange } from './access-log-context.ts';
import { rawAnswer } from './http-edge.ts';

/** An answer sent whole, with its request id and length (a HEAD request gets no body). */
export function sendWhole(
  response: ServerResponse,
  exchange: Exchange,
  status: number,
  headers: Readonly<Record<string, string>> | undefined,
  body: string,
): void {
  response.writeHead(status, {
    ...headers,
    'x-amzn-RequestId': exchange.requestId,
    'Content-Length': String(Buffer.byteLength(body)),
  });
  response.end(body);
  exchange.status = status;
  exchange.responseLength = response.req.method === 'HEAD' ? 0 : Buffer.byteLength(body);
}

/**
 * An answer of the gateway's own: on the response, or straight on the socket of a request that
 * has none (refused by the parser, CONNECT), which then closes.
 */
export function sendGatewayAnswer(
  to: ServerResponse | Duplex,
  exchange: Exchange,
  answer: GatewayAnswer,
): void {
  if (to instanceof ServerResponse) {
    sendWhole(to, exchange, answer.status, answer.headers, JSON.stringify(answer.body));
    return;
  }
  exchange.status = answer.status;
  exchange.responseLength = rawAnswer(to, answer, exchange.requestId, exchange.method);
}

/**
 * The gateway response of a type (from `definitions`, default the service's), sent and logged as
 * what it was: `logged` when the gateway knows more than the response says, else its message.
 */
export function sendGatewayResponse(
  to: ServerResponse | Duplex,
  exchange: Exchange,
  type: GatewayResponseType,
  definitions?: readonly GatewayResponseDefinition[],
  logged?: string,
): void {
  const answer = gatewayAnswer(type, definitions);
  exchange.errorType = type;
  exchange.errorMessage = logged ?? answer.body.message;
  sendGatewayAnswer(to, exchange, answer);
}

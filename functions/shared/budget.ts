/**
 * The deadline of a request's DynamoDB work (lib/config/budgets.ts): counted from the moment the
 * request reached API Gateway, fixed at its first use in an invocation, and shared by every
 * call the invocation makes (the rate limiter, the cancel, the list's first pages).
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { requestDeadline, signalAt } from '../../lib/config/budgets.ts';

const signals = new WeakMap<object, AbortSignal>();

export function requestSignal(event: APIGatewayProxyEvent, now: number = Date.now()): AbortSignal {
  let signal = signals.get(event);
  if (!signal) {
    const arrived = (event.requestContext as { requestTimeEpoch?: number } | undefined)
      ?.requestTimeEpoch;
    signal = signalAt(requestDeadline(arrived, now), now);
    signals.set(event, signal);
  }
  return signal;
}

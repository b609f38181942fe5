/**
 * The deadline of a request's DynamoDB work (lib/config/budgets.ts `requestDeadline`): counted
 * from the moment the request reached API Gateway, with a floor from the function's own start
 * (its first use in an invocation: the first step of the HTTP chain, functions/shared/
 * http-function.ts), fixed then and shared by every call the invocation makes (the list's version
 * read, the rate limiter, the cancel, the list's first pages). Keyed by the invocation's Lambda
 * context, which is new for every invocation.
 */
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { requestDeadline, signalAt } from '../../lib/config/budgets.ts';

const signals = new WeakMap<object, AbortSignal>();

export function requestSignal(
  event: APIGatewayProxyEvent,
  context: Context,
  now: number = Date.now(),
  requestMs?: number,
): AbortSignal {
  let signal = signals.get(context);
  if (!signal) {
    const arrived = (event.requestContext as { requestTimeEpoch?: number } | undefined)
      ?.requestTimeEpoch;
    signal = signalAt(requestDeadline(arrived, now, requestMs), now);
    signals.set(context, signal);
  }
  return signal;
}

/**
 * DELETE /store/orders/{orderId} — pending → cancelled in one conditional write. The cancel of a
 * well-formed id starts as the request arrives, beside the rate limiter's count, and is made only
 * once the limiter admits the request: what the store prepares meanwhile (the list version's
 * mark) costs no time of its own, and a refused request writes nothing.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { noContent } from '../lib/api/http.ts';
import { cancelOrder, parseOrderId, readOrderId } from '../lib/orders/operations.ts';
import type { OrderStore } from '../lib/orders/order-store.ts';
import { httpStoresFromEnv } from './shared/dependencies.ts';
import { httpFunction } from './shared/http-function.ts';
import { httpInvocation, type HttpInvocation } from './shared/invocation.ts';
import type { RateLimitDependencies } from './shared/rate-limit.ts';

export interface CancelOrderDependencies extends RateLimitDependencies {
  readonly orders: () => OrderStore;
}

/** A cancel started before its request was admitted: `admit` lets it write, `refuse` not. */
interface StartedCancel {
  readonly admit: () => void;
  readonly refuse: (reason: unknown) => void;
  readonly done: Promise<void>;
}

export function createCancelOrderHandler(deps: CancelOrderDependencies) {
  /** Starts the cancel of a well-formed id (a malformed one is answered 400 and writes nothing). */
  const start: MiddlewareObj<APIGatewayProxyEvent> = {
    before: ({ event }) => {
      const { id } = readOrderId(event.pathParameters?.orderId);
      if (id === undefined) return;
      const invocation = httpInvocation<StartedCancel>();
      const admission = Promise.withResolvers<void>();
      const done = cancelOrder(deps.orders(), id, {
        signal: invocation.signal,
        admitted: admission.promise,
      });
      // Awaited by the handler, or below when the request goes no further.
      done.catch(() => undefined);
      invocation.own = { admit: admission.resolve, refuse: admission.reject, done };
    },
    onError: async ({ error }) => {
      const cancel = httpInvocation<StartedCancel>().own;
      cancel?.refuse(error);
      await cancel?.done.catch(() => undefined);
    },
  };
  return httpFunction(
    deps,
    async (event, { own: cancel }: HttpInvocation<StartedCancel>) => {
      if (!cancel) {
        // Nothing was started for a malformed id: answered 400 (InvalidOrderId).
        parseOrderId(event.pathParameters?.orderId);
        throw new Error('a cancel of a well-formed id was not started');
      }
      cancel.admit();
      await cancel.done;
      return noContent();
    },
    [start as MiddlewareObj],
  );
}

// The limiter's client is created at load (Lambda's init, outside the handler); the stores at
// the first call.
export const handler = createCancelOrderHandler(httpStoresFromEnv());

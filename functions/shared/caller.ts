/**
 * The first step of every HTTP function's chain after the logger: who is calling, from the
 * authorizer's context (key id, plan, limits). A function behind API Gateway always has one; none
 * means a misconfiguration (a route without the authorizer): a bug, answered 500 and paged.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { callerFromContext } from '../../lib/keys/authenticate.ts';
import type { Caller } from '../../lib/keys/key-record.ts';

const callers = new WeakMap<object, Caller>();

export function identifyCaller(): MiddlewareObj<APIGatewayProxyEvent> {
  return {
    before: (request) => {
      const caller = callerFromContext(request.event.requestContext?.authorizer);
      if (!caller) {
        throw new Error(
          'No caller in the authorizer context: is the function behind the authorizer?',
        );
      }
      callers.set(request.event, caller);
    },
  };
}

/** The caller of a request that went through identifyCaller(). */
export function callerOf(event: APIGatewayProxyEvent): Caller {
  const caller = callers.get(event);
  if (!caller) throw new Error('callerOf: identifyCaller() did not run for this request');
  return caller;
}

/**
 * An HTTP function whose answer API Gateway streams (lib/api/routes.ts): the same operation
 * (./http-function.ts), run inside middy's streaming mode, which writes the answer's body to the
 * runtime's response stream as it comes. middy's own early timeout is off: the operation's
 * chain keeps its own.
 */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { HttpResponse } from '../../lib/api/responses.ts';
import { httpFunction, type HttpOperation } from './http-function.ts';
import type { RateLimitDependencies } from './rate-limit.ts';

export function streamedHttpFunction<Input, Body>(
  deps: RateLimitDependencies,
  operation: HttpOperation<Input, HttpResponse<Body>>,
) {
  return middy<APIGatewayProxyEvent>({
    executionMode: executionModeStreamifyResponse,
    timeoutEarlyInMillis: 0,
  }).handler(httpFunction(deps, operation));
}

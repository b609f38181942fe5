/**
 * An HTTP function whose answer API Gateway streams (lib/api/routes.ts): the same function
 * (./http-function.ts), run inside middy's streaming mode, which writes the answer's body to the
 * runtime's response stream as it comes. middy's own early timeout is off: the function's chain
 * keeps its own.
 */
import middy from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { HttpResponse } from '../../lib/api/responses.ts';

export function streamed<Body>(
  handler: (event: APIGatewayProxyEvent, context: Context) => Promise<HttpResponse<Body>>,
) {
  return middy<APIGatewayProxyEvent>({
    executionMode: executionModeStreamifyResponse,
    timeoutEarlyInMillis: 0,
  }).handler(handler);
}

/**
 * functions/shared/logger.ts as it was with Powertools Logger, for `npm run bench:cold-init --
 * --powertools` (which bundles each function with this in its place): the same exports the
 * functions use, the same redaction, the Lambda context and the request id on every line.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { MiddlewareObj } from '@middy/core';
import { SERVICE_NAME } from '../../lib/metrics.ts';
import { redactValue } from '../../functions/shared/redact.ts';

export const logger = new Logger({
  serviceName: SERVICE_NAME,
  jsonReplacerFn: (key: string, value: unknown) => redactValue(key, value),
});

/** The Lambda context (Powertools' middleware) and the request id the client got. */
export function logInvocation(): MiddlewareObj<{ requestContext?: { requestId?: string } }> {
  const context = injectLambdaContext(logger) as MiddlewareObj<{
    requestContext?: { requestId?: string };
  }>;
  return {
    ...context,
    before: async (request) => {
      await context.before?.(request);
      logger.setCorrelationId(request.event?.requestContext?.requestId);
    },
  };
}

/**
 * functions/shared/logger.ts as it was with Powertools Logger, for `npm run bench:cold-init --
 * --powertools` (which bundles each function with this in its place): the same exports the
 * functions use, the same redaction, the Lambda context and the request id on every line.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { SERVICE_NAME } from '../../lib/metrics.ts';
import { redactValue } from '../../functions/shared/redact.ts';
import { entry, scopeKey, type ScopeEntry } from '../../functions/shared/scope.ts';

/** Powertools keeps the invocation's fields on its logger: the scope holds nothing of them. */
const POWERTOOLS_FIELDS = scopeKey<undefined>('powertools-fields');

export const logger = Object.assign(
  new Logger({
    serviceName: SERVICE_NAME,
    jsonReplacerFn: (key: string, value: unknown) => redactValue(key, value),
  }),
  {
    /** The Lambda context (as Powertools' middleware adds it) and the request id the client got. */
    startInvocation(context: Context, correlationId?: string): Logger {
      logger.addContext(context);
      logger.setCorrelationId(correlationId);
      return logger;
    },
    /** As functions/shared/logger.ts's, for the invocation's scope (functions/shared/invocation.ts). */
    invocationFields(context: Context, correlationId?: string): ScopeEntry {
      logger.addContext(context);
      logger.setCorrelationId(correlationId);
      return entry(POWERTOOLS_FIELDS, undefined);
    },
  },
);

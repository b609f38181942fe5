/**
 * The functions' logger. Events are never logged whole (they carry the Authorization header);
 * anything logged goes through `redact` first.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { SERVICE_NAME } from '../../lib/metrics.ts';

export const logger = new Logger({ serviceName: SERVICE_NAME });

const SECRET_FIELDS = /authorization|api[-_]?key|token|secret|keyhash/i;

/** A copy of a flat record with every secret-looking field replaced. */
export function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    out[name] = SECRET_FIELDS.test(name) ? '[redacted]' : value;
  }
  return out;
}

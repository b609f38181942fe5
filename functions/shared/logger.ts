/**
 * The functions' logger (Powertools, JSON). Events are never logged whole (they carry the
 * Authorization header), and as a second line of defence every log record passes a replacer that
 * blanks secret-looking fields and anything shaped like an API key or a bearer credential.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { KEY_TEXT } from '../../lib/keys/api-key.ts';
import { SERVICE_NAME } from '../../lib/metrics.ts';

const SECRET_FIELDS = /authorization|api[-_]?key$|token|secret|keyhash|password/i;
const SECRET_VALUES = [KEY_TEXT, /\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*/gi];

/** A value with every secret-looking part replaced by `[redacted]`. */
export function redactValue(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_FIELDS.test(key)) return '[redacted]';
  if (typeof value !== 'string') return value;
  return SECRET_VALUES.reduce((text, pattern) => text.replace(pattern, '[redacted]'), value);
}

export const logger = new Logger({
  serviceName: SERVICE_NAME,
  jsonReplacerFn: (key: string, value: unknown) => redactValue(key, value),
});

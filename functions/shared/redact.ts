/**
 * What no log line may carry: fields named like secrets, and anything shaped like an API key or a
 * bearer or basic credential (functions/shared/logger.ts passes every record through it).
 */
import { KEY_TEXT } from '../../lib/keys/api-key.ts';

const SECRET_FIELDS = /authorization|api[-_]?key$|token|secret|keyhash|password/i;
const SECRET_VALUES = [KEY_TEXT, /\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*/gi];

/** A value with every secret-looking part replaced by `[redacted]`. */
export function redactValue(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_FIELDS.test(key)) return '[redacted]';
  if (typeof value !== 'string') return value;
  return SECRET_VALUES.reduce((text, pattern) => text.replace(pattern, '[redacted]'), value);
}

import { describe, expect, it } from 'vitest';
import { redactValue } from '../../functions/shared/logger.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';

describe('log redaction', () => {
  it('blanks secret-looking fields whatever their value', () => {
    for (const field of [
      'Authorization',
      'authorizationToken',
      'apiKey',
      'api_key',
      'keyHash',
      'secret',
    ]) {
      expect(redactValue(field, 'anything')).toBe('[redacted]');
    }
    expect(redactValue('keyId', 'key_abc')).toBe('key_abc');
  });

  it('blanks API keys and bearer credentials inside any string', () => {
    const key = generateApiKey();
    expect(redactValue('message', `refused ${key} twice`)).toBe('refused [redacted] twice');
    expect(redactValue('header', 'Bearer my-local-key')).toBe('[redacted]');
    expect(JSON.stringify({ nested: { line: `token was ${key}` } }, redactValue)).not.toContain(
      key,
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  apiKeyFromBody,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  KEY_PREFIX,
  keyHint,
  parseBearerToken,
} from '../../lib/keys/api-key.ts';

describe('API key format', () => {
  it('generates prefixed keys of 42 characters that pass their checksum', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const key of keys) {
      expect(key).toMatch(/^sok_[0-9A-Za-z]{38}$/);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('detects a mistyped character through the checksum', () => {
    const key = apiKeyFromBody('A'.repeat(32));
    const typo = `${key.slice(0, 10)}${key[10] === 'B' ? 'C' : 'B'}${key.slice(11)}`;
    expect(isWellFormedApiKey(typo)).toBe(false);
  });

  it('refuses tokens of another shape or too short', () => {
    expect(isWellFormedApiKey('my-local-test-key')).toBe(false);
    expect(isWellFormedApiKey(`${KEY_PREFIX}short`)).toBe(false);
  });

  it('hashes with SHA-256 and hints without revealing the secret part', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key);
    expect(keyHint(key)).toBe(`${key.slice(0, 8)}…`);
  });
});

describe('parseBearerToken', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer   abc', 'abc'],
    ['Bearer a.b-c_d~e+f/g==', 'a.b-c_d~e+f/g=='],
  ])('reads %j', (header, token) => {
    expect(parseBearerToken(header)).toBe(token);
  });

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Basic abc',
    'Token abc',
    'abc',
    'Bearer a b',
    'Bearer a,b',
    'Bearerabc',
  ])('refuses %j', (header) => {
    expect(parseBearerToken(header)).toBeUndefined();
  });
});

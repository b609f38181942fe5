/**
 * API keys: `sok_` + 32 random base62 characters + a 6-character base62 CRC-32 checksum.
 * The prefix makes a leaked key recognisable (secret scanners); the checksum lets the
 * authorizer refuse a mistyped or made-up key without a database read. Keys are stored only as
 * their SHA-256 hash: they carry 190 bits of entropy, so a fast hash is safe.
 */
import { createHash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const KEY_PREFIX = 'sok_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

function checksum(body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH);
}

/** Builds a well-formed key around a given random part (for fixed demo keys). */
export function apiKeyFromBody(randomPart: string): string {
  const body = `${KEY_PREFIX}${randomPart}`;
  return `${body}${checksum(body)}`;
}

export function generateApiKey(): string {
  return apiKeyFromBody(randomBase62(RANDOM_LENGTH));
}

/** True for a key in this service's format whose checksum matches. */
export function isWellFormedApiKey(token: string): boolean {
  if (!token.startsWith(KEY_PREFIX) || token.length <= KEY_PREFIX.length + CHECKSUM_LENGTH) {
    return false;
  }
  const body = token.slice(0, -CHECKSUM_LENGTH);
  return (
    /^[0-9A-Za-z]+$/.test(body.slice(KEY_PREFIX.length)) &&
    checksum(body) === token.slice(-CHECKSUM_LENGTH)
  );
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A public identifier for a key, safe to show in lists and logs. */
export function newKeyId(): string {
  return `key_${randomBase62(12)}`;
}

/** A hint that lets a person recognise a key without revealing it: `sok_AbCd…`. */
export function keyHint(key: string): string {
  return `${key.slice(0, KEY_PREFIX.length + 4)}…`;
}

/** True for text that starts like one of this service's keys (whatever its checksum). */
export function looksLikeApiKey(text: string): boolean {
  return text.startsWith(KEY_PREFIX);
}

const KEY_LIKE = new RegExp(`${KEY_PREFIX}[0-9A-Za-z]*…?`, 'g');

/**
 * Anything long enough to be a key or most of one (20 characters after the prefix, whatever its
 * checksum), as a pattern for the log redaction; a hint (`sok_AbCd…`) does not match.
 */
export const KEY_TEXT = new RegExp(`${KEY_PREFIX}[0-9A-Za-z]{20,}`, 'g');

/**
 * The text with everything that looks like a key cut to its hint: safe to print or log. A hint
 * is left as it is, so redacting twice changes nothing.
 */
export function redactApiKeys(text: string): string {
  return text.replace(KEY_LIKE, (match) => keyHint(match.replace(/…$/, '')));
}

/** The first well-formed key (checksum and all) inside the text, or undefined. */
export function findApiKey(text: string): string | undefined {
  return text
    .match(KEY_LIKE)
    ?.map((run) => run.replace(/…$/, ''))
    .find(isWellFormedApiKey);
}

/**
 * What a message must not carry as it is: C0 and C1 controls, DEL, bidirectional and
 * zero-width formatting characters, line and paragraph separators, a byte-order mark, lone
 * surrogates — and the quote and backslash that would blur where a quoted value ends.
 */
const UNSAFE_IN_MESSAGES =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"\\]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/gu;

/**
 * Input as an error message may quote it: keys cut to their hint, then at most `maxLength`
 * characters (an ellipsis marks the cut), with every character a reader could not see or that
 * would reorder the text shown as a `\uXXXX` escape (quote and backslash escaped too).
 */
export function quotableInput(text: string, maxLength = 40): string {
  const characters = [...redactApiKeys(text)];
  const kept = characters.slice(0, maxLength).join('');
  const escaped = kept.replace(UNSAFE_IN_MESSAGES, (c) =>
    c === '"' || c === '\\'
      ? `\\${c}`
      : `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );
  return characters.length > maxLength ? `${escaped}…` : escaped;
}

// RFC 9110 §11: credentials = auth-scheme [ 1*SP token68 ]; the scheme is case-insensitive.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * What an Authorization header holding one of this service's keys looks like: `Bearer` (any
 * case), spaces, `sok_` and 38 base62 characters. API Gateway's identity validation
 * expression (the TOKEN authorizer's `validationRegex`, a Java regex, anchored here) and the
 * local emulator refuse any other header with 401 before the authorizer runs.
 */
export const BEARER_KEY_PATTERN = `^[Bb][Ee][Aa][Rr][Ee][Rr] +${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}} *$`;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function parseBearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
}

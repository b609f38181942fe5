/**
 * Page tokens of the v2 list: opaque to clients, versioned, checked.
 *
 *     base64url( version (1 byte) | filter fingerprint (8) | position | checksum (8) )
 *
 * - version: how the rest is laid out and how the fingerprint is computed. Every version ever
 *   issued stays decodable (DECODERS), so a token issued before a deploy works after it.
 * - fingerprint: 8 bytes of SHA-256 of the filters' canonical text (./order-filter.ts; pageSize
 *   is not a filter: a client may change it between pages, as AIP-158 allows). A token sent
 *   with other filters than the page that issued it is refused, never read as another page.
 * - position: where the page ended, in the filter's sort order: the id (8 bytes, id + 2^63, big
 *   endian), after the ship date's instant in ship-date order (12 bytes, instant + 2^95).
 * - checksum: 8 bytes of SHA-256 of everything before it, in every version: a token altered or
 *   cut short is refused (a random change passes with probability 2^-64).
 *
 * No secret, and no encryption: every API key may read every order, so a forged position
 * reveals nothing that the key could not list anyway, and a client that builds its own token
 * only chooses where its own list starts. The checksum is there to catch damage, not forgery;
 * what a token must never do is read as a page of other filters, which the fingerprint refuses.
 */
import { createHash } from 'node:crypto';
import { INSTANT_MAX, INSTANT_MIN } from './instant.ts';
import {
  filterFingerprintV1,
  sortOrderOf,
  type OrderFilter,
  type PagePosition,
} from './order-filter.ts';

/** Why a token was refused, for the message of INVALID_PAGE_TOKEN. */
export type PageTokenProblem = 'malformed' | 'altered' | 'unknown-version' | 'other-filters';

export type PageTokenResult =
  { readonly position: PagePosition } | { readonly problem: PageTokenProblem };

const CURRENT_VERSION = 1;
const CHECKSUM_BYTES = 8;
const ID_OFFSET = 2n ** 63n;
const INSTANT_OFFSET = 2n ** 95n;

function checksum(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest().subarray(0, CHECKSUM_BYTES);
}

function unsignedBytes(value: bigint, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  let rest = value;
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return bytes;
}

function readUnsigned(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/** The token that continues a list of `filter` after `position`. */
export function encodePageToken(filter: OrderFilter, position: PagePosition): string {
  const inShipDateOrder = sortOrderOf(filter) === 'shipDate';
  if (inShipDateOrder !== (position.instant !== undefined)) {
    throw new Error('a position has an instant exactly when its list is in ship-date order');
  }
  const body = Buffer.concat([
    Buffer.of(CURRENT_VERSION),
    filterFingerprintV1(filter),
    ...(position.instant !== undefined
      ? [unsignedBytes(position.instant + INSTANT_OFFSET, 12)]
      : []),
    unsignedBytes(position.id + ID_OFFSET, 8),
  ]);
  return Buffer.concat([body, checksum(body)]).toString('base64url');
}

/** How each version is read, from the bytes between the version byte and the checksum. */
const DECODERS: Readonly<Record<number, (rest: Buffer, filter: OrderFilter) => PageTokenResult>> = {
  1: (rest, filter) => {
    if (!rest.subarray(0, 8).equals(filterFingerprintV1(filter))) {
      return { problem: 'other-filters' };
    }
    const position = rest.subarray(8);
    const inShipDateOrder = sortOrderOf(filter) === 'shipDate';
    if (position.length !== (inShipDateOrder ? 20 : 8)) return { problem: 'malformed' };
    const id = readUnsigned(position.subarray(-8)) - ID_OFFSET;
    if (!inShipDateOrder) return { position: { id } };
    const instant = readUnsigned(position.subarray(0, 12)) - INSTANT_OFFSET;
    // Only a token made by hand can hold an instant no date-time writes.
    if (instant < INSTANT_MIN || instant > INSTANT_MAX) return { problem: 'malformed' };
    return { position: { instant, id } };
  },
};

/** A token's position, if it is a token this service issued for `filter`. */
export function decodePageToken(token: string, filter: OrderFilter): PageTokenResult {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return { problem: 'malformed' };
  const bytes = Buffer.from(token, 'base64url');
  // Base64url has several spellings of the last bits: only the one this service writes reads.
  if (bytes.toString('base64url') !== token || bytes.length < 1 + CHECKSUM_BYTES) {
    return { problem: 'malformed' };
  }
  const body = bytes.subarray(0, -CHECKSUM_BYTES);
  if (!checksum(body).equals(bytes.subarray(-CHECKSUM_BYTES))) return { problem: 'altered' };
  const decode = DECODERS[body[0]!];
  if (!decode) return { problem: 'unknown-version' };
  return decode(body.subarray(1), filter);
}

/** Content negotiation by Accept-Encoding, as RFC 9110 §12.5.3 says. */
import { describe, expect, it } from 'vitest';
import { negotiateCoding, parseAcceptEncoding } from '../../lib/api/content-coding.ts';

describe('negotiateCoding', () => {
  it.each([
    ['no Accept-Encoding at all', undefined, 'identity'],
    ['an empty field (no coding wanted)', '', 'identity'],
    ['gzip only', 'gzip', 'gzip'],
    ['x-gzip, gzip by another name', 'x-gzip', 'gzip'],
    ['the codings in any case', 'GZip', 'gzip'],
    ['what curl --compressed sends: the service picks', 'deflate, gzip, br, zstd', 'zstd'],
    ['what browsers send', 'gzip, deflate, br, zstd', 'zstd'],
    ['gzip refused, br accepted', 'gzip;q=0, br', 'br'],
    ['the higher q-value', 'gzip;q=1.0, zstd;q=0.5', 'gzip'],
    ['a tie, broken by the service (compressed first)', 'gzip;q=0.5, identity;q=0.5', 'gzip'],
    ['anything: gzip, which every client decodes', '*', 'gzip'],
    ['anything but gzip', '*, gzip;q=0', 'br'],
    ['zstd named, anything else too: the named one', 'zstd, *', 'zstd'],
    ['br named below anything else', 'br;q=0.5, *', 'gzip'],
    ['only identity, explicitly', 'identity', 'identity'],
    ['unknown codings only: identity is still acceptable', 'compress, deflate', 'identity'],
    ['garbage', '???, ;;; ,', 'identity'],
    ['a malformed q-value drops its element', 'gzip;q=2, br;q=abc', 'identity'],
    ['everything refused but identity', '*;q=0, identity', 'identity'],
    ['identity refused, gzip accepted', 'identity;q=0, gzip', 'gzip'],
    ['whitespace around the parts', '  br ; q=0.8 ,gzip;q=0.9 ', 'gzip'],
  ])('%s: %j → %s', (_, field, coding) => {
    expect(negotiateCoding(field)).toBe(coding);
  });

  it.each([
    ['identity refused and nothing else listed', 'identity;q=0'],
    ['everything refused', '*;q=0'],
    ['every coding offered refused, identity too', 'zstd;q=0, br;q=0, gzip;q=0, identity;q=0'],
  ])('has nothing acceptable (406) for %s', (_, field) => {
    expect(negotiateCoding(field)).toBeUndefined();
  });

  it('counts the first mention of a coding listed twice', () => {
    expect([...parseAcceptEncoding('gzip;q=0, gzip;q=1')]).toEqual([['gzip', 0]]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatEntityTag,
  isConditional,
  notModified,
  parseIfNoneMatch,
  weakMatch,
  type EntityTag,
} from '../../lib/api/etag.ts';

const current: EntityTag = { weak: true, opaque: 'abc123' };

describe('parseIfNoneMatch', () => {
  it('reads an absent field as no precondition', () => {
    expect(parseIfNoneMatch(undefined)).toEqual({ kind: 'absent' });
    expect(isConditional(parseIfNoneMatch(undefined))).toBe(false);
  });

  it('reads one strong tag and one weak tag', () => {
    expect(parseIfNoneMatch('"abc"')).toEqual({
      kind: 'tags',
      tags: [{ weak: false, opaque: 'abc' }],
    });
    expect(parseIfNoneMatch('W/"abc"')).toEqual({
      kind: 'tags',
      tags: [{ weak: true, opaque: 'abc' }],
    });
  });

  it('reads a list with spaces, tabs and empty elements', () => {
    expect(parseIfNoneMatch(' , "a",W/"b" ,\t"c", ,')).toEqual({
      kind: 'tags',
      tags: [
        { weak: false, opaque: 'a' },
        { weak: true, opaque: 'b' },
        { weak: false, opaque: 'c' },
      ],
    });
  });

  it('reads a comma inside the quotes as part of the tag, not as a separator', () => {
    expect(parseIfNoneMatch('"a,b", "c"')).toEqual({
      kind: 'tags',
      tags: [
        { weak: false, opaque: 'a,b' },
        { weak: false, opaque: 'c' },
      ],
    });
  });

  it('reads the empty tag ""', () => {
    expect(parseIfNoneMatch('""')).toEqual({ kind: 'tags', tags: [{ weak: false, opaque: '' }] });
  });

  it('reads * (with surrounding spaces) as any representation', () => {
    expect(parseIfNoneMatch('*')).toEqual({ kind: 'any' });
    expect(parseIfNoneMatch('  *  ')).toEqual({ kind: 'any' });
  });

  it.each([
    ['an unquoted tag', 'abc'],
    ['a lower-case weak prefix', 'w/"abc"'],
    ['a weak prefix with a space', 'W/ "abc"'],
    ['an unterminated quote', '"abc'],
    ['text after a tag', '"abc" x'],
    ['two tags without a comma', '"a" "b"'],
    ['* among tags', '*, "abc"'],
    ['* twice', '*, *'],
    ['a space inside the quotes', '"a b"'],
    ['a control character inside the quotes', '"a\u0001b"'],
    ['DEL inside the quotes', '"a\u007fb"'],
    ['a character outside latin-1', '"a\u20acb"'],
    ['only empty elements', ' , ,'],
    ['the empty field', ''],
  ])('treats %s as no precondition (invalid, ignored)', (_, value) => {
    const parsed = parseIfNoneMatch(value);
    expect(parsed).toEqual({ kind: 'invalid' });
    expect(isConditional(parsed)).toBe(false);
    expect(notModified(parsed, current)).toBe(false);
  });

  it('accepts obs-text (latin-1 bytes 0x80-0xFF, as Node decodes header values)', () => {
    expect(parseIfNoneMatch('"caf\u00e9"')).toEqual({
      kind: 'tags',
      tags: [{ weak: false, opaque: 'caf\u00e9' }],
    });
  });

  it('reads back every list of tags it formats (property)', () => {
    const etagChar = fc
      .integer({ min: 0x21, max: 0xff })
      .filter((c) => c !== 0x22 && c !== 0x7f && (c < 0x7f || c >= 0x80))
      .map((c) => String.fromCharCode(c));
    const tag = fc.record({
      weak: fc.boolean(),
      opaque: fc.array(etagChar, { maxLength: 12 }).map((chars) => chars.join('')),
    });
    fc.assert(
      fc.property(
        fc.array(tag, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(',', ', ', ' ,\t'),
        (tags, sep) => {
          expect(parseIfNoneMatch(tags.map(formatEntityTag).join(sep))).toEqual({
            kind: 'tags',
            tags,
          });
        },
      ),
    );
  });
});

describe('notModified (If-None-Match on a GET)', () => {
  it('is true for a listed tag equal to the current one, weak or strong (weak comparison)', () => {
    expect(notModified(parseIfNoneMatch('W/"abc123"'), current)).toBe(true);
    expect(notModified(parseIfNoneMatch('"abc123"'), current)).toBe(true);
    expect(notModified(parseIfNoneMatch('"x", W/"abc123", "y"'), current)).toBe(true);
    expect(notModified(parseIfNoneMatch('"abc123"'), { weak: false, opaque: 'abc123' })).toBe(true);
  });

  it('is false when no listed tag matches', () => {
    expect(notModified(parseIfNoneMatch('W/"abc124"'), current)).toBe(false);
    expect(notModified(parseIfNoneMatch('"ABC123"'), current)).toBe(false);
    expect(notModified(parseIfNoneMatch('"x", "y"'), current)).toBe(false);
  });

  it('is true for * whenever the list exists, even while it has no tag', () => {
    expect(notModified(parseIfNoneMatch('*'), current)).toBe(true);
    expect(notModified(parseIfNoneMatch('*'), undefined)).toBe(true);
  });

  it('is false for any tag while the list has no tag, and when the field is absent', () => {
    expect(notModified(parseIfNoneMatch('W/"abc123"'), undefined)).toBe(false);
    expect(notModified(parseIfNoneMatch(undefined), current)).toBe(false);
  });

  it('compares only the opaque tags', () => {
    expect(weakMatch({ weak: true, opaque: 'a' }, { weak: false, opaque: 'a' })).toBe(true);
    expect(weakMatch({ weak: true, opaque: 'a' }, { weak: true, opaque: 'b' })).toBe(false);
  });
});

describe('formatEntityTag', () => {
  it('writes weak tags with W/ and both in quotes', () => {
    expect(formatEntityTag({ weak: true, opaque: 'abc' })).toBe('W/"abc"');
    expect(formatEntityTag({ weak: false, opaque: 'abc' })).toBe('"abc"');
  });
});

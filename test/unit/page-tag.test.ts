/**
 * The entity tag of a v2 page (lib/orders/page-tag.ts) and the list version's change time
 * (lib/dynamodb/list-version.ts listVersionOf): one tag by version per version and request for a
 * page of the table; none by version for a page of an index, whose tag is its content's, whatever
 * the time since the last change.
 */
import { describe, expect, it } from 'vitest';
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { listVersionOf } from '../../lib/dynamodb/list-version-item.ts';
import {
  INDEX_SETTLE_MS,
  pageContentTag,
  pageEntityTag,
  type PageTagInput,
} from '../../lib/orders/page-tag.ts';

const NOW = 1_800_000_000_000;
const none = new Set<string>();
const base: PageTagInput = {
  version: { tag: 'v1', lastChangeAt: NOW - INDEX_SETTLE_MS, recentWrites: none },
  filter: { statuses: ['pending'] },
  pageSize: 50,
  plan: { consistent: true },
};

describe('the tag of a page', () => {
  it('is 22 base64url characters, the same for the same version and request', () => {
    const tag = pageEntityTag(base);
    expect(tag).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(pageEntityTag({ ...base })).toBe(tag);
  });

  it('differs with the version, the filters, the start and the page size', () => {
    const tags = [
      pageEntityTag(base),
      pageEntityTag({ ...base, version: { tag: 'v2', lastChangeAt: 0, recentWrites: none } }),
      pageEntityTag({ ...base, filter: { statuses: ['shipped'] } }),
      pageEntityTag({ ...base, start: { id: 7n } }),
      pageEntityTag({ ...base, start: { id: 8n } }),
      pageEntityTag({ ...base, pageSize: 49 }),
      pageEntityTag({
        ...base,
        filter: { shipDate: { from: 0n } },
        start: { instant: 1n, id: 7n },
      }),
      // In date order a start is an instant and an id: the same id at another instant is
      // another page.
      pageEntityTag({
        ...base,
        filter: { shipDate: { from: 0n } },
        start: { instant: 2n, id: 7n },
      }),
    ];
    expect(new Set(tags).size).toBe(tags.length);
  });

  it('is absent while a write is in flight (no version tag)', () => {
    expect(
      pageEntityTag({ ...base, version: { tag: undefined, recentWrites: none } }),
    ).toBeUndefined();
    expect(
      pageEntityTag({
        ...base,
        plan: { consistent: true },
        version: { tag: undefined, recentWrites: none },
      }),
    ).toBeUndefined();
  });

  it('of a page read from an index is never by version: its content is its tag, however settled the store', () => {
    const index = { ...base, plan: { consistent: false } };
    expect(pageEntityTag(index)).toBeUndefined();
    expect(
      pageEntityTag({ ...index, version: { tag: 'v1', lastChangeAt: 0, recentWrites: none } }),
    ).toBeUndefined();
    // A page read strongly consistent (the table) is tagged by version, settled or not.
    expect(
      pageEntityTag({ ...base, version: { tag: 'v1', lastChangeAt: NOW, recentWrites: none } }),
    ).toBeDefined();
    expect(pageEntityTag({ ...base, version: { tag: 'v1', recentWrites: 'all' } })).toBeDefined();
  });

  it('by content: the same body, the same tag; another body, another', () => {
    expect(pageContentTag('{"orders":[]}')).toBe(pageContentTag('{"orders":[]}'));
    expect(pageContentTag('{"orders":[]}')).not.toBe(pageContentTag('{"orders":[{"id":1}]}'));
    expect(pageContentTag('{"orders":[]}')).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

describe("the list version's change time", () => {
  const key = { shard: new NumberValue('-1'), id: new NumberValue('0') };

  it('is the latest change recorded, 0 when nothing changed', () => {
    expect(listVersionOf([undefined, undefined], NOW)).toEqual({
      tag: expect.any(String) as unknown,
      lastChangeAt: 0,
      recentWrites: new Set(),
    });
    const version = listVersionOf(
      [
        { ...key, n: 'a', c: new NumberValue(String(NOW - 5)) },
        { ...key, n: 'b', c: new NumberValue(String(NOW - 9)) },
        undefined,
      ],
      NOW,
    );
    expect(version.lastChangeAt).toBe(NOW - 5);
  });

  it('counts a write whose release never came as changed when its lease ended', () => {
    const version = listVersionOf(
      [
        {
          ...key,
          n: 'a',
          c: new NumberValue(String(NOW - 50)),
          w_x: new NumberValue(String(NOW - 1)),
        },
      ],
      NOW,
    );
    expect(version).toMatchObject({ lastChangeAt: NOW - 1 });
    expect(version.tag).toBeDefined();
  });

  it('is unknown for a nonce without a change time (an item with no `c`)', () => {
    const version = listVersionOf(
      [
        { ...key, n: 'a' },
        { ...key, n: 'b', c: 1 },
      ],
      NOW,
    );
    expect(version.tag).toBeDefined();
    expect(version.lastChangeAt).toBeUndefined();
  });

  it('does not enter the tag: stamping a change time changes no v1 tag', () => {
    const without = listVersionOf([{ ...key, n: 'a' }, undefined], NOW);
    const stamped = listVersionOf([{ ...key, n: 'a', c: new NumberValue('123') }, undefined], NOW);
    expect(stamped.tag).toBe(without.tag);
    expect(listVersionOf([{ ...key, n: 'b', c: 123 }], NOW).tag).not.toBe(
      listVersionOf([{ ...key, n: 'a', c: 123 }], NOW).tag,
    );
  });
});

describe("the list version's recent writes (what a page reads again by key)", () => {
  const key = { shard: new NumberValue('-1'), id: new NumberValue('0') };
  const at = (ms: number) => new NumberValue(String(ms));
  const settled = NOW - INDEX_SETTLE_MS;

  it('are the orders noted or being written less than INDEX_SETTLE_MS ago', () => {
    const version = listVersionOf(
      [
        {
          ...key,
          n: 'a',
          c: at(NOW - 5),
          r_7: at(NOW - 5),
          'r_-9223372036854775808': at(settled + 1),
          r_8: at(settled),
        },
        { ...key, n: 'b', c: at(NOW - 20_000), 'w_abc#12': at(NOW + 1_000) },
      ],
      NOW,
    );
    expect(version.recentWrites).toEqual(new Set(['7', '-9223372036854775808', '12']));
    // The write of order 12 is in flight: no tag.
    expect(version.tag).toBeUndefined();
  });

  it('count a write whose lease ended less than INDEX_SETTLE_MS ago (it may have landed then)', () => {
    const version = listVersionOf([{ ...key, 'w_dead#5': at(NOW - 1) }], NOW);
    expect(version.recentWrites).toEqual(new Set(['5']));
    expect(version.tag).toBeDefined();
    expect(listVersionOf([{ ...key, 'w_dead#5': at(settled) }], NOW).recentWrites).toEqual(
      new Set(),
    );
  });

  it('are all orders after a write of many (`o`, or an entry that names none)', () => {
    expect(listVersionOf([{ ...key, n: 'a', c: at(NOW - 1), o: at(NOW - 1) }], NOW)).toMatchObject({
      recentWrites: 'all',
    });
    expect(listVersionOf([{ ...key, w_many: at(NOW + 5) }], NOW).recentWrites).toBe('all');
    expect(listVersionOf([{ ...key, n: 'a', c: at(settled), o: at(settled) }], NOW)).toMatchObject({
      recentWrites: new Set(),
    });
  });

  it('are all orders when a time cannot be read or a change has none', () => {
    expect(listVersionOf([{ ...key, n: 'a', c: at(NOW), r_1: 'soon' }], NOW).recentWrites).toBe(
      'all',
    );
    expect(listVersionOf([{ ...key, n: 'a' }], NOW).recentWrites).toBe('all');
  });

  it('do not enter the tag but with the nonce they are written with', () => {
    const plain = listVersionOf([{ ...key, n: 'a', c: at(NOW - 1) }], NOW);
    const noted = listVersionOf([{ ...key, n: 'a', c: at(NOW - 1), r_3: at(NOW - 1) }], NOW);
    // A note comes only with a new nonce, so hashing it costs no 304 (and old readers hash it).
    expect(noted.tag).not.toBe(plain.tag);
  });
});

/**
 * Entity tags (RFC 9110 §8.8.3) and the If-None-Match precondition (§13.1.2), as pure
 * functions: the list's validator and the one place that reads what a client sends.
 *
 *     If-None-Match = "*" / #entity-tag
 *     entity-tag    = [ "W/" ] DQUOTE *etagc DQUOTE
 *     etagc         = %x21 / %x23-7E / obs-text
 *
 * A comma is an etagc, so a list is read tag by tag, never split on commas. Empty list
 * elements are accepted (RFC 9110 §5.6.1). A field value that does not follow the grammar —
 * an unquoted tag, a `*` among tags, anything after a tag but a comma — is not a precondition
 * the service can evaluate: it is ignored, as if absent, and the request is answered in full.
 * Ignoring can never produce a wrong 304; guessing at what a malformed tag meant could.
 */

export interface EntityTag {
  readonly weak: boolean;
  /** The characters between the quotes. */
  readonly opaque: string;
}

export type IfNoneMatch =
  | { readonly kind: 'absent' }
  /** The field was sent but does not follow the grammar: treated as absent. */
  | { readonly kind: 'invalid' }
  | { readonly kind: 'any' }
  | { readonly kind: 'tags'; readonly tags: readonly EntityTag[] };

/** etagc: %x21 / %x23-7E / obs-text (%x80-FF); never `"`, a control, a space or DEL. */
function isEtagChar(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

const isOws = (c: string | undefined) => c === ' ' || c === '\t';

/** The field as a client sent it (several fields joined with ", "), or undefined when absent. */
export function parseIfNoneMatch(value: string | undefined): IfNoneMatch {
  if (value === undefined) return { kind: 'absent' };
  const text = value.trim();
  if (text === '*') return { kind: 'any' };
  const tags: EntityTag[] = [];
  let i = 0;
  const skip = (): void => {
    while (isOws(text[i]) || text[i] === ',') i++;
  };
  skip();
  while (i < text.length) {
    const weak = text.startsWith('W/', i);
    if (weak) i += 2;
    if (text[i] !== '"') return { kind: 'invalid' };
    const end = text.indexOf('"', i + 1);
    if (end < 0) return { kind: 'invalid' };
    const opaque = text.slice(i + 1, end);
    for (let c = 0; c < opaque.length; c++) {
      if (!isEtagChar(opaque.charCodeAt(c))) return { kind: 'invalid' };
    }
    tags.push({ weak, opaque });
    i = end + 1;
    while (isOws(text[i])) i++;
    if (i < text.length && text[i] !== ',') return { kind: 'invalid' };
    skip();
  }
  // Only empty elements (", ,"): no tag a representation could match, and not the grammar.
  return tags.length > 0 ? { kind: 'tags', tags } : { kind: 'invalid' };
}

/** The field value of a tag: `W/"…"` or `"…"`. */
export function formatEntityTag(tag: EntityTag): string {
  return `${tag.weak ? 'W/' : ''}"${tag.opaque}"`;
}

/** Weak comparison (RFC 9110 §8.8.3.2): the opaque tags are equal, weak or strong alike. */
export function weakMatch(a: EntityTag, b: EntityTag): boolean {
  return a.opaque === b.opaque;
}

/**
 * Whether If-None-Match is false for a GET (RFC 9110 §13.1.2), so that the answer is 304 Not
 * Modified: `*` while a current representation exists, or a listed tag that matches the
 * current one under the weak comparison (which §13.1.2 requires for If-None-Match). `current`
 * is undefined when the representation has no tag right now (nothing but `*` can match then).
 */
export function notModified(condition: IfNoneMatch, current: EntityTag | undefined): boolean {
  if (condition.kind === 'any') return true;
  if (condition.kind !== 'tags' || current === undefined) return false;
  return condition.tags.some((tag) => weakMatch(tag, current));
}

/** Whether the request carries a precondition the service evaluates. */
export function isConditional(condition: IfNoneMatch): boolean {
  return condition.kind === 'any' || condition.kind === 'tags';
}

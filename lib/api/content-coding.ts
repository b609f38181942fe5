/**
 * Content negotiation of the list's body by `Accept-Encoding` (RFC 9110 §12.5.3): which of the
 * codings the service offers a client accepts, by q-value, the service's preference breaking
 * ties. API Gateway does no content coding for streamed responses, so the function does it.
 */

/** The codings offered, in the service's order of preference (best bytes for the CPU first). */
export const CONTENT_CODINGS = ['zstd', 'br', 'gzip'] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];
export type Coding = ContentCoding | 'identity';

/** The codings `*` stands for, in order: gzip, which every client decodes, first. */
const WILDCARD_PREFERENCE: readonly ContentCoding[] = ['gzip', 'br', 'zstd'];

/** q-values of an Accept-Encoding field: coding (lower case) → q in [0, 1]. */
export function parseAcceptEncoding(field: string): Map<string, number> {
  const weights = new Map<string, number>();
  for (const element of field.split(',')) {
    const [token = '', ...parameters] = element.split(';').map((part) => part.trim());
    if (!/^(\*|[!#$%&'*+.^_`|~0-9A-Za-z-]+)$/.test(token)) continue;
    let q = 1;
    for (const parameter of parameters) {
      const qValue = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i.exec(parameter);
      if (qValue) q = Number(qValue[1]);
      // A malformed weight makes the whole element unusable.
      else if (/^q=/i.test(parameter)) q = Number.NaN;
    }
    if (Number.isNaN(q)) continue;
    const coding = token.toLowerCase() === 'x-gzip' ? 'gzip' : token.toLowerCase();
    // Listed twice: the first one counts.
    if (!weights.has(coding)) weights.set(coding, q);
  }
  return weights;
}

/**
 * The coding to answer with for an `Accept-Encoding` field (undefined when absent), or
 * undefined when nothing the service can send is acceptable (then 406):
 * - no field: identity (any coding would be acceptable; identity is what every client reads);
 * - a coding is acceptable with its own q, else with `*`'s, else not at all; identity with its
 *   own q, else `*`'s, else always — unless excluded (`identity;q=0`, or `*;q=0` without it) —
 *   but when not listed, at the lowest weight the field gives (a client that lists codings
 *   prefers them to none, as common practice reads it);
 * - the highest q wins; on a tie, compressed codings before identity: those the field names, in
 *   CONTENT_CODINGS order, then those it accepts only through `*`, gzip first
 *   (WILDCARD_PREFERENCE): a client, or a proxy speaking for its clients (Prism sends `*`), that
 *   names no coding gets the one every client decodes.
 * Codings the service does not know are ignored.
 */
export function negotiateCoding(
  field: string | undefined,
  offered: readonly ContentCoding[] = CONTENT_CODINGS,
): Coding | undefined {
  if (field === undefined) return 'identity';
  const weights = parseAcceptEncoding(field);
  const star = weights.get('*');
  const lowest = Math.min(1, ...[...weights.values()].filter((q) => q > 0));
  const weightOf = (coding: Coding): number =>
    weights.get(coding) ?? star ?? (coding === 'identity' ? lowest : 0);
  const named = offered.filter((coding) => weights.has(coding));
  const wildcard = WILDCARD_PREFERENCE.filter((c) => offered.includes(c) && !weights.has(c));
  let best: { coding: Coding; q: number } | undefined;
  for (const coding of [...named, ...wildcard, 'identity' as const]) {
    const q = weightOf(coding);
    if (q > 0 && (best === undefined || q > best.q)) best = { coding, q };
  }
  return best?.coding;
}

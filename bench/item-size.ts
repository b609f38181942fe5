/**
 * What DynamoDB counts as an item's size, by its documented rules ("Item sizes and formats" in
 * the DynamoDB developer guide), for items in the wire format (`{"S": "…"}`, `{"N": "…"}`…):
 * each attribute is its name's UTF-8 bytes plus its value's — a string its UTF-8 bytes, a number
 * one byte per two significant digits plus one, a boolean or null 1 byte, a map or list 3 bytes
 * plus 1 byte and the size of each element, a set the sum of its elements. The cost benchmark
 * sizes the items of failed conditional writes (whose capacity DynamoDB does not report) and the
 * orders of its floors with it.
 */

/** An attribute value in DynamoDB's JSON wire format. */
export type WireValue =
  | { readonly S: string }
  | { readonly N: string }
  | { readonly B: string }
  | { readonly BOOL: boolean }
  | { readonly NULL: boolean }
  | { readonly SS: readonly string[] }
  | { readonly NS: readonly string[] }
  | { readonly BS: readonly string[] }
  | { readonly M: Readonly<Record<string, WireValue>> }
  | { readonly L: readonly WireValue[] };

/** A number's size: 1 byte per two significant digits (leading and trailing zeros dropped), + 1. */
export function numberSize(text: string): number {
  const digits = text
    .replace(/^[+-]/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

/** Bytes of base64 text once decoded (binary values travel as base64). */
function binarySize(base64: string): number {
  return Buffer.byteLength(base64, 'base64');
}

export function valueSize(value: WireValue): number {
  if ('S' in value) return Buffer.byteLength(value.S);
  if ('N' in value) return numberSize(value.N);
  if ('B' in value) return binarySize(value.B);
  if ('BOOL' in value || 'NULL' in value) return 1;
  if ('SS' in value) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
  if ('NS' in value) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if ('BS' in value) return value.BS.reduce((sum, b) => sum + binarySize(b), 0);
  if ('M' in value) {
    return Object.entries(value.M).reduce(
      (sum, [name, element]) => sum + Buffer.byteLength(name) + valueSize(element) + 1,
      3,
    );
  }
  return value.L.reduce((sum, element) => sum + valueSize(element) + 1, 3);
}

/** An item's size: its attributes' names and values. */
export function itemSize(item: Readonly<Record<string, WireValue>>): number {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value),
    0,
  );
}

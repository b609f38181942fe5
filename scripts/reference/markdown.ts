/**
 * Markdown as the reference pages write it: tables (Prettier aligns them when a page is written)
 * and GitHub's anchors. test/support/markdown.ts reads the anchors the same way.
 */

/** A Markdown table cell: its pipes escaped. */
const cell = (text: string) => text.replace(/\|/g, '\\|');

/** A Markdown table, header first (Prettier aligns it when the page is written). */
export function table(rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(rows[0]!), line(rows[0]!.map(() => '---')), ...rows.slice(1).map(line)].join('\n');
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
export function githubAnchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

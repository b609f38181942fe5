/**
 * The repository's Markdown documents as the documentation tests read them: which files there
 * are, their headings' anchors (as GitHub makes them) and their relative links.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { githubAnchor } from '../../scripts/reference/markdown.ts';

/** Folders that hold no document of the repository's own. */
const SKIPPED = new Set(['node_modules', 'cdk.out', 'dist', 'coverage', '.git', '.local']);

/** The repository's Markdown files, relative to its root. */
export function markdownFiles(dir = PROJECT_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) {
      return SKIPPED.has(entry.name) || entry.name.startsWith('.')
        ? []
        : markdownFiles(join(dir, entry.name));
    }
    return entry.name.endsWith('.md') ? [relative(PROJECT_ROOT, join(dir, entry.name))] : [];
  });
}

/** The text of a Markdown file without its fenced code blocks and inline code. */
function prose(text: string): string {
  return text.replace(/^ *```[\s\S]*?^ *```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The headings of a Markdown text, outside its code blocks. */
function headings(text: string): string[] {
  return text
    .replace(/^ *```[\s\S]*?^ *```/gm, '')
    .split('\n')
    .flatMap((line) => /^#{1,6} (.*)$/.exec(line)?.slice(1) ?? []);
}

/** The anchors of a document's headings; a repeated heading gets `-1`, `-2`… as on GitHub. */
export function anchors(text: string): string[] {
  const seen = new Map<string, number>();
  return headings(text).map((heading) => {
    const base = githubAnchor(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return count === 0 ? base : `${base}-${count}`;
  });
}

/** The relative links of a document: `[text](target#anchor)`, outside code. */
export function links(text: string): { target: string; anchor: string | undefined }[] {
  return [...prose(text).matchAll(/\]\(([^)#\s]*)(?:#([^)\s]*))?\)/g)]
    .map(([, target, anchor]) => ({ target: target ?? '', anchor }))
    .filter(({ target }) => !/^[a-z]+:/i.test(target));
}

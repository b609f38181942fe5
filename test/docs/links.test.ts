/**
 * Every relative link of every Markdown file of the repository resolves: the file (or folder) it
 * names exists, and the heading its anchor names is one of that document's, as GitHub makes
 * anchors of headings. Links to other sites are not followed. And every page says whom it is
 * for, in the first paragraph under its title. The documents are the repository's
 * own Markdown files, found on disk (node_modules, build output and the test runs' directories
 * left out), so a new page is checked from its first commit.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { anchors, links, markdownFiles } from '../support/markdown.ts';

const DOCUMENTS = markdownFiles().sort();

describe('the links of the Markdown files', () => {
  it('are found in every document of the repository', () => {
    expect(DOCUMENTS).toEqual(
      expect.arrayContaining([
        'README.md',
        'CHANGELOG.md',
        'CONTRIBUTING.md',
        'bench/README.md',
        'client/README.md',
        'docs/deploy.md',
      ]),
    );
  });

  it.each(DOCUMENTS)('%s: each names a file, and a heading, that exist', (file) => {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
    for (const { target, anchor } of links(text)) {
      const path =
        target === '' ? join(PROJECT_ROOT, file) : join(PROJECT_ROOT, file, '..', target);
      const shown = `${file} → ${target}${anchor ? `#${anchor}` : ''}`;
      expect(existsSync(path), shown).toBe(true);
      if (anchor && path.endsWith('.md') && statSync(path).isFile()) {
        expect(anchors(readFileSync(path, 'utf8')), shown).toContain(anchor);
      }
    }
  });
});

describe('every Markdown file', () => {
  it.each(DOCUMENTS)('%s: says whom it is for in its first lines ("For …")', (file) => {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
    const firstParagraph = text
      .split('\n')
      .slice(1)
      .find((line) => line.trim() !== '');
    expect(firstParagraph, file).toMatch(/^For /);
  });
});

/** Finding the oldest supported Node on PATH wherever it is installed (test/support/oldest-node.ts). */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findNodeOnPath } from '../support/oldest-node.ts';

/** A directory holding a `node` that prints `version`, as nvm, Volta or Homebrew would install one. */
function fakeNode(root: string, name: string, version: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  const file = join(dir, 'node');
  writeFileSync(file, `#!/bin/sh\necho ${version}\n`);
  chmodSync(file, 0o755);
  return dir;
}

describe('the oldest Node on PATH', () => {
  const root = mkdtempSync(join(tmpdir(), 'oldest-node-'));
  const node24 = fakeNode(root, 'project-bin', 'v24.21.0');
  const node20 = fakeNode(root, 'nvm-20', 'v20.20.2');
  const node22 = fakeNode(root, 'volta-22', 'v22.1.0');
  const empty = join(root, 'empty');
  mkdirSync(empty);

  it('passes over other majors (the project Node 24 first on PATH) and finds Node 20 wherever it is', () => {
    const path = [empty, node24, node22, node20].join(delimiter);
    expect(findNodeOnPath(20, path)).toEqual({ file: join(node20, 'node'), version: 'v20.20.2' });
  });

  it('finds none when PATH has no Node 20, or nothing at all', () => {
    expect(findNodeOnPath(20, [node24, node22, empty].join(delimiter))).toBeUndefined();
    expect(findNodeOnPath(20, '')).toBeUndefined();
  });
});

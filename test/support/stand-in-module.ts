/**
 * A handler module of a test's own for the local API's containers (ContainerPool's `entries`,
 * which load a module by its path): its source written to a folder of its own, removed by
 * `remove`. Plain JavaScript; the `awslambda` global is there when it loads, as in Lambda.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function standInModule(source: string): { readonly path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'stand-in-handler-'));
  const path = join(dir, 'handler.mjs');
  writeFileSync(path, source);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

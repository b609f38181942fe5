/**
 * The oldest Node the client promises to run on (its `engines`: Node 20), found on PATH wherever
 * it is installed (a system package, nvm, Homebrew, Volta): the first `node` on PATH whose major
 * version is 20. npm puts the project's own Node 24 first on PATH, so it is passed over.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const OLDEST_NODE_MAJOR = 20;

function versionOf(file: string): string | undefined {
  try {
    if (!statSync(file).isFile()) return undefined;
    accessSync(file, constants.X_OK);
    return execFileSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 }).trim();
  } catch {
    return undefined;
  }
}

/** The path of the first `node` on `path` whose major version is `major`, if any. */
export function findNodeOnPath(
  major: number = OLDEST_NODE_MAJOR,
  path: string = process.env.PATH ?? '',
): { file: string; version: string } | undefined {
  const seen = new Set<string>();
  for (const dir of path.split(delimiter)) {
    if (dir === '' || seen.has(dir)) continue;
    seen.add(dir);
    const file = join(dir, 'node');
    const version = versionOf(file);
    if (version?.startsWith(`v${major}.`)) return { file, version };
  }
  return undefined;
}

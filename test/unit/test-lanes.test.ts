/**
 * `npm test` runs its test files in two vitests (test/run-all.ts): each file must run in exactly
 * one. The long files once ran in both (a CLI `--exclude` does not reach a project that sets its
 * own `exclude`): two minutes of a worker's time spent again.
 * The run order names files too: each must exist.
 */
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONG_FILES, TEST_LANES } from '../support/long-files.ts';
import { HEAVY_FILES } from '../support/run-order.ts';

const PROJECT_ROOT = join(import.meta.dirname, '..', '..');
const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');

/** The files a `vitest run` with these arguments would run (vitest's own listing). */
function filesOf(args: readonly string[]): string[] {
  // `--json` last: it takes a path to write to when one follows it.
  const out = execFileSync(process.execPath, [VITEST, 'list', ...args, '--filesOnly', '--json'], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const listed = JSON.parse(out) as { file: string }[];
  return listed.map(({ file }) => relative(PROJECT_ROOT, file)).sort();
}

let allFiles: string[] | undefined;
const everyFile = () => (allFiles ??= filesOf([]));

describe("npm test's two vitests", () => {
  it('run every test file once: the long files in one, all the others in the other', () => {
    const all = everyFile();
    const long = filesOf(TEST_LANES.long);
    const rest = filesOf(TEST_LANES.rest);
    expect(all.length).toBeGreaterThan(50);
    // No file in two projects.
    expect(all.filter((file, at) => all.indexOf(file) !== at)).toEqual([]);
    expect(long).toEqual([...LONG_FILES].sort());
    expect(rest.filter((file) => long.includes(file))).toEqual([]);
    expect([...long, ...rest].sort()).toEqual(all);
  });
});

describe('the run order (test/support/run-order.ts)', () => {
  it('names only test files that exist, each once: a renamed file would lose its place silently', () => {
    expect(HEAVY_FILES.filter((file) => !everyFile().includes(file))).toEqual([]);
    expect(HEAVY_FILES.filter((file, at) => HEAVY_FILES.indexOf(file) !== at)).toEqual([]);
    expect(HEAVY_FILES.filter((file) => LONG_FILES.includes(file))).toEqual([]);
  });
});

/**
 * The test files that share their worker's modules must not change what a module reads as it
 * loads: those that do are listed in test/support/isolated-files.ts, and run isolated.
 */
import { existsSync, globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ISOLATED_FILES } from '../support/isolated-files.ts';

const PROJECT_ROOT = join(import.meta.dirname, '..', '..');

/** What changes the environment or the module graph for the modules a file loads after it. */
const CHANGES_LOAD_TIME_STATE = [
  /process\.env\.\w+\s*=(?!=)/,
  /process\.env\[[^\]]+\]\s*=(?!=)/,
  /Object\.assign\(\s*process\.env/,
  /delete process\.env/,
  /vi\.(mock|doMock|stubEnv|stubGlobal)\(/,
  // local/local-stack.ts: sets the functions' environment, then loads their modules.
  /\bloadFunctions\(/,
];

const sharedFiles = () =>
  globSync('test/**/*.test.ts', { cwd: PROJECT_ROOT }).filter(
    (file) => !file.startsWith('test/unit/') && !file.startsWith('test/ci/'),
  );

describe('the test files that run isolated', () => {
  it('include every file that changes what a module reads as it loads', () => {
    const changing = sharedFiles().filter((file) => {
      const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
      return CHANGES_LOAD_TIME_STATE.some((pattern) => pattern.test(text));
    });
    expect(changing.length).toBeGreaterThan(0);
    expect(changing.filter((file) => !ISOLATED_FILES.includes(file))).toEqual([]);
  });

  it('are files that exist', () => {
    expect(ISOLATED_FILES.filter((file) => !existsSync(join(PROJECT_ROOT, file)))).toEqual([]);
  });

  it('recognises a change to the environment as it is written in the tests', () => {
    const changes = (line: string) => CHANGES_LOAD_TIME_STATE.some((p) => p.test(line));
    expect(changes("process.env.LOG_LEVEL = 'INFO';")).toBe(true);
    expect(changes('Object.assign(process.env, tableEnv(t.tables));')).toBe(true);
    expect(changes("vi.mock('../../lib/x.ts');")).toBe(true);
    expect(changes('const functions = await loadFunctions({ endpoint, tables });')).toBe(true);
    expect(changes("const ci = process.env.CI === 'true';")).toBe(false);
    expect(changes('env: { ...process.env, LOG_LEVEL: "ERROR" },')).toBe(false);
  });
});

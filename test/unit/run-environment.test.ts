/** A test run's temporary directory (test/support/run-environment.ts): its processes' only one, gone when it ends. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const MODULE = join(import.meta.dirname, '..', 'support', 'run-environment.ts');

describe("a test run's temporary directory", () => {
  it('holds what the run and its child processes write there, and is removed when the run ends', () => {
    // A run in miniature: it takes its directory, writes a file, and has a child write one.
    const script = `
      import { execFileSync } from 'node:child_process';
      import { writeFileSync } from 'node:fs';
      import { tmpdir } from 'node:os';
      import { join } from 'node:path';
      const { ownTemporaryDirectory } = await import(${JSON.stringify(MODULE)});
      const directory = ownTemporaryDirectory();
      writeFileSync(join(tmpdir(), 'own.txt'), 'x');
      const child = execFileSync(process.execPath, ['-p', 'require("node:os").tmpdir()']).toString().trim();
      console.log(JSON.stringify({ directory, child, cache: process.env.NODE_COMPILE_CACHE }));
    `;
    const env = { ...process.env };
    delete env.NODE_COMPILE_CACHE;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env,
    }).toString();
    const { directory, child, cache } = JSON.parse(out) as {
      directory: string;
      child: string;
      cache: string;
    };
    expect(child).toBe(directory);
    expect(directory).toMatch(/store-orders-test-/);
    expect(existsSync(directory)).toBe(false);
    // The compile cache is not in it: it serves the next run.
    expect(cache).toMatch(/store-orders-node-compile-cache$/);
    expect(cache).not.toContain(directory);
  });
});

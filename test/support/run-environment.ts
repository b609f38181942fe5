/** The environment a test run gives its processes. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The tests start hundreds of Node processes (the CLI, npm start, the smoke suite): Node's
 * compile cache (V8 code cache, keyed by each file's contents) halves their start-up
 * (admin/cli.ts: 0.5 s → 0.26 s). Set once, before anything changes TMPDIR; the test processes
 * inherit it. It stays between runs, in the system's temporary directory.
 */
export function useCompileCache(): void {
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'store-orders-node-compile-cache');
}

/**
 * The run's temporary files (state files, synthesized templates, fake installs) go to a directory
 * of its own, removed when the run ends: a run used to leave about 80 directories in /tmp. Node's
 * compile cache stays in the system's, to serve the next run.
 */
export function ownTemporaryDirectory(): string {
  useCompileCache();
  const directory = mkdtempSync(join(tmpdir(), 'store-orders-test-'));
  process.env.TMPDIR = directory;
  process.on('exit', () => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/**
 * One `cdk synth` of the checked-in settings for the whole test run: the files that run a stage as
 * synthesized (the first-deploy and upgrade rehearsals) share it instead of each bundling the same
 * code again. The first file to ask synthesizes, under a lock (a directory made atomically); the
 * others wait for it. It lives in the run's temporary directory (TMPDIR, which test/run-all.ts
 * sets: test/support/run-environment.ts ownTemporaryDirectory), so a run never sees another's.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StageName } from '../../lib/deployment.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { synthesize } from '../../local/synth.ts';

/** The run's synthesized cloud assembly of the checked-in settings (both stages, bundled). */
export async function sharedAssembly(): Promise<string> {
  const dir = join(tmpdir(), 'store-orders-assembly');
  const done = join(dir, 'package.json');
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(done)) return dir;
    try {
      mkdirSync(lock);
    } catch {
      // Another file synthesizes: wait for it.
      await sleep(250);
      continue;
    }
    try {
      // synthesize() writes package.json last: its presence says the assembly is whole.
      if (!existsSync(done)) await synthesize({ outDir: dir });
      return dir;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** A synthesis of templates only (no bundling), in-process in a child of its own. */
export interface TemplatesRequest {
  /** The whole app, checks included (`app`), or one stage, quickly (its templates only). */
  readonly kind: 'app' | StageName;
  /** Settings over cdk.json's (`<stage>:<key>` values). */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly outDir: string;
}

const TEMPLATES_SCRIPT = join(import.meta.dirname, 'synthesize-templates.ts');

/**
 * Synthesizes templates without bundling, each request into its directory, in one plain Node
 * process (aws-cdk-lib loaded once, and not through the test runner's module loader, which
 * takes many times longer to evaluate it); rejects with what synth said of a request that failed.
 */
export async function synthesizeTemplates(requests: readonly TemplatesRequest[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      [TEMPLATES_SCRIPT, JSON.stringify(requests)],
      { cwd: PROJECT_ROOT, maxBuffer: 16 * 1024 * 1024 },
      (error, _stdout, stderr) =>
        error ? reject(new Error(`synth failed: ${stderr.trim() || error.message}`)) : resolve(),
    );
  });
}

/**
 * `npm run bench:cold-init`: bundles each function as the stack does (infra/constructs BUNDLING),
 * once with the AWS SDK inside the bundle and once leaving it to the runtime, then measures the
 * bundle size and the local cold init: a fresh Node 24 process importing the bundle (median of
 * several runs). Lambda's own init adds the runtime start on top of this.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLING } from '../infra/constructs/service-function.ts';
import { PROJECT_ROOT } from '../local/local-stack.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 31);
const FUNCTIONS = ['list-orders', 'cancel-order', 'authorizer'];
// Bundles live under the project so that an external SDK resolves from node_modules, as the
// runtime's own copy would.
const outRoot = mkdtempSync(join(PROJECT_ROOT, 'node_modules', '.cold-init-'));

const probe = join(outRoot, 'probe.mjs');
writeFileSync(
  probe,
  `globalThis.awslambda ??= { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };
const started = performance.now();
await import(process.argv[2]);
console.log(performance.now() - started);`,
);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

console.log(`function        SDK        bundle      cold init (median of ${RUNS})`);
try {
  for (const fn of FUNCTIONS) {
    for (const sdk of ['bundled', 'external'] as const) {
      const outfile = join(outRoot, sdk, fn, 'index.mjs');
      await build({
        entryPoints: [join(PROJECT_ROOT, 'functions', `${fn}.ts`)],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: BUNDLING.target,
        minify: BUNDLING.minify,
        sourcemap: BUNDLING.sourceMap,
        sourcesContent: false,
        mainFields: BUNDLING.mainFields,
        banner: { js: BUNDLING.banner ?? '' },
        external: sdk === 'bundled' ? [] : ['@aws-sdk/*', '@smithy/*'],
        logLevel: 'silent',
      });
      const times = Array.from({ length: RUNS }, () =>
        Number(
          execFileSync(process.execPath, [probe, outfile], {
            encoding: 'utf8',
            env: { ...process.env, POWERTOOLS_METRICS_DISABLED: 'true' },
          }),
        ),
      );
      const kb = statSync(outfile).size / 1024;
      console.log(
        `${fn.padEnd(15)} ${sdk.padEnd(10)} ${kb.toFixed(0).padStart(6)} KiB  ${median(times).toFixed(1).padStart(7)} ms`,
      );
    }
  }
} finally {
  rmSync(outRoot, { recursive: true, force: true });
}

/**
 * `npm run bench:cold-init`: each function's cold init against the floor. Every function is
 * bundled as the stack bundles it (infra/constructs BUNDLING: SDK inside the bundle), and so is
 * a floor: a module that only creates the DynamoDB document client, as every function must.
 * Each sample is a fresh Node 24 process importing one bundle (the time from before the import
 * until it resolves: module evaluation, the part of Lambda's init a function's code decides);
 * samples go round the bundles in turn (each round starting with the next one), so a machine that
 * slows down slows them all alike. As the functions run on Lambda: no NODE_OPTIONS.
 * Prints each bundle's size, the median init, and its ratio to the floor against the goal.
 *
 *   npm run bench:cold-init -- --runs 25
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_FILE, esbuildOptions } from '../infra/constructs/service-function.ts';
import { PROJECT_ROOT } from '../local/local-stack.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { median } from './statistics.ts';

const values = benchFlags('bench:cold-init', "Each function's cold init against the floor.", {
  runs: countFlag('fresh processes per bundle', 25),
});
const RUNS = countOf('bench:cold-init', 'runs', values.runs, 25);
/** The goal: no function's cold init more than this many times the floor's. */
const GOAL = 1.1;
const FUNCTIONS = ['list-orders', 'cancel-order', 'authorizer'] as const;

const outRoot = mkdtempSync(join(PROJECT_ROOT, 'node_modules', '.cold-init-'));
const probe = join(PROJECT_ROOT, 'bench', 'load-bundle.ts');
const floorEntry = join(outRoot, 'floor.ts');
writeFileSync(
  floorEntry,
  `import { createDocumentClient } from ${JSON.stringify(join(PROJECT_ROOT, 'lib', 'dynamodb', 'client.ts'))};
export const client = createDocumentClient();`,
);

async function bundle(name: string, entry: string): Promise<string> {
  const outfile = join(outRoot, name, BUNDLE_FILE);
  await build(esbuildOptions(entry, outfile));
  return outfile;
}

try {
  const bundles = [
    { name: 'floor', file: await bundle('floor', floorEntry) },
    ...(await Promise.all(
      FUNCTIONS.map(async (fn) => ({
        name: fn,
        file: await bundle(fn, join(PROJECT_ROOT, 'functions', `${fn}.ts`)),
      })),
    )),
  ];
  const samples = new Map<string, number[]>(bundles.map((b) => [b.name, []]));
  // As the functions run: no NODE_OPTIONS (the stack sets none; see BUNDLING on source maps).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    METRICS_DISABLED: 'true',
    AWS_REGION: 'eu-west-1',
  };
  delete env.NODE_OPTIONS;
  for (let run = 0; run < RUNS + 1; run++) {
    // Each round starts with the next bundle: no bundle always follows the same one.
    const round = [
      ...bundles.slice(run % bundles.length),
      ...bundles.slice(0, run % bundles.length),
    ];
    for (const { name, file } of round) {
      const loaded = execFileSync(process.execPath, [probe, file], { encoding: 'utf8', env });
      const { ms } = JSON.parse(loaded) as { ms: number };
      if (run > 0) samples.get(name)?.push(ms); // the first round warms the file cache
    }
  }
  const floor = median(samples.get('floor') ?? []);
  console.log(
    `cold init, median of ${RUNS} fresh processes each, in turn (goal: ≤ ${GOAL}× floor)`,
  );
  console.log('bundle            size   init       × floor');
  for (const { name, file } of bundles) {
    const init = median(samples.get(name) ?? []);
    const ratio = init / floor;
    const verdict = name === 'floor' ? '' : ratio <= GOAL ? '  within the goal' : '  OVER the goal';
    console.log(
      `${name.padEnd(14)} ${(statSync(file).size / 1024).toFixed(0).padStart(5)} KiB ${init.toFixed(1).padStart(6)} ms  ${ratio.toFixed(2)}×${verdict}`,
    );
  }
} finally {
  rmSync(outRoot, { recursive: true, force: true });
}

/**
 * `npm run bench:hook-cold`: what the deploy hooks' bundle weighs and how soon a cold one gives
 * its first verdict. The hooks' entry (functions/deploy-hooks.ts) is bundled as the stack bundles
 * it (infra/constructs BUNDLING: the SDK inside); each sample is a fresh Node 24 process
 * (bench/load-bundle.ts) that loads it as Lambda does and runs the pre-traffic hook twice on
 * cancelOrder's deployment, against a stand-in of CodeDeploy, Lambda, Application Auto Scaling
 * and DynamoDB on the loopback (AWS_ENDPOINT_URL): the load, the first verdict (load, settings
 * read, clients, the deployment looked up, the scaling suspended, the deploy check's order set
 * pending, three probe calls, the verdict) and its CPU, and the warm one.
 *
 * `--settings FILE` bundles FILE in place of functions/deploy-hooks/settings.ts (it must export
 * `settingsFromEnv`): how the settings' schema library was chosen (bench/README.md, "Settings
 * schemas"), each candidate a file of its own, taken in turns with the hooks as they are.
 *
 *   npm run bench:hook-cold -- --runs 31 --settings /tmp/zod-mini.ts
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { BUNDLE_FILE, esbuildOptions } from '../infra/constructs/service-function.ts';
import { valueFlag } from '../lib/config/flags.ts';
import { HOOK_ENV } from '../lib/deployment.ts';
import { FUNCTION_NAMES } from '../lib/functions.ts';
import { PROJECT_ROOT } from '../local/local-stack.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import type { Loaded } from './load-bundle.ts';
import { percentile } from './statistics.ts';

const SCRIPT = 'bench:hook-cold';
const values = benchFlags(
  SCRIPT,
  "The deploy hooks' bundle size and a cold pre-traffic hook's first verdict, against a loopback stand-in of AWS.",
  {
    runs: countFlag('fresh processes per bundle', 15),
    settings: valueFlag('FILE', 'also the hooks with FILE as their settings module (a candidate)'),
  },
);
const RUNS = countOf(SCRIPT, 'runs', values.runs, 15);
const exec = promisify(execFile);

/** cancelOrder's answers to its probe's three calls, in turn: 204, 204 again, 404. */
const PROBE_ANSWERS = [204, 204, 404];
let probeCalls = 0;

/** What the hook asks each service, answered as the service would for a healthy version. */
function answerTo(target: string, url: string | undefined): unknown {
  if (target.endsWith('.GetDeployment')) {
    return {
      deploymentInfo: {
        deploymentGroupName: 'cancelOrder',
        status: 'InProgress',
        createTime: Date.now() / 1000,
      },
    };
  }
  if (target.endsWith('.ListDeploymentTargets')) return { targetIds: ['t-bench'] };
  if (target.endsWith('.GetDeploymentTarget')) {
    return {
      deploymentTarget: {
        lambdaTarget: {
          lambdaFunctionInfo: { currentVersion: '6', targetVersion: '7' },
          lifecycleEvents: [{ lifecycleEventName: 'BeforeAllowTraffic', status: 'InProgress' }],
        },
      },
    };
  }
  if (url?.includes('/invocations')) {
    const status = PROBE_ANSWERS[probeCalls++ % PROBE_ANSWERS.length];
    return { statusCode: status, body: status === 404 ? '{"code":"ORDER_NOT_FOUND"}' : '' };
  }
  // DynamoDB's writes of the deploy check's order, the verdict, the scaling, the do-not-ship
  // mark (an alias with no version: none): nothing to say.
  return {};
}

/** The verdicts the hooks sent: each must be Succeeded (a healthy version), or the bench is wrong. */
const verdicts: string[] = [];

/** CodeDeploy, Lambda, Application Auto Scaling and DynamoDB as the hook calls them. */
const standIn = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    const target = String(request.headers['x-amz-target'] ?? '');
    if (target.endsWith('.PutLifecycleEventHookExecutionStatus')) {
      verdicts.push(String((JSON.parse(body) as { status?: string }).status));
    }
    const answer = answerTo(target, request.url);
    response.writeHead(200, {
      'content-type': target ? 'application/x-amz-json-1.1' : 'application/json',
    });
    response.end(JSON.stringify(answer));
  });
});
await new Promise<void>((done) => standIn.listen(0, '127.0.0.1', done));
const { port } = standIn.address() as { port: number };

const outRoot = mkdtempSync(join(PROJECT_ROOT, 'node_modules', '.hook-cold-'));

/** The hooks bundled as the stack bundles them, the pre-traffic hook as `handler`. */
async function bundle(name: string, settings?: string): Promise<{ file: string; bytes: number }> {
  const entry = join(outRoot, `${name}-entry.ts`);
  writeFileSync(
    entry,
    `export { preTraffic as handler } from ${JSON.stringify(join(PROJECT_ROOT, 'functions', 'deploy-hooks.ts'))};\n`,
  );
  const swap: Plugin = {
    name: 'settings',
    setup(plugins) {
      plugins.onResolve({ filter: /deploy-hooks\/settings\.ts$/ }, () => ({
        path: resolve(settings!),
      }));
    },
  };
  const file = join(outRoot, name, BUNDLE_FILE);
  await build({ ...esbuildOptions(entry, file), plugins: settings ? [swap] : [] });
  // What Lambda is given: the hooks' own entry, bundled the same way.
  const deployed = join(outRoot, `${name}-deployed`, BUNDLE_FILE);
  await build({
    ...esbuildOptions(join(PROJECT_ROOT, 'functions', 'deploy-hooks.ts'), deployed),
    plugins: settings ? [swap] : [],
  });
  return { file, bytes: statSync(deployed).size };
}

const targets = Object.fromEntries(
  FUNCTION_NAMES.map((name) => [
    name,
    { functionName: `bench-${name}`, alarms: [`bench-${name}`], provisioned: true },
  ]),
);
const env = {
  PATH: process.env.PATH ?? '',
  AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDBENCH',
  AWS_SECRET_ACCESS_KEY: 'bench',
  LOG_LEVEL: 'ERROR',
  [HOOK_ENV.targets]: JSON.stringify(targets),
  [HOOK_ENV.bakeSeconds]: '60',
  [HOOK_ENV.watchProbe]: 'false',
  [HOOK_ENV.versionsKept]: '3',
  [HOOK_ENV.ignoreAlarms]: 'false',
  [HOOK_ENV.ordersTable]: 'bench-orders',
  [HOOK_ENV.apiKeysTable]: 'bench-api-keys',
  [HOOK_ENV.metricsNamespace]: 'StoreOrders/bench',
};
const hookEvent = { DeploymentId: 'd-bench', LifecycleEventHookExecutionId: 'h-bench' };
const invocations = join(outRoot, 'invocations.json');
writeFileSync(invocations, JSON.stringify({ events: [hookEvent, hookEvent] }));

interface Samples {
  readonly bytes: number;
  readonly file: string;
  readonly load: number[];
  readonly first: number[];
  readonly cpu: number[];
  readonly warm: number[];
}

try {
  const subjects: Record<string, Samples> = {};
  for (const [name, settings] of [
    ['hooks', undefined],
    ...(values.settings ? [['with --settings', values.settings]] : []),
  ] as [string, string | undefined][]) {
    const { file, bytes } = await bundle(name.replace(/\W+/g, '-'), settings);
    subjects[name] = { bytes, file, load: [], first: [], cpu: [], warm: [] };
  }
  const names = Object.keys(subjects);
  for (let run = 0; run < RUNS; run += 1) {
    for (let i = 0; i < names.length; i += 1) {
      const subject = subjects[names[(run + i) % names.length]!]!;
      const { stdout } = await exec(
        process.execPath,
        [join(PROJECT_ROOT, 'bench', 'load-bundle.ts'), subject.file, invocations],
        { env },
      );
      const loaded = JSON.parse(stdout.trim().split('\n').at(-1)!) as Loaded;
      const [first, warm] = loaded.answers!;
      if (first?.status !== 'ok' || warm === undefined) throw new Error(`no verdict: ${stdout}`);
      subject.load.push(loaded.ms);
      subject.first.push(first.at);
      subject.cpu.push(first.cpu);
      subject.warm.push(warm.at - first.at);
    }
  }
  if (verdicts.some((verdict) => verdict !== 'Succeeded')) {
    throw new Error(`a verdict other than Succeeded: ${verdicts.join(', ')}`);
  }
  const quartiles = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (p: number) => percentile(sorted, p).toFixed(1);
    return `${at(50)} (${at(25)}–${at(75)})`;
  };
  console.log(
    `${RUNS} fresh processes each; ms, median (quartiles)\n\n` +
      '| bundle | bytes | load | first verdict | its CPU | warm verdict |\n' +
      '| ------ | ----- | ---- | ------------- | ------- | ------------ |',
  );
  for (const [name, s] of Object.entries(subjects)) {
    console.log(
      `| ${name} | ${s.bytes.toLocaleString('en')} | ${quartiles(s.load)} | ${quartiles(s.first)} | ${quartiles(s.cpu)} | ${quartiles(s.warm)} |`,
    );
  }
} finally {
  standIn.close();
  rmSync(outRoot, { recursive: true, force: true });
}

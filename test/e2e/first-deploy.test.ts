/**
 * A first deploy, rehearsed: both stages synthesized from the checked-in cdk.json with the
 * settings docs/first-stage.md tells a platform engineer to add, each started as synthesized and
 * empty (`npm start -- --stage <name>`: its tables created from the template, its bundles with
 * the template's settings), and the how-to's commands run as written, with bash, in a copy of the
 * repository's working tree — `cdk bootstrap`, `cdk diff` and `cdk deploy` answered by a stand-in
 * (deploy writes the stage's outputs file as CDK does, from the stage running locally), AWS's
 * DynamoDB endpoint the test run's DynamoDB Local. Every smoke check passes, each v2 filter among
 * them, with no step between the deploy and the first answer but a key and an import; the smoke
 * of a stage still empty says what it could not check and passes.
 */
import { execFile, spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../infra/config.ts';
import { STACK_OUTPUTS, stackNames, stageId, type StageName } from '../../lib/deployment.ts';
import { orderToJson, type Order } from '../../lib/orders/order.ts';
import { PROJECT_ROOT, type LocalState } from '../../local/local-stack.ts';
import { sharedAssembly, synthesizeTemplates } from '../support/assembly.ts';
import { docSection } from '../support/runbook.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

const HOWTO = 'first-stage.md';

/** The JSON blocks of a section of the how-to: the settings it tells you to add. */
function jsonBlocks(heading: string): { context: Record<string, unknown> }[] {
  return [...docSection(HOWTO, heading).matchAll(/^```json\n([\s\S]*?)^```$/gm)].map(
    (m) => JSON.parse(m[1]!) as { context: Record<string, unknown> },
  );
}

/** The shell lines of a section of the how-to, in order. */
function shellLines(heading: string): string[] {
  return [...docSection(HOWTO, heading).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((m) =>
    m[1]!.split('\n').filter((line) => line.trim() !== ''),
  );
}

/** Orders of every kind the filters select: statuses, pets, ship dates, int64's ends. */
function importOrders(): Order[] {
  const statuses = ['pending', 'shipped', 'cancelled'] as const;
  const orders: Order[] = Array.from({ length: 38 }, (_, i) => ({
    id: BigInt(i + 1),
    petId: BigInt(100 + (i % 3)),
    quantity: 1 + (i % 4),
    shipDate: new Date(Date.UTC(2026, 10, 1 + (i % 28), 9)).toISOString().replace('.000', ''),
    complete: i % 5 !== 0,
    status: statuses[i % 3]!,
  }));
  orders.push({ id: 9223372036854775807n, petId: 9223372036854775806n, status: 'pending' });
  orders.push({ id: -9223372036854775808n, shipDate: '2026-11-30T23:59:59.999999999Z' });
  return orders;
}

/**
 * The stand-ins on PATH: `npx cdk bootstrap|diff` (logged), `npx cdk deploy '<Stage>/*'
 * --outputs-file FILE --no-previous-parameters` (writes FILE with the stage's outputs, as CDK
 * does), `npm run synth` (the test synthesized with the same settings; logged), and the real npm
 * for everything else.
 */
function standIns(dir: string, realNpm: string): void {
  writeFileSync(
    join(dir, 'npx'),
    `#!${process.execPath}
const fs = require('node:fs');
const args = process.argv.slice(2);
fs.appendFileSync(process.env.STAND_IN_LOG, JSON.stringify(['npx', ...args]) + '\\n');
const fail = (why) => { process.stderr.write('stand-in npx: ' + why + '\\n'); process.exit(1); };
if (args[0] !== 'cdk') fail('only cdk: ' + args.join(' '));
if (args[1] === 'bootstrap' || args[1] === 'diff') process.exit(0);
if (args[1] !== 'deploy') fail('unknown cdk command ' + args[1]);
const stage = /^(\\w+)\\/\\*$/.exec(args[2] ?? '');
if (!stage) fail('deploy what? ' + args[2]);
const outputs = JSON.parse(fs.readFileSync(process.env.STAND_IN_OUTPUTS, 'utf8'))[stage[1]];
if (!outputs) fail('no stage ' + stage[1]);
if (!args.includes('--no-previous-parameters')) fail('a deploy without --no-previous-parameters');
const file = args[args.indexOf('--outputs-file') + 1];
if (!args.includes('--outputs-file') || !file) fail('a deploy without --outputs-file');
fs.writeFileSync(file, JSON.stringify(outputs, null, 2));
`,
  );
  writeFileSync(
    join(dir, 'npm'),
    `#!/bin/sh
if [ "$1" = run ] && [ "$2" = synth ] && [ $# -eq 2 ]; then
  echo '["npm","run","synth"]' >> "$STAND_IN_LOG"; exit 0
fi
exec "${realNpm}" "$@"
`,
  );
  chmodSync(join(dir, 'npx'), 0o755);
  chmodSync(join(dir, 'npm'), 0o755);
}

/** A working copy of the repository: its files linked, cdk.json with the how-to's settings. */
function workingCopy(dir: string, context: Record<string, unknown>): void {
  for (const entry of readdirSync(PROJECT_ROOT)) {
    if (['cdk.json', '.local', 'cdk.out', '.git'].includes(entry)) continue;
    if (entry.startsWith('cdk-outputs')) continue;
    symlinkSync(join(PROJECT_ROOT, entry), join(dir, entry));
  }
  const cdk = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  writeFileSync(
    join(dir, 'cdk.json'),
    JSON.stringify({ ...cdk, context: { ...cdk.context, ...context } }, null, 2),
  );
}

/** What `cdk deploy --outputs-file` writes for a stage, with the stage running locally. */
function outputsOf(stage: StageName, state: LocalState): Record<string, Record<string, string>> {
  const stacks = stackNames(stage);
  return {
    [stacks.data]: {
      [STACK_OUTPUTS.ordersTable]: state.tables.orders,
      [STACK_OUTPUTS.apiKeysTable]: state.tables.apiKeys,
      [STACK_OUTPUTS.rateLimitsTable]: state.tables.rateLimits,
      [STACK_OUTPUTS.region]: 'eu-west-1',
    },
    [stacks.api]: {
      [STACK_OUTPUTS.apiUrl]: `${state.apiUrl}/`,
      [STACK_OUTPUTS.apiUrlV2]: `${state.apiUrl.replace(/\/v1$/, '/v2')}/`,
    },
  };
}

describe('a first deploy of each stage, as docs/first-stage.md says', () => {
  const settings = jsonBlocks("## 2. The stages' settings")[0]!.context;
  const work = mkdtempSync(join(tmpdir(), 'first-deploy-'));
  const copy = join(work, 'repository');
  const bin = join(work, 'bin');
  const log = join(work, 'calls.log');
  const apis: Partial<Record<StageName, LocalApi>> = {};

  beforeAll(async () => {
    mkdirSync(copy);
    mkdirSync(bin);
    writeFileSync(log, '');
    workingCopy(copy, settings);
    writeFileSync(
      join(copy, 'orders.json'),
      `[${importOrders()
        .map((o) => orderToJson(o))
        .join(',\n')}]\n`,
    );
    const realNpm = spawnSync('bash', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
    standIns(bin, realNpm);
    // The stages as the checked-in settings synthesize them (the run's one synth, bundled): the
    // how-to's settings add an account, a region, the logging role and alarm subscriptions, none
    // of which changes what runs (the first test synthesizes the app with them).
    const assembly = await sharedAssembly();
    for (const stage of ['staging', 'production'] as const) {
      apis[stage] = await startLocalApi({
        // Staging's named as CI names its cdk.out: relative to the working directory.
        args: [
          '--stage',
          stage,
          '--assembly',
          stage === 'staging' ? relative(PROJECT_ROOT, assembly) : assembly,
        ],
        tablePrefix: uniquePrefix(`first-${stage}`),
      });
    }
    const outputs = Object.fromEntries(
      (['staging', 'production'] as const).map((stage) => [
        stageId(stage),
        outputsOf(stage, JSON.parse(readFileSync(apis[stage]!.stateFile, 'utf8')) as LocalState),
      ]),
    );
    writeFileSync(join(work, 'outputs.json'), JSON.stringify(outputs));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(Object.values(apis).map((api) => api.stop()));
    rmSync(work, { recursive: true, force: true });
  });

  /** Runs shell lines in one bash, in the working copy, with the stand-ins first on PATH. */
  const run = async (lines: readonly string[]) => {
    const { stdout } = await promisify(execFile)(
      'bash',
      ['-e', '-u', '-o', 'pipefail', '-c', lines.join('\n')],
      {
        cwd: copy,
        maxBuffer: 16 * 1024 * 1024,
        env: {
          PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
          HOME: work,
          STAND_IN_LOG: log,
          STAND_IN_OUTPUTS: join(work, 'outputs.json'),
          // The operator's AWS, with DynamoDB answered by the test run's DynamoDB Local.
          AWS_REGION: 'eu-west-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint(),
          // What a stage's smoke run needs of the environment: nothing else. A shell level, so that
          // bash, its stdin a socket, does not take itself for an ssh session's and read bashrc.
          LANG: 'C.UTF-8',
          SHLVL: '1',
        },
      },
    );
    return stdout;
  };

  /** The smoke's lines of a run, by their outcome. */
  const smokeLines = (stdout: string) => {
    const lines = stdout.split('\n').filter((line) => /^(ok |FAIL|skip|n\/a)/.test(line));
    return {
      ok: lines.filter((l) => l.startsWith('ok ')),
      notOk: lines.filter((l) => !l.startsWith('ok ') && !l.startsWith('n/a')),
      unchecked: lines.filter((l) => l.startsWith('n/a')),
    };
  };
  const FILTERS =
    /^ok {3}v2: 200 a page of (status=pending|a ship-date range|status=pending with a ship-date range|petId=\d+|petId=\d+ with a ship-date range), every order matching$/;

  it("documents settings the stages take, cdk-nag's checks and the custom domain's too", async () => {
    for (const stage of ['staging', 'production'] as const) {
      expect(() => stageConfig(stage, (key) => settings[key], {})).not.toThrow();
    }
    await synthesizeTemplates([{ kind: 'app', settings, outDir: join(work, 'with-settings.out') }]);
    const domain = jsonBlocks('## 8. A custom domain (optional)')[0]!.context;
    const both = { ...settings, ...domain };
    expect(stageConfig('production', (key) => both[key], {}).customDomain).toBeDefined();
    // The logging role goes to the stage deployed first (staging here), and to no other.
    expect(settings['staging:apiGatewayAccountRole']).toBe(true);
    expect(settings['production:apiGatewayAccountRole']).toBeUndefined();
  });

  it('serves staging after the how-to: bootstrap, settings, deploy, a key, the orders, the smoke', async () => {
    const [smoke] = shellLines('## 6. Smoke test');
    const before = await run([
      ...shellLines('## 1. Bootstrap the account (once per account and region)'),
      ...shellLines("## 2. The stages' settings"),
      ...shellLines('## 3. Deploy staging'),
      ...shellLines('## 4. The first key'),
      // Not a step of the how-to: the smoke of the stage while it is empty.
      smoke!,
    ]);
    const empty = smokeLines(before);
    expect(empty.notOk, before).toEqual([]);
    expect(empty.unchecked).toEqual([
      "n/a  v2: the next page, at the Link header's address, after the first: the stage holds 0 orders: no next page to follow",
    ]);
    expect(empty.ok.filter((l) => FILTERS.test(l))).toHaveLength(5);

    const after = await run([
      ...shellLines('## 4. The first key'),
      ...shellLines('## 5. The orders'),
      ...shellLines('## 6. Smoke test'),
    ]);
    expect(after).toContain('Imported 40 orders');
    const full = smokeLines(after);
    expect(full.notOk, after).toEqual([]);
    expect(full.unchecked).toEqual([]);
    expect(full.ok.filter((l) => FILTERS.test(l))).toHaveLength(5);
    const calls = readFileSync(log, 'utf8');
    expect(calls).toContain('["npx","cdk","bootstrap","aws://123456789012/eu-west-1"]');
    expect(calls).toContain('["npm","run","synth"]');
    expect(calls).toContain('"deploy","Staging/*"');
  });

  it('serves production after the same steps, its own commands', async () => {
    const lines = shellLines('## 7. Production');
    const deploy = lines.filter((l) => l.startsWith('npx cdk deploy') || l.startsWith('KEY='));
    const smoke = lines.filter((l) => l.startsWith('npm run smoke'));
    expect(deploy).toHaveLength(2);
    expect(smoke).toHaveLength(1);
    const before = await run([...deploy, ...smoke]);
    expect(smokeLines(before).notOk, before).toEqual([]);
    const after = await run(lines.filter((l) => !l.startsWith('npx cdk deploy')));
    expect(after).toContain('Imported 40 orders');
    const full = smokeLines(after);
    expect(full.notOk, after).toEqual([]);
    expect(full.unchecked).toEqual([]);
    expect(full.ok.filter((l) => FILTERS.test(l))).toHaveLength(5);
  });
});

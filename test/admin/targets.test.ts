/**
 * Choosing what the CLI works on: `--local` against a running `npm start` (keys created here
 * authorise requests through the local API; revocations, rotations and plan changes show there
 * within the authorizer cache TTL), `--stage` from an outputs file (with the production
 * confirmation), and the refusals of target flags.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createTcpServer } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTables } from '../../lib/dynamodb/create-table.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { stackNames, STACK_OUTPUTS } from '../../lib/deployment.ts';
import type { CloudFormationStub } from '../support/cloudformation-stub.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import {
  expectOneLineError,
  printedKey,
  printedKeyId,
  runCli,
  scanAll,
  tempDir,
  tempFile,
} from './support.ts';

const CLOUDFORMATION_STUB = join(import.meta.dirname, '..', 'support', 'cloudformation-stub.ts');

/** The local API's authorizer cache TTL in these tests, in seconds. */
const TTL_SECONDS = 1;
const AFTER_TTL_MS = TTL_SECONDS * 1000 + 300;

describe('--local: the running npm start', () => {
  let api: LocalApi;
  beforeAll(async () => {
    api = await startLocalApi({ args: ['--authorizer-ttl', String(TTL_SECONDS)] });
  });
  afterAll(() => api.stop());

  const local = (...args: string[]) =>
    runCli([...args, '--local'], { env: { STORE_ORDERS_LOCAL_STATE: api.stateFile } });
  const get = (key: string, path = '/store/orders') =>
    fetch(`${api.url}${path}`, { headers: { Authorization: `Bearer ${key}` } });

  async function createKey(...args: string[]): Promise<{ key: string; keyId: string }> {
    const result = await local('keys', 'create', ...args);
    expect(result.code, result.stderr).toBe(0);
    return { key: printedKey(result.stdout), keyId: printedKeyId(result.stdout) };
  }

  it('creates a key that authorises a request through the local API at once', async () => {
    const { key } = await createKey('--plan', 'pro', '--label', 'local');
    const response = await get(key);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit')).toBe('300');
    expect(await response.text()).toContain('"id":9007199254740993');
  });

  it('revokes a key: refused once the authorizer cache TTL has passed', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    expect((await get(key)).status).toBe(200); // now in the authorizer cache
    expect((await local('keys', 'revoke', keyId)).code).toBe(0);
    await sleep(AFTER_TTL_MS);
    const refused = await get(key);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
  });

  it('rotates a key: both work at once; with no grace the old one stops after the TTL', async () => {
    const { key: oldKey, keyId } = await createKey('--plan', 'business');
    const rotated = await local('keys', 'rotate', keyId, '--grace', '1h');
    const newKey = printedKey(rotated.stdout);
    expect((await get(newKey)).status).toBe(200);
    expect((await get(oldKey)).status).toBe(200);

    const { key: shortKey, keyId: shortId } = await createKey('--plan', 'business');
    expect((await get(shortKey)).status).toBe(200);
    const immediate = await local('keys', 'rotate', shortId, '--grace', '0s');
    expect((await get(printedKey(immediate.stdout))).status).toBe(200);
    await sleep(AFTER_TTL_MS);
    expect((await get(shortKey)).status).toBe(401);
    expect((await get(oldKey)).status).toBe(200);
  });

  it('changes a plan: the new limits apply once the TTL has passed', async () => {
    const { key, keyId } = await createKey('--plan', 'free');
    expect((await get(key)).headers.get('x-ratelimit-limit')).toBe('60');
    expect((await local('keys', 'set-plan', keyId, '--plan', 'business')).code).toBe(0);
    await sleep(AFTER_TTL_MS);
    expect((await get(key)).headers.get('x-ratelimit-limit')).toBe('1000');
  });

  it('imports, ships and exports orders that the API then serves', async () => {
    const { key } = await createKey('--plan', 'business');
    const file = tempFile('local.json', '[{"id": 9223372036854775806, "petId": 1, "quantity": 3}]');
    expect((await local('orders', 'import', file)).code).toBe(0);
    expect(await (await get(key)).text()).toContain(
      '{"id":9223372036854775806,"petId":1,"quantity":3,"status":"pending"}',
    );
    expect((await local('orders', 'ship', '9223372036854775806')).stdout).toBe(
      'Order 9223372036854775806 shipped.\n',
    );
    const cancel = await fetch(`${api.url}/store/orders/9223372036854775806`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(cancel.status).toBe(409);

    const exported = await local('orders', 'export');
    expect(exported.code).toBe(0);
    expect(exported.stdout).toBe(await (await get(key)).text());
  });

  it('lists the keys of the local API, the demo keys among them', async () => {
    const result = await local('keys', 'list', '--json');
    const views = JSON.parse(result.stdout) as { plan: string }[];
    expect(views.map((view) => view.plan)).toEqual(
      expect.arrayContaining(['free', 'pro', 'business', 'enterprise']),
    );
    expect(result.stdout).not.toMatch(/sok_/);
  });
});

describe('--stage: a deployed stage, from the outputs file', () => {
  let t: TestTables;
  let outputs: string;
  beforeAll(async () => {
    t = await createTestTables('admin-stage');
    const tables = {
      [STACK_OUTPUTS.region]: 'local',
      [STACK_OUTPUTS.ordersTable]: t.tables.orders,
      [STACK_OUTPUTS.apiKeysTable]: t.tables.apiKeys,
      [STACK_OUTPUTS.rateLimitsTable]: t.tables.rateLimits,
    };
    outputs = tempFile(
      'cdk-outputs.json',
      JSON.stringify({
        [stackNames('staging').data]: tables,
        [stackNames('staging').api]: { [STACK_OUTPUTS.apiUrl]: 'https://example.invalid/v1' },
        [stackNames('production').data]: tables,
      }),
    );
    await runCli([
      'orders',
      'import',
      tempFile('o.json', '[{"id": 1}, {"id": 2}]'),
      '--endpoint',
      t.endpoint,
      '--table-orders',
      t.tables.orders,
    ]);
  });
  afterAll(() => t.drop());

  const onStage = (stage: string, ...args: string[]) =>
    runCli([...args, '--stage', stage, '--outputs', outputs, '--endpoint', t.endpoint]);
  const everything = async () => [
    await scanAll(t.client, t.tables.apiKeys),
    await scanAll(t.client, t.tables.orders),
  ];

  it('reads the table names and region of staging and changes data without asking', async () => {
    const result = await onStage('staging', 'keys', 'create', '--plan', 'free');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Created key key_\w+ .* on staging \(Staging-Data, local, http/);
    expect(await scanAll(t.client, t.tables.apiKeys)).toHaveLength(1);
  });

  it.each([
    ['create a free key', ['keys', 'create', '--plan', 'free']],
    ['revoke key key_Whatever', ['keys', 'revoke', 'key_Whatever']],
    ['rotate key key_Whatever', ['keys', 'rotate', 'key_Whatever']],
    ['move key key_Whatever to plan pro', ['keys', 'set-plan', 'key_Whatever', '--plan', 'pro']],
    ['ship order 1', ['orders', 'ship', '1']],
  ])(
    'refuses to %s on production without --yes when stdin is not a terminal',
    async (action, args) => {
      const before = await everything();
      expectOneLineError(
        await onStage('production', ...args),
        1,
        new RegExp(
          `^error: refusing to ${action} on PRODUCTION without confirmation: stdin is not a terminal, pass --yes$`,
        ),
      );
      expect(await everything()).toEqual(before);
    },
  );

  it('validates an import before asking, and asks before writing', async () => {
    const before = await everything();
    const file = tempFile('prod.json', '[{"id": 10}, {"id": 11}]');
    expectOneLineError(
      await onStage('production', 'orders', 'import', file),
      1,
      /^error: refusing to import 2 orders into \S+ on PRODUCTION without confirmation/,
    );
    const bad = await onStage(
      'production',
      'orders',
      'import',
      tempFile('bad.json', '[{"id": "x"}]'),
    );
    expect(bad.stderr).toMatch(/line 1 \(record 0\): id must be an integer/);
    expect(await everything()).toEqual(before);
    // Orders stored as the file has them: nothing to write, so nothing to confirm.
    const same = await onStage(
      'production',
      'orders',
      'import',
      tempFile('same.json', '[{"id": 1}]'),
    );
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/: 0 new, 1 unchanged, 0 replaced\.\n$/);
  });

  it('changes production data with --yes; reading needs no confirmation', async () => {
    const created = await onStage('production', 'keys', 'create', '--plan', 'pro', '--yes');
    expect(created.code).toBe(0);
    const listed = await onStage('production', 'keys', 'list', '--json');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({ keyId: printedKeyId(created.stdout), plan: 'pro' }),
    );
    expect((await onStage('production', 'orders', 'ship', '2', '-y')).code).toBe(0);
    const exported = await onStage('production', 'orders', 'export');
    expect(exported.stdout).toBe(
      '[{"id":1,"status":"pending"},{"id":2,"complete":true,"status":"shipped"}]',
    );
  });

  it('refuses a missing, unreadable or incomplete outputs file with one line', async () => {
    const dir = tempDir();
    expectOneLineError(
      await runCli(['keys', 'list', '--stage', 'production', '--outputs', 'missing.json'], {
        cwd: dir,
      }),
      1,
      /^error: cannot read the outputs file missing\.json \(ENOENT\): drop --outputs to read the stage from CloudFormation, or deploy with --outputs-file missing\.json$/,
    );
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"Production-Data": ');
    expectOneLineError(
      await runCli(['keys', 'list', '--stage', 'production', '--outputs', broken]),
      1,
      /^error: the outputs file \S+broken\.json is not valid JSON: /,
    );
    const stagingOnly = tempFile(
      'staging.json',
      JSON.stringify({ 'Staging-Data': { Region: 'eu-west-1' } }),
    );
    expectOneLineError(
      await runCli(['keys', 'list', '--stage', 'production', '--outputs', stagingOnly]),
      1,
      /^error: the outputs file \S+ has no outputs of stack Production-Data: deploy that stage with --outputs-file/,
    );
    expectOneLineError(
      await runCli(['keys', 'list', '--stage', 'staging', '--outputs', stagingOnly]),
      1,
      /^error: the outputs of Staging-Data have no ApiKeysTableName$/,
    );
  });
});

describe('--stage with no outputs file: the stack outputs from CloudFormation (stubbed)', () => {
  let t: TestTables;
  let stacks: Record<string, Record<string, string>>;
  beforeAll(async () => {
    t = await createTestTables('admin-cfn');
    stacks = {
      [stackNames('staging').data]: {
        [STACK_OUTPUTS.region]: 'eu-central-1',
        [STACK_OUTPUTS.ordersTable]: t.tables.orders,
        [STACK_OUTPUTS.apiKeysTable]: t.tables.apiKeys,
        [STACK_OUTPUTS.rateLimitsTable]: t.tables.rateLimits,
      },
    };
  });
  afterAll(() => t.drop());

  /** The CLI in a directory with no outputs file, CloudFormation stubbed; its calls logged. */
  async function withStub(
    args: readonly string[],
    options: {
      stub?: CloudFormationStub;
      env?: Record<string, string | undefined>;
      cwd?: string;
    } = {},
  ) {
    const dir = tempDir();
    const log = join(dir, 'calls.jsonl');
    const result = await runCli(args, {
      cwd: options.cwd ?? dir,
      nodeArgs: ['--import', CLOUDFORMATION_STUB],
      env: {
        // No region or profile of the machine's: each test says what it has.
        AWS_REGION: undefined,
        AWS_DEFAULT_REGION: undefined,
        AWS_PROFILE: undefined,
        AWS_CONFIG_FILE: join(dir, 'no-aws-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-aws-credentials'),
        STORE_ORDERS_TEST_CLOUDFORMATION: JSON.stringify(options.stub ?? { stacks }),
        STORE_ORDERS_TEST_CLOUDFORMATION_LOG: log,
        ...options.env,
      },
    });
    const calls = existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { stack: string; region: string })
      : [];
    return { result, calls };
  }

  it('reads the tables and region from DescribeStacks in --region, then works on them', async () => {
    const { result, calls } = await withStub([
      'keys',
      'create',
      '--plan',
      'free',
      '--stage',
      'staging',
      '--region',
      'eu-central-1',
      '--endpoint',
      t.endpoint,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/on staging \(Staging-Data, eu-central-1, http/);
    expect(calls).toEqual([{ stack: 'Staging-Data', region: 'eu-central-1' }]);
    expect(await scanAll(t.client, t.tables.apiKeys)).toHaveLength(1);
  });

  it('asks in the region of the usual AWS settings (AWS_REGION) when --region is not given', async () => {
    const { result, calls } = await withStub(
      ['keys', 'list', '--json', '--stage', 'staging', '--endpoint', t.endpoint],
      { env: { AWS_REGION: 'eu-central-1' } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toHaveLength(1);
    expect(calls).toEqual([{ stack: 'Staging-Data', region: 'eu-central-1' }]);
  });

  it('prefers an outputs file in the working directory: CloudFormation is not asked', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'cdk-outputs.staging.json'), JSON.stringify(stacks));
    const { result, calls } = await withStub(
      ['keys', 'list', '--stage', 'staging', '--endpoint', t.endpoint],
      { cwd: dir },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(calls).toEqual([]);
  });

  it('a stack missing in that region is one line, exit 1', async () => {
    const { result } = await withStub(['keys', 'list', '--stage', 'production'], {
      env: { AWS_REGION: 'us-east-1' },
    });
    expectOneLineError(
      result,
      1,
      /^error: stack Production-Data not found in us-east-1 \(wrong region\? pass --region REGION or set AWS_REGION; not deployed\?\)$/,
    );
  });

  it('no credentials is one line, exit 1', async () => {
    const { result } = await withStub(
      ['keys', 'list', '--stage', 'staging', '--region', 'eu-west-1'],
      {
        stub: {
          error: {
            name: 'CredentialsProviderError',
            message: 'Could not load credentials from any providers',
          },
        },
      },
    );
    expectOneLineError(
      result,
      1,
      /^error: AWS credentials missing or refused to read stack Staging-Data from CloudFormation \(Could not load credentials from any providers\): set AWS_PROFILE/,
    );
  });

  it('no region at all is one line, exit 1', async () => {
    const { result, calls } = await withStub(['keys', 'list', '--stage', 'staging']);
    expectOneLineError(
      result,
      1,
      /^error: no AWS region to look for stack Staging-Data in: pass --region REGION or set AWS_REGION$/,
    );
    expect(calls).toEqual([]);
  });
});

describe('production tables named explicitly', () => {
  let t: TestTables;
  let names: { orders: string; apiKeys: string };
  beforeAll(async () => {
    t = await createTestTables('admin-prod-names');
    // As CloudFormation names the tables of the production Data stack.
    const suffix = randomBytes(4).toString('hex').toUpperCase();
    names = {
      orders: `${stackNames('production').data}-Orders${suffix}-X`,
      apiKeys: `${stackNames('production').data}-ApiKeys${suffix}-X`,
    };
    await ensureTables(t.client, { ...names, rateLimits: t.tables.rateLimits });
    await new DynamoDbOrderStore(t.client, names.orders).putOrders([{ id: 1n, status: 'pending' }]);
  });
  afterAll(async () => {
    for (const TableName of Object.values(names)) {
      await t.client.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
    }
    await t.drop();
  });

  const named = (...args: string[]) =>
    runCli([
      ...args,
      '--endpoint',
      t.endpoint,
      '--table-orders',
      names.orders,
      '--table-keys',
      names.apiKeys,
    ]);
  const everything = async () => [
    await scanAll(t.client, names.apiKeys),
    await scanAll(t.client, names.orders),
  ];

  it.each([
    ['create a free key', ['keys', 'create', '--plan', 'free']],
    ['revoke key key_Whatever', ['keys', 'revoke', 'key_Whatever']],
    ['ship order 1', ['orders', 'ship', '1']],
    ['import 1 orders into \\S+', ['orders', 'import', tempFile('p.json', '[{"id": 2}]')]],
  ])('asks before they %s, as --stage production does', async (action, args) => {
    const before = await everything();
    expectOneLineError(
      await named(...args),
      1,
      new RegExp(`^error: refusing to ${action} on PRODUCTION without confirmation`),
    );
    expect(await everything()).toEqual(before);
    // With --yes it goes ahead (revoking an unknown key then fails on its own terms).
    expect((await named(...args, '--yes')).stderr).not.toMatch(/PRODUCTION/);
  });
});

describe('target flags', () => {
  it.each([
    [
      [],
      /^error: no target: give --stage staging\|production, --local, or --table-orders\/--table-keys\/--table-rate-limits NAME/,
    ],
    [['--stage', 'prod'], /^error: --stage must be one of staging, production, got "prod"$/],
    [['--stage', 'staging', '--local'], /^error: --stage and --local exclude each other$/],
    [
      ['--stage', 'staging', '--table-keys', 'k'],
      /^error: --table-keys cannot be combined with --stage/,
    ],
    [['--outputs', 'x.json', '--table-keys', 'k'], /^error: --outputs goes with --stage$/],
    [
      ['--local', '--endpoint', 'http://127.0.0.1:8000'],
      /^error: --local takes its endpoint and tables from the running npm start/,
    ],
    [
      ['--endpoint', 'localhost:8000', '--table-keys', 'k'],
      /^error: --endpoint must be an http\(s\) URL, got "localhost:8000"$/,
    ],
    [
      ['--endpoint', 'http://127.0.0.1:8000', '--table-orders', 'o'],
      /^error: this command needs --table-keys NAME$/,
    ],
  ])('refuse %j with exit 2', async (flags, message) => {
    expectOneLineError(await runCli(['keys', 'list', ...flags]), 2, message);
  });

  it('gives up on a DynamoDB that never answers within its budget, in one clear line', async () => {
    // Accepts connections and never answers, as a paused DynamoDB does.
    const silent = createTcpServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const port = (silent.address() as { port: number }).port;
    try {
      const started = performance.now();
      const result = await runCli(
        ['keys', 'list', '--endpoint', `http://127.0.0.1:${port}`, '--table-keys', 'keys'],
        { env: { STORE_ORDERS_ADMIN_TIMEOUT_SECONDS: '1' } },
      );
      expectOneLineError(
        result,
        1,
        /^error: table keys on .*: DynamoDB did not answer within 1 s, 3 times \(is it running and reachable\?/,
      );
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      silent.close();
    }
  });

  it('--local without a running npm start says how to start one', async () => {
    expectOneLineError(
      await runCli(['keys', 'list', '--local']),
      1,
      /^error: no running local API found \(no live state in \S+\): start one with npm start$/,
    );
  });
});

describe('no AWS credentials, whatever names the tables', () => {
  /** A machine with no credentials anywhere the SDK looks (no instance metadata either). */
  const noCredentials = (dir: string) => ({
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    AWS_CONFIG_FILE: join(dir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
    AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
    AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
    // Not DynamoDB Local (whose fixed credentials the client would use): AWS's.
    DYNAMODB_ENDPOINT: undefined,
  });
  const hint =
    /^error: .*: AWS credentials missing or refused to reach DynamoDB \(Could not load credentials from any providers\): set AWS_PROFILE or AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY, or run aws sso login$/;

  it('tables named with --table-keys: one line with what to do, exit 1', async () => {
    const dir = tempDir();
    const result = await runCli(
      ['keys', 'list', '--table-keys', 'Staging-Data-ApiKeys-X', '--region', 'eu-west-1'],
      {
        cwd: dir,
        env: noCredentials(dir),
      },
    );
    expectOneLineError(result, 1, hint);
  });

  it('tables from an outputs file: the same line', async () => {
    const dir = tempDir();
    const outputs = join(dir, 'cdk-outputs.staging.json');
    writeFileSync(
      outputs,
      JSON.stringify({
        [stackNames('staging').data]: {
          [STACK_OUTPUTS.region]: 'eu-west-1',
          [STACK_OUTPUTS.apiKeysTable]: 'Staging-Data-ApiKeys-X',
        },
      }),
    );
    const result = await runCli(['keys', 'list', '--stage', 'staging'], {
      cwd: dir,
      env: noCredentials(dir),
    });
    expectOneLineError(result, 1, hint);
  });
});

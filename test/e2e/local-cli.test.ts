/** `npm start` as a program: flags, bad input, seeding, the authorizer cache, clean shutdown. */
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey } from '../../lib/keys/api-key.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { localTableNames, PROJECT_ROOT, type LocalState } from '../../local/local-stack.ts';
import {
  isAlive,
  runStartExpectingExit,
  startLocalApi,
  tempStateFile,
  type LocalApi,
} from '../support/local-api.ts';
import { dynamodbEndpoint, uniquePrefix } from '../support/tables.ts';

const dir = join(tempStateFile(), '..');
function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const running: LocalApi[] = [];
afterAll(async () => {
  await Promise.all(running.map((api) => api.stop()));
});

async function start(options: Parameters<typeof startLocalApi>[0]): Promise<LocalApi> {
  const api = await startLocalApi(options);
  running.push(api);
  return api;
}

describe('bad input: one clear line, non-zero exit, no stack trace', () => {
  it.each([
    [
      'a seed file that is not JSON',
      () => ['--seed', file('broken.json', '[{"id": 1,')],
      /^error: --seed .*broken\.json: not valid JSON/,
    ],
    [
      'a seed record with a bad id',
      () => ['--seed', file('bad-id.json', '[{"id": 1}, {"id": 1.5}]')],
      /^error: --seed .*: line 1 \(record 1\): id 1\.5 is not an integer in the int64 range$/,
    ],
    [
      'a seed file that does not exist',
      () => ['--seed', join(dir, 'missing.json')],
      /^error: --seed .*missing\.json: cannot read the file \(ENOENT\)$/,
    ],
    [
      'an unknown plan',
      () => ['--keys', file('gold.json', `[{"key": "${generateApiKey()}", "plan": "gold"}]`)],
      /^error: --keys .*: record 0: plan must be one of free, pro, business, enterprise, got "gold"$/,
    ],
    [
      'enterprise without limits',
      () => ['--keys', file('ent.json', `[{"key": "${generateApiKey()}", "plan": "enterprise"}]`)],
      /^error: --keys .*: record 0: the enterprise plan needs limits/,
    ],
    [
      'enterprise limits with more per minute than per day',
      () => [
        '--keys',
        file(
          'ent-day.json',
          `[{"key": "${generateApiKey()}", "plan": "enterprise", "limits": {"perMinute": 10, "perDay": 5}}]`,
        ),
      ],
      /^error: --keys .*: record 0: limits\.perMinute \(10\) cannot be above limits\.perDay \(5\)$/,
    ],
    [
      'a key that is not one of the service',
      () => ['--keys', file('plain.json', '[{"key": "plain-local-key", "plan": "pro"}]')],
      /^error: --keys .*: record 0: key must be an API key of this service: sok_ \+ 32 letters and digits/,
    ],
    [
      'a megabyte-long value, quoted only in part',
      () => ['--seed', file('long.json', `[{"id": 1, "shipDate": "${'9'.repeat(1_000_000)}"}]`)],
      /^error: --seed .*: line 1 \(record 0\): shipDate must be an ISO 8601 date-time string, got "9{40}…"$/,
    ],
    ['an unknown flag', () => ['--colour', 'red'], /^error: Unknown option '--colour'/],
    [
      'a port out of range',
      () => ['--port', '70000'],
      /^error: --port must be an integer from 0 to 65535, got "70000"$/,
    ],
    [
      'a malformed endpoint',
      () => ['--dynamodb-endpoint', 'not a url'],
      /^error: --dynamodb-endpoint must be an http\(s\) URL/,
    ],
  ])('%s', async (_, args, message) => {
    const result = await runStartExpectingExit(args());
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('npm start --port 3001 without "--": says how npm took the flag and what to type', () => {
    const npm = spawnSync('npm', ['start', '--port', '3001'], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      env: { ...process.env, STORE_ORDERS_LOCAL_STATE: tempStateFile() },
      timeout: 60_000,
    });
    expect(npm.status).toBe(1);
    const line = npm.stderr.split('\n').find((l) => l.startsWith('error:'));
    expect(line).toMatch(/npm kept --port for itself; .* npm start -- --port 3001$/);
  });

  it('a port in use', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await runStartExpectingExit([
        '--port',
        String(port),
        '--dynamodb-endpoint',
        dynamodbEndpoint(),
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        `error: port ${port} is already in use (choose another with --port)`,
      );
    } finally {
      blocker.close();
    }
  });

  it('an unreachable DynamoDB endpoint', async () => {
    const result = await runStartExpectingExit([
      '--port',
      '0',
      '--dynamodb-endpoint',
      'http://127.0.0.1:1',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^error: cannot use DynamoDB at http:\/\/127\.0\.0\.1:1: /);
  });

  it('loses nothing already stored when the seed is bad', async () => {
    const tablePrefix = uniquePrefix('keep');
    const first = await start({
      tablePrefix,
      args: ['--seed', file('good.json', '[{"id": 77, "status": "pending"}]')],
    });
    await first.stop();
    const result = await runStartExpectingExit([
      '--dynamodb-endpoint',
      dynamodbEndpoint(),
      '--table-prefix',
      tablePrefix,
      '--seed',
      file('half-bad.json', '[{"id": 78}, {"id": "x"}]'),
    ]);
    expect(result.code).toBe(1);
    const again = await start({ tablePrefix });
    expect(again.output()).toContain('the orders table already existed; its contents were kept');
    const body = await (
      await fetch(`${again.url}/store/orders`, {
        headers: { Authorization: `Bearer ${readDemoKey(again)}` },
      })
    ).text();
    expect(body).toBe('[{"id":77,"status":"pending"}]');
  });
});

function readDemoKey(api: LocalApi): string {
  return /free\s+(sok_\w+)/.exec(api.output())?.[1] ?? '';
}

describe('start-up', () => {
  it('prints the demo orders and one demo key per plan, then the address', async () => {
    const api = await start({});
    const out = api.output();
    for (const plan of ['free', 'pro', 'business', 'enterprise'])
      expect(out).toMatch(new RegExp(`\\b${plan}\\s+sok_\\w{38}\\b`));
    expect(out).toContain('{"id":9223372036854775807,"petId":9223372036854775806');
    expect(out.trim().split('\n').at(-1)).toMatch(/^Listening on http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('loads --seed and --keys files instead of the demo data, and shows only key hints', async () => {
    const key = generateApiKey();
    const other = generateApiKey();
    const api = await start({
      args: [
        '--seed',
        file(
          'seed.json',
          '[{"id": 9223372036854775806, "petId": -9223372036854775808, "status": "shipped"}, {"id": 10}]',
        ),
        '--keys',
        file(
          'keys.json',
          JSON.stringify([
            { key, plan: 'enterprise', limits: { perMinute: 5, perDay: 9 } },
            { key: other, plan: 'pro' },
          ]),
        ),
      ],
    });
    expect(api.output()).toContain('Orders: 2 loaded from --seed');
    expect(api.output()).not.toContain(key);
    expect(api.output()).toContain(`${key.slice(0, 8)}…`);
    const response = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(await response.text()).toBe(
      '[{"id":10,"status":"pending"},{"id":9223372036854775806,"petId":-9223372036854775808,"status":"shipped"}]',
    );
    const second = await fetch(`${api.url}/store/orders`, {
      headers: { Authorization: `Bearer ${other}` },
    });
    expect(second.status).toBe(200);
  });

  it('accepts a seed file that starts with a UTF-8 byte-order mark', async () => {
    const api = await start({
      args: ['--seed', file('bom.json', '\uFEFF[{"id": 77, "status": "shipped"}]')],
    });
    expect(api.output()).toContain('Orders: 1 loaded from --seed');
  });

  it('records its endpoint and tables for the other local tools, and removes the record on exit', async () => {
    const api = await start({});
    const state = JSON.parse(readFileSync(api.stateFile, 'utf8')) as LocalState;
    expect(state).toMatchObject({
      apiUrl: api.url,
      endpoint: dynamodbEndpoint(),
      tables: localTableNames(api.tablePrefix),
    });
    await api.stop();
    expect(() => readFileSync(api.stateFile)).toThrow();
  });
});

describe('authorizer cache', () => {
  it('keeps answering for a deleted key until the TTL ends, then refuses it', async () => {
    // 5 s: the deletion and the second request fit in it on a busy machine (2 s did not, with
    // four test files at once); the refusal is asked for only once the TTL has surely ended.
    const ttlSeconds = 5;
    const key = generateApiKey();
    const api = await start({
      args: [
        '--authorizer-ttl',
        String(ttlSeconds),
        '--keys',
        file('ttl.json', JSON.stringify([{ key, plan: 'free' }])),
      ],
    });
    const get = () =>
      fetch(`${api.url}/store/orders`, { headers: { Authorization: `Bearer ${key}` } }).then(
        (r) => r.status,
      );
    const client = createDocumentClient({ endpoint: dynamodbEndpoint() });
    const asked = performance.now();
    expect(await get()).toBe(200);
    const cachedBy = performance.now();
    await client.send(
      new DeleteCommand({
        TableName: localTableNames(api.tablePrefix).apiKeys,
        Key: { keyHash: hashApiKey(key) },
      }),
    );
    client.destroy();
    // The decision was cached between `asked` and `cachedBy`: the second request comes within it.
    expect(performance.now() - asked, 'the deletion took the whole TTL').toBeLessThan(
      ttlSeconds * 1_000,
    );
    expect(await get()).toBe(200);
    await new Promise((resolve) =>
      setTimeout(resolve, cachedBy + ttlSeconds * 1_000 + 100 - performance.now()),
    );
    expect(await get()).toBe(401);
  });
});

describe('shutdown', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'stops DynamoDB Local on %s: no orphan Java process',
    async (signal) => {
      const api = await start({ ownDynamoDb: true });
      const state = JSON.parse(readFileSync(api.stateFile, 'utf8')) as LocalState;
      expect(state.dynamoDbPid).toBeGreaterThan(0);
      expect(isAlive(state.dynamoDbPid!)).toBe(true);
      expect(await api.stop(signal)).toBe(0);
      expect(isAlive(state.dynamoDbPid!)).toBe(false);
    },
  );
});

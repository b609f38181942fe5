/**
 * The client as a stranger gets it: the package built and packed as `npm run pack:client` does,
 * the tarball installed into a fresh project outside the repository, a program using it compiled
 * with `tsc --strict` under each module resolution a consumer may use (TypeScript 7; TypeScript 6
 * once), and run against `npm start` under Node 24 and under a Node 20 found on PATH (the oldest
 * its `engines` allows): a list with ids past 2^53, a cancel, a typed 404. Without a Node 20 on
 * PATH the Node 20 leg is left out with one line saying so, except in CI (CI=true), where that
 * fails. A browser-style project (lib dom, no Node types) compiles against it too.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { findNodeOnPath, OLDEST_NODE_MAJOR } from '../support/oldest-node.ts';

const run = promisify(execFile);
const OLDEST_NODE = findNodeOnPath();
const IN_CI = !['', '0', 'false', undefined].includes(process.env.CI);
if (!OLDEST_NODE && !IN_CI) {
  console.warn(
    `consumer test: no Node ${OLDEST_NODE_MAJOR} on PATH, so the client runs under Node 24 only here (CI runs both)`,
  );
}

const PROGRAM = `import { isApiError, StoreOrdersClient, type Order } from '@store-orders/client';

const [baseUrl = '', apiKey = ''] = process.argv.slice(2);
const client = new StoreOrdersClient({ baseUrl, apiKey });
const orders: Order[] = await client.listAllOrders();
const beyond = orders.filter((order) => order.id > 2n ** 53n).map((order) => String(order.id));
await client.cancelOrder(9007199254740993n);
let notFound = '';
try {
  await client.cancelOrder('424242');
} catch (error) {
  if (!isApiError(error, 'ORDER_NOT_FOUND')) throw error;
  notFound = \`\${error.status} \${error.code} sent=\${error.sent}\`;
}
const after = await client.listAllOrders();
const cancelled = after.find((order) => order.id === 9007199254740993n)?.status;
console.log(JSON.stringify({ orders: orders.length, beyond, cancelled, notFound }));
`;

const STRICT = { strict: true, target: 'es2022', skipLibCheck: false };
/** Module settings a consumer may use, each compiled to JavaScript and run. */
const RESOLUTIONS = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
} as const;

let project: string;
let api: LocalApi;

/**
 * The compilers a consumer may have: TypeScript 7 (the native compiler, this repository's
 * `typescript-7`) and TypeScript 6 (`typescript`), each run as its `tsc` command.
 */
const TSC = {
  7: join(PROJECT_ROOT, 'node_modules', 'typescript-7', 'bin', 'tsc'),
  6: join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
} as const;

/** `tsc -p tsconfig.<name>.json` in the consumer's project; throws with what tsc printed. */
function tsc(config: object, name: string, version: keyof typeof TSC = 7): void {
  const file = join(project, `tsconfig.${name}.json`);
  writeFileSync(file, JSON.stringify({ include: ['consumer.ts'], ...config }));
  try {
    execFileSync(process.execPath, [TSC[version], '-p', file, '--pretty', 'false'], {
      cwd: project,
      encoding: 'utf8',
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc ${version} (${name}) failed:\n${stdout ?? ''}${stderr ?? ''}`, {
      cause: error,
    });
  }
}

beforeAll(async () => {
  const root = mkdtempSync(join(tmpdir(), 'store-orders-consumer-'));
  // What `npm run pack:client` does, into a directory of its own.
  await run('npm', ['pack', '-w', '@store-orders/client', '--pack-destination', root], {
    cwd: PROJECT_ROOT,
  });
  const tarball = readdirSync(root).find((file) => file.endsWith('.tgz')) as string;
  project = join(root, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  await run(
    'npm',
    ['install', join(root, tarball), '--offline', '--no-audit', '--no-fund', '--ignore-scripts'],
    { cwd: project },
  );
  // Node's types, as a consumer's `npm i -D @types/node` would give them (no network here).
  mkdirSync(join(project, 'node_modules', '@types'));
  symlinkSync(
    join(PROJECT_ROOT, 'node_modules', '@types', 'node'),
    join(project, 'node_modules', '@types', 'node'),
  );
  symlinkSync(
    join(PROJECT_ROOT, 'node_modules', 'undici-types'),
    join(project, 'node_modules', 'undici-types'),
  );
  writeFileSync(join(project, 'consumer.ts'), PROGRAM);
  writeFileSync(join(project, 'process.d.ts'), 'declare const process: { argv: string[] };\n');
  api = await startLocalApi();
}, 180_000);
afterAll(() => api?.stop());

describe('the packed client in a fresh project', () => {
  it.each(Object.keys(RESOLUTIONS) as (keyof typeof RESOLUTIONS)[])(
    'compiles under strict with %s resolution and works against npm start, in Node 24 and 20',
    async (name) => {
      const outDir = `out-${name}`;
      tsc({ compilerOptions: { ...STRICT, ...RESOLUTIONS[name], types: ['node'], outDir } }, name);
      const nodes = [process.execPath, ...(OLDEST_NODE ? [OLDEST_NODE.file] : [])];
      for (const node of nodes) {
        const { stdout } = await run(node, [
          join(project, outDir, 'consumer.js'),
          api.url,
          DEMO_KEYS[1]?.key as string,
        ]);
        expect(JSON.parse(stdout), node).toEqual({
          orders: 7,
          beyond: ['9007199254740993', '9223372036854775807'],
          cancelled: 'cancelled',
          notFound: '404 ORDER_NOT_FOUND sent=true',
        });
      }
      // In CI the promise of `engines` is tested, not assumed: a missing Node 20 fails the run.
      if (IN_CI) expect(OLDEST_NODE, `no Node ${OLDEST_NODE_MAJOR} on PATH in CI`).toBeDefined();
    },
    60_000,
  );

  it('compiles under strict with TypeScript 6 too (nodenext resolution, Node types)', () => {
    tsc(
      {
        compilerOptions: { ...STRICT, ...RESOLUTIONS.nodenext, types: ['node'], noEmit: true },
      },
      'typescript-6',
      6,
    );
  }, 60_000);

  it('compiles in a browser project (lib dom, no Node types)', () => {
    tsc(
      {
        compilerOptions: {
          ...STRICT,
          ...RESOLUTIONS.bundler,
          lib: ['es2022', 'dom', 'dom.iterable'],
          types: [],
          noEmit: true,
        },
        // The program reads process.argv: declared here, as a browser build has no Node types.
        include: ['consumer.ts', 'process.d.ts'],
      },
      'browser',
    );
  }, 60_000);

  it('needs the types of fetch, as its README says: with lib es2022 and no types it does not compile', () => {
    let failure = '';
    try {
      tsc(
        {
          compilerOptions: {
            ...STRICT,
            ...RESOLUTIONS.bundler,
            lib: ['es2022'],
            types: [],
            noEmit: true,
          },
          include: ['consumer.ts', 'process.d.ts'],
        },
        'bare',
      );
    } catch (error) {
      failure = String(error);
    }
    expect(failure).toMatch(/Cannot find name '(Headers|AbortSignal|fetch|Response|URL)'/);
  });
});

/**
 * The client as a stranger gets it: the package built and packed as `npm run pack:client` does,
 * the tarball installed into a fresh project outside the repository, a program using it compiled
 * with `tsc --strict` under each module resolution a consumer may use, and run against `npm
 * start` under Node 24 and the machine's Node 20: a list with ids past 2^53, a cancel, a typed
 * 404. A browser-style project (lib dom, no Node types) compiles against it too.
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';

const run = promisify(execFile);
const TSC = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** The machine's own Node (20 here): the oldest the package promises to run on. */
const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => existsSync(path));

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

async function tsc(config: object, name: string): Promise<void> {
  const file = join(project, `tsconfig.${name}.json`);
  writeFileSync(file, JSON.stringify({ include: ['consumer.ts'], ...config }));
  await run(process.execPath, [TSC, '-p', file], { cwd: project }).catch((error: unknown) => {
    const { stdout } = error as { stdout?: string };
    throw new Error(`tsc (${name}) failed:\n${stdout ?? String(error)}`);
  });
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
      await tsc(
        { compilerOptions: { ...STRICT, ...RESOLUTIONS[name], types: ['node'], outDir } },
        name,
      );
      const nodes = [process.execPath, ...(SYSTEM_NODE ? [SYSTEM_NODE] : [])];
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
      // The machine this runs on has a Node 20: the promise of `engines` is tested, not assumed.
      expect(SYSTEM_NODE, 'no Node 20 found to run the consumer with').toBeDefined();
    },
    60_000,
  );

  it('compiles in a browser project (lib dom, no Node types)', async () => {
    await tsc(
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

  it('needs the types of fetch, as its README says: with lib es2022 and no types it does not compile', async () => {
    const failure = await tsc(
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
    ).then(
      () => '',
      (error: unknown) => String(error),
    );
    expect(failure).toMatch(/Cannot find name '(Headers|AbortSignal|fetch|Response|URL)'/);
  });
});

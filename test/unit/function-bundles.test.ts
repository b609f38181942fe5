/**
 * What each function's bundle carries, bundled as the stack bundles it. No function carries the
 * X-Ray SDK: loading it costs every cold start 20–35 ms and installs an async hook that tracks
 * every promise of the process (cls-hooked), which costs a list more CPU than its reads. Each
 * DynamoDB call is recorded by a middleware on the client instead (functions/shared/dynamodb-calls.ts).
 * And a stack trace from a bundle names the code it went through, with no source map to parse
 * (which would cost every cold start about 25 ms).
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLE_FILE, esbuildOptions } from '../../infra/constructs/service-function.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

/** The files a function's bundle is made of, bundled as the stack bundles it; no warnings. */
async function bundledPackages(fn: string): Promise<string[]> {
  const entry = join(PROJECT_ROOT, 'functions', `${fn}.ts`);
  const result = await build({
    ...esbuildOptions(entry, join(tmpdir(), `${fn}-${BUNDLE_FILE}`)),
    write: false,
    metafile: true,
  });
  // A warning (e.g. import.meta in a CommonJS bundle) is a bundle that may not run as written.
  expect(result.warnings).toEqual([]);
  return Object.keys(result.metafile.inputs);
}

const X_RAY = /node_modules\/(aws-xray-sdk-core|cls-hooked)\//;

describe('function bundles', () => {
  it.each(['list-orders', 'list-order-pages', 'cancel-order', 'authorizer'])(
    '%s carries no X-Ray SDK and records its DynamoDB calls',
    async (fn) => {
      const inputs = await bundledPackages(fn);
      expect(inputs.filter((input) => X_RAY.test(input))).toEqual([]);
      expect(inputs.some((input) => input.endsWith('functions/shared/dynamodb-calls.ts'))).toBe(
        true,
      );
    },
  );
});

describe("the v2 list's page reader", () => {
  // lib/dynamodb/order-pages.ts and its rooms (plan, candidate stream, check, failures) with
  // index readiness are 12.6 KB of list-order-pages' bundle (2026-11-28) that a cold cancel or v1
  // list would parse for nothing (functions/shared/page-stores.ts).
  const ROOMS = ['order-pages', 'page-plan', 'candidate-stream', 'page-check', 'page-failures'];
  const PAGE_READER = new RegExp(`lib/dynamodb/(${[...ROOMS, 'index-readiness'].join('|')})\\.ts$`);

  it.each(['list-orders', 'cancel-order', 'authorizer'])('is not in %s', async (fn) => {
    const inputs = await bundledPackages(fn);
    expect(inputs.filter((input) => PAGE_READER.test(input))).toEqual([]);
  });

  it('is in list-order-pages', async () => {
    const inputs = await bundledPackages('list-order-pages');
    expect(inputs.filter((input) => PAGE_READER.test(input))).toHaveLength(ROOMS.length + 1);
  });
});

describe('a stack trace from a bundle', () => {
  it('names the functions it went through, with no source map', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-stack-'));
    try {
      const entry = join(dir, 'entry.ts');
      const operations = join(PROJECT_ROOT, 'lib', 'orders', 'operations.ts');
      writeFileSync(
        entry,
        `import { parseOrderId } from ${JSON.stringify(operations)};
function handleRequest() { return parseOrderId('not-a-number'); }
try { handleRequest(); } catch (error) { console.log(error.stack); }`,
      );
      const outfile = join(dir, BUNDLE_FILE);
      await build(esbuildOptions(entry, outfile));
      expect(readFileSync(outfile, 'utf8')).not.toContain('sourceMappingURL');
      const stack = execFileSync(process.execPath, [outfile], { encoding: 'utf8' });
      expect(stack).toMatch(/^InvalidOrderId: /);
      expect(stack).toMatch(/at parseOrderId \(/);
      expect(stack).toMatch(/at handleRequest \(/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('each function bundle, loaded as Lambda loads it', () => {
  it.each(['list-orders', 'list-order-pages', 'cancel-order', 'authorizer'])(
    '%s loads in a fresh Node 24 process and exports its handler',
    async (fn) => {
      const dir = mkdtempSync(join(tmpdir(), 'bundle-load-'));
      try {
        const outfile = join(dir, BUNDLE_FILE);
        await build(esbuildOptions(join(PROJECT_ROOT, 'functions', `${fn}.ts`), outfile));
        // As Lambda's Node.js runtime loads it: require(), the streaming global in place.
        const loaded = execFileSync(
          process.execPath,
          [join(PROJECT_ROOT, 'bench', 'load-bundle.ts'), outfile],
          { encoding: 'utf8', env: { ...process.env, AWS_REGION: 'eu-west-1', NODE_OPTIONS: '' } },
        );
        expect(JSON.parse(loaded)).toMatchObject({ handler: 'function' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

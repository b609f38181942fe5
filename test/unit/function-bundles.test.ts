/**
 * What each function's bundle carries, bundled as the stack bundles it. listOrders must not carry
 * the X-Ray SDK: loading it installs an async hook that tracks every promise of the process
 * (cls-hooked), which costs a list more CPU than its reads (functions/shared/tracer.ts).
 */
import { build } from 'esbuild';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLING } from '../../infra/constructs/service-function.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

async function bundledPackages(fn: string): Promise<string[]> {
  const result = await build({
    entryPoints: [join(PROJECT_ROOT, 'functions', `${fn}.ts`)],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLING.target,
    mainFields: BUNDLING.mainFields,
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs);
}

const X_RAY = /node_modules\/(aws-xray-sdk-core|cls-hooked)\//;

describe('function bundles', () => {
  it('listOrders carries no X-Ray SDK (no promise-tracking hook on the list path)', async () => {
    const inputs = await bundledPackages('list-orders');
    expect(inputs.some((input) => input.includes('functions/shared/compression.ts'))).toBe(true);
    expect(inputs.filter((input) => X_RAY.test(input))).toEqual([]);
  });

  it.each(['cancel-order', 'authorizer'])('%s is traced with the X-Ray SDK', async (fn) => {
    const inputs = await bundledPackages(fn);
    expect(inputs.some((input) => X_RAY.test(input))).toBe(true);
  });
});

/**
 * What each function's bundle carries, bundled as the stack bundles it. No function carries the
 * X-Ray SDK: loading it costs every cold start 20–35 ms and installs an async hook that tracks
 * every promise of the process (cls-hooked), which costs a list more CPU than its reads. Each
 * DynamoDB call is recorded by a middleware on the client instead (functions/shared/dynamodb-calls.ts).
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
  it.each(['list-orders', 'cancel-order', 'authorizer'])(
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

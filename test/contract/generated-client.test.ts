/**
 * A client generated from the OpenAPI document, as a client developer would make one, following
 * the document's recipe for int64 (openapi-typescript with `format: int64` → `bigint`, bodies
 * parsed with a reviver that reads the source text): generated into a temporary folder, compiled
 * with a small program using openapi-fetch under `strict`, and run against the local API. It must
 * cancel the order above 2^53 that it listed — not its neighbour, which a JavaScript `number`
 * would have named.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { OPENAPI_PATH } from '../support/openapi.ts';

/** Step 1 of the recipe: openapi-typescript, with int64 as bigint. */
async function generateTypes(): Promise<string> {
  const bigint = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword);
  const ast = await openapiTS(pathToFileURL(OPENAPI_PATH), {
    transform: (schema) => (schema.format === 'int64' ? bigint : undefined),
  });
  return astToString(ast);
}

/** Steps 2 and 3: a client developer's program, listing and cancelling with openapi-fetch. */
const PROGRAM = `import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

type Order = components['schemas']['Order'];

// The int64 fields, built from their source text: never through a JavaScript number.
const int64 = (key: string, value: unknown, context?: { source?: string }) =>
  (key === 'id' || key === 'petId') && typeof value === 'number' && context?.source !== undefined
    ? BigInt(context.source)
    : value;

const [baseUrl, apiKey] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${apiKey}\` } });

// The last list and its ETag: sent back in If-None-Match, kept on 304 Not Modified.
let kept: { etag: string; orders: Order[] } | undefined;

async function listOrders(): Promise<{ orders: Order[]; notModified: boolean }> {
  const { data, error, response } = await client.GET('/store/orders', {
    parseAs: 'text',
    params: { header: kept ? { 'If-None-Match': kept.etag } : {} },
  });
  if (response.status === 304 && kept) return { orders: kept.orders, notModified: true };
  if (data === undefined) throw new Error(\`list: \${response.status} \${JSON.stringify(error)}\`);
  const orders = JSON.parse(data, int64) as Order[];
  const etag = response.headers.get('ETag');
  kept = etag ? { etag, orders } : undefined;
  return { orders, notModified: false };
}

const show = (orders: Order[]) => orders.map((order) => [String(order.id), order.status]);
const first = await listOrders();
const before = first.orders;
const unchanged = await listOrders();
const target = before.find((order) => (order.id ?? 0n) > 2n ** 53n && order.status === 'pending');
if (target?.id === undefined) throw new Error('no pending order above 2^53');
const { response } = await client.DELETE('/store/orders/{orderId}', {
  params: { path: { orderId: target.id } },
});
const changed = await listOrders();
const after = changed.orders;
console.log(JSON.stringify({
  cancelled: String(target.id),
  status: response.status,
  before: show(before),
  after: show(after),
  notModified: [first.notModified, unchanged.notModified, changed.notModified],
  sameData: JSON.stringify(show(unchanged.orders)) === JSON.stringify(show(before)),
}));
`;

/** The program's type errors under `strict`, with the generated types and openapi-fetch's. */
function typeErrors(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2024,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2024.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file
      ? `${diagnostic.file.fileName}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}`
      : '';
    return `${where} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

describe('a client generated with openapi-typescript, as the document says', () => {
  let api: LocalApi;
  let folder: string;
  let types: string;

  beforeAll(async () => {
    [api] = await Promise.all([
      startLocalApi(),
      (async () => {
        folder = mkdtempSync(join(tmpdir(), 'generated-client-'));
        // The program resolves openapi-fetch (and the compiler @types/node) as a project would.
        symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(folder, 'node_modules'), 'dir');
        writeFileSync(join(folder, 'package.json'), '{"type": "module"}\n');
        types = await generateTypes();
        writeFileSync(join(folder, 'api.ts'), types);
        writeFileSync(join(folder, 'program.ts'), PROGRAM);
      })(),
    ]);
  });

  afterAll(async () => {
    await api?.stop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('types int64 fields and the order id parameter as bigint', () => {
    expect(types).toMatch(/\bid\?: bigint;/);
    expect(types).toMatch(/\bpetId\?: bigint;/);
    expect(types).toMatch(/\bOrderId: bigint;/);
  });

  it('compiles with a program using openapi-fetch under strict', () => {
    expect(typeErrors(join(folder, 'program.ts'))).toEqual([]);
  });

  it('lists the orders (the second time a 304: the kept list) and cancels the one above 2^53 it listed, not its neighbour', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(folder, 'program.ts'), api.url, DEMO_KEYS[3]!.key],
      { cwd: folder },
    );
    const result = JSON.parse(stdout) as {
      cancelled: string;
      status: number;
      before: [string, string][];
      after: [string, string][];
      notModified: boolean[];
      sameData: boolean;
    };
    const statusOf = (orders: [string, string][], id: string) =>
      orders.find(([listed]) => listed === id)?.[1];

    // The demo data has 2^53 + 1 pending and no order 2^53, which a double would have sent.
    expect(statusOf(result.before, '9007199254740993')).toBe('pending');
    expect(statusOf(result.before, '9007199254740992')).toBeUndefined();
    expect(result.cancelled).toBe('9007199254740993');
    expect(result.status).toBe(204);
    expect(statusOf(result.after, '9007199254740993')).toBe('cancelled');
    // Nothing else changed, and every id came back digit for digit.
    expect(result.after.filter(([id]) => id !== '9007199254740993')).toEqual(
      result.before.filter(([id]) => id !== '9007199254740993'),
    );
    expect(statusOf(result.after, '9223372036854775807')).toBe('shipped');
    // By hand, with If-None-Match: the second list was a 304 (the kept list), the third, after
    // the cancel, the whole list again.
    expect(result.notModified).toEqual([false, true, false]);
    expect(result.sameData).toBe(true);
  });
});

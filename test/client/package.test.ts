/**
 * The client package stays portable: no runtime dependencies, nothing of Node or of the server,
 * and it bundles for browsers as it is.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { API_ERROR_STATUS } from '../../client/src/errors.ts';
import { ERROR_CATALOGUE } from '../../lib/api/errors.ts';

const CLIENT = join(import.meta.dirname, '..', '..', 'client');
const SOURCES = readdirSync(join(CLIENT, 'src')).filter((f) => f.endsWith('.ts'));

describe('the client package', () => {
  it('has no runtime dependencies and exports its entry point', () => {
    const pkg = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: '@store-orders/client', type: 'module' });
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.peerDependencies).toBeUndefined();
    expect(pkg.exports['.']).toMatchObject({
      types: './dist/index.d.ts',
      default: './dist/index.js',
    });
  });

  it('exports exactly what its README documents: adding a name is a decision made here', () => {
    const entry = join(CLIENT, 'src', 'index.ts');
    const program = ts.createProgram([entry], {
      allowImportingTsExtensions: true,
      noEmit: true,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
    });
    const checker = program.getTypeChecker();
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry) as ts.SourceFile);
    const exports = checker.getExportsOfModule(module as ts.Symbol).map((symbol) => {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return `${target.flags & ts.SymbolFlags.Value ? 'value' : 'type'} ${symbol.name}`;
    });
    expect(exports.sort()).toEqual([
      'type ApiErrorCode',
      'type CallOptions',
      'type ErrorCode',
      'type HeadersInput',
      'type ListCallOptions',
      'type Order',
      'type OrderFilter',
      'type OrderList',
      'type OrderPage',
      'type OrderStatus',
      'type PacerSnapshot',
      'type PageCallOptions',
      'type RateLimitInfo',
      'type StoreOrdersClientOptions',
      'value ApiError',
      'value OrderListParseError',
      'value StoreOrdersClient',
      'value isApiError',
    ]);
    const readme = readFileSync(join(CLIENT, 'README.md'), 'utf8');
    for (const name of exports.map((e) => e.split(' ')[1] as string)) {
      expect(readme, `${name} is not in the README`).toContain(`\`${name}\``);
    }
  });

  it("copies the service's error catalogue exactly (codes and statuses)", () => {
    const statuses = Object.fromEntries(
      Object.entries(ERROR_CATALOGUE).map(([code, entry]) => [code, entry.status]),
    );
    expect(API_ERROR_STATUS).toEqual(statuses);
  });

  it.each(SOURCES)('%s imports only its own modules', (file) => {
    const text = readFileSync(join(CLIENT, 'src', file), 'utf8');
    // The module's own imports, as the compiler reads them: an @example's import is a comment.
    const specifiers = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
    for (const specifier of specifiers) expect(specifier).toMatch(/^\.\/[a-z-]+\.ts$/);
    const nodeGlobals: string[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node) && ['process', 'Buffer', 'require'].includes(node.text))
        nodeGlobals.push(node.text);
      ts.forEachChild(node, visit);
    };
    visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest));
    expect(nodeGlobals).toEqual([]);
  });

  it('bundles for browsers', async () => {
    const result = await build({
      entryPoints: [join(CLIENT, 'src', 'index.ts')],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    expect(result.outputFiles[0]?.text).toContain('StoreOrdersClient');
  });
});

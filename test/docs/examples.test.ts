/**
 * Every TSDoc `@example` of the code type-checks against the code it documents: each example is
 * compiled as a module beside its file (its relative imports resolve as they read), the client's
 * as a user of the package (`@store-orders/client` is its source). An example that calls a
 * method renamed, or passes what a method no longer takes, fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

/**
 * The files whose examples a contributor reads first (the operation model, the stores, the
 * client), and where their examples stand: beside the file, as one module (a class's example,
 * then its methods' examples that use its names), unless `as` names where a user's module
 * stands — httpFunction's examples are each a handler of functions/, a module of its own.
 */
const DOCUMENTED: readonly { readonly file: string; readonly as?: string }[] = [
  { file: 'functions/shared/http-function.ts', as: 'functions/a-handler.ts' },
  { file: 'lib/dynamodb/orders-table.ts' },
  { file: 'lib/dynamodb/order-pages.ts' },
  { file: 'lib/dynamodb/keys-table.ts' },
  { file: 'lib/dynamodb/list-version.ts' },
  { file: 'lib/dynamodb/rate-limit-table.ts' },
  { file: 'client/src/client.ts' },
];

interface Example {
  readonly file: string;
  readonly line: number;
  readonly code: string;
}

/** The code blocks of a file's `@example` tags, their comment's leading `*` taken off. */
function examplesOf(file: string): Example[] {
  const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
  const found: Example[] = [];
  for (const match of text.matchAll(
    /@example\s*\n\s*\*\s*```typescript\n([\s\S]*?)\n\s*\*\s*```/g,
  )) {
    const code = match[1]!
      .split('\n')
      .map((line) => line.replace(/^\s*\* ?/, ''))
      .join('\n');
    found.push({ file, line: text.slice(0, match.index).split('\n').length, code });
  }
  return found;
}

/**
 * A file's examples as one module, as a reader reads them: the first (the class's or the
 * module's) at the top, where its names (`orders`, `client`) are what the later examples of its
 * methods use; each later one in a block of its own; the imports of all, once, at the top.
 * Returns the module and, for each of its lines, the example line it came from.
 */
function moduleOf(examples: readonly Example[]): { code: string; origin: string[] } {
  const imports = new Set<string>();
  const lines: string[] = [];
  const origin: string[] = [];
  examples.forEach((example, i) => {
    const source = ts.createSourceFile('example.ts', example.code, ts.ScriptTarget.Latest);
    const body: string[] = [];
    for (const statement of source.statements) {
      const text = statement.getText(source);
      if (ts.isImportDeclaration(statement)) imports.add(text);
      else body.push(text);
    }
    const own = body.flatMap((text) => text.split('\n'));
    const block = i === 0 ? own : ['{', ...own, '}'];
    lines.push(...block);
    origin.push(...block.map(() => `${example.file}:${example.line}`));
  });
  const head = [...imports].flatMap((text) => text.split('\n'));
  return {
    code: [...head, ...lines, 'export {};'].join('\n'),
    origin: [...head.map(() => `${examples[0]!.file} (an import)`), ...origin],
  };
}

const examples = DOCUMENTED.flatMap(({ file }) => examplesOf(file));

describe('the TSDoc examples', () => {
  it('are found in every documented module (one at least each)', () => {
    for (const { file } of DOCUMENTED) {
      expect(
        examples.some((e) => e.file === file),
        `${file} has an @example`,
      ).toBe(true);
    }
  });

  it('type-check against the code they document', () => {
    const config = ts.getParsedCommandLineOfConfigFile(
      join(PROJECT_ROOT, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )!;
    const options: ts.CompilerOptions = {
      ...config.options,
      // The package's name, as a user imports it, read from its source (its dist is built on pack).
      paths: { '@store-orders/client': [join(PROJECT_ROOT, 'client', 'src', 'index.ts')] },
    };
    // Each file's examples one module beside it (or each a module where `as` says), in memory.
    const modules = new Map(
      DOCUMENTED.flatMap(({ file, as }) => {
        const own = examples.filter((e) => e.file === file);
        return as === undefined
          ? [[join(PROJECT_ROOT, file.replace(/\.ts$/, '.examples.ts')), moduleOf(own)] as const]
          : own.map(
              (e, i) =>
                [join(PROJECT_ROOT, as.replace(/\.ts$/, `-${i}.ts`)), moduleOf([e])] as const,
            );
      }),
    );
    const virtual = new Map([...modules].map(([name, { code }]) => [name, code]));
    expect(modules.size).toBe(DOCUMENTED.length + 1); // httpFunction's two handlers
    const host = ts.createCompilerHost(options);
    const real = ts.createCompilerHost(options);
    host.fileExists = (name) => virtual.has(name) || real.fileExists(name);
    host.readFile = (name) => virtual.get(name) ?? real.readFile(name);
    host.getSourceFile = (name, version, ...rest) => {
      const code = virtual.get(name);
      return code === undefined
        ? real.getSourceFile(name, version, ...rest)
        : ts.createSourceFile(name, code, version);
    };
    const program = ts.createProgram([...virtual.keys()], options, host);
    const problems = [...modules].flatMap(([name, { origin }]) => {
      const source = program.getSourceFile(name)!;
      return [
        ...program.getSyntacticDiagnostics(source),
        ...program.getSemanticDiagnostics(source),
      ].map((d) => {
        const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
        const text = source.text.split('\n')[line]?.trim();
        return `${origin[line]} (@example): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')} — ${text}`;
      });
    });
    expect(problems).toEqual([]);
  }, 120_000);
});

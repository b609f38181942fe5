/**
 * What lib/ may know (CONTRIBUTING, "Habits"), checked on the imports of every file: no Lambda,
 * API Gateway or middy types anywhere in lib/ (they stay in functions/ and local/); the AWS SDK
 * only in lib/dynamodb/ and lib/stack-outputs.ts; the domain folders reach storage only through
 * their ports, never lib/dynamodb/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

/** What a module's text imports: `import … from`, `export … from`, a bare `import '…'`, `import('…')`. */
function importsIn(text: string): string[] {
  return [
    ...text.matchAll(
      /^\s*(?:import|export)\b[^;]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gms,
    ),
  ].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

function importsOf(file: string): string[] {
  return importsIn(readFileSync(join(PROJECT_ROOT, file), 'utf8'));
}

const LIB = filesUnder('lib');
const DOMAIN = ['lib/orders', 'lib/keys', 'lib/limits'];

describe('what lib/ may know', () => {
  it('reads imports (a file known to import the SDK is seen to)', () => {
    expect(importsOf('lib/dynamodb/client.ts').some((m) => m.startsWith('@aws-sdk/'))).toBe(true);
    // Every form of import, a module loaded for its effects or at run time included.
    expect(
      importsIn(
        "import type { A } from './a.ts';\nimport './b.ts';\nexport { c } from './c.ts';\nconst d = await import('./d.ts');",
      ).sort(),
    ).toEqual(['./a.ts', './b.ts', './c.ts', './d.ts']);
  });

  it.each(LIB.map((file) => [file]))('%s imports no Lambda, API Gateway or middy types', (file) => {
    expect(importsOf(file).filter((m) => m === 'aws-lambda' || m.startsWith('@middy/'))).toEqual(
      [],
    );
  });

  it.each(
    LIB.filter((f) => !f.startsWith('lib/dynamodb/') && f !== 'lib/stack-outputs.ts').map((f) => [
      f,
    ]),
  )('%s imports no AWS SDK', (file) => {
    expect(importsOf(file).filter((m) => m.startsWith('@aws-sdk/'))).toEqual([]);
  });

  it.each(LIB.filter((f) => DOMAIN.some((d) => f.startsWith(`${d}/`))).map((f) => [f]))(
    '%s reaches storage only through its ports',
    (file) => {
      const stores = importsOf(file).filter((m) => m.includes('/dynamodb/'));
      expect(stores, relative(PROJECT_ROOT, file)).toEqual([]);
    },
  );
});

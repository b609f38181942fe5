/**
 * `npm run lint:cfn` (infra/cfn-lint.ts): AWS's linter on every synthesized template. What needs no
 * cfn-lint is tested here; the run of the real linter is in test/ci/cfn-lint.test.ts, which CI runs
 * beside `npm run lint:cfn` (cfn-lint is a Python package, not among what `npm test` needs).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CFN_LINT_VERSION,
  CONFIG_FILE,
  findTemplates,
  parseFindings,
  report,
} from '../../infra/cfn-lint.ts';
import { assembly, lint } from '../support/cloud-assembly.ts';

describe('cfn-lint on the synthesized templates', () => {
  it('finds the templates of nested stage assemblies', () => {
    const dir = assembly({ Resources: {} });
    expect(findTemplates(dir)).toEqual([join(dir, 'assembly-Staging', 'StagingApi.template.json')]);
  });

  it('fails and says how to get cfn-lint when it is missing', () => {
    const run = lint(assembly({ Resources: {} }), {
      ...process.env,
      CFN_LINT: '/nonexistent/cfn-lint',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`pip install cfn-lint==${CFN_LINT_VERSION}`);
    expect(run.stderr).toContain('Python 3.11');
  });

  it('fails when there is nothing to lint (synth first)', () => {
    const run = lint(mkdtempSync(join(tmpdir(), 'cfn-lint-empty-')));
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/no \*\.template\.json .*npm run synth/);
  });

  it('counts errors and warnings per template, informational findings do not fail', () => {
    const findings = parseFindings(
      JSON.stringify([
        {
          Filename: 'a.json',
          Level: 'Error',
          Message: 'm',
          Rule: { Id: 'E1' },
          Location: { Start: { LineNumber: 3 } },
        },
        {
          Filename: 'a.json',
          Level: 'Warning',
          Message: 'm',
          Rule: { Id: 'W1' },
          Location: { Start: { LineNumber: 4 } },
        },
        {
          Filename: 'b.json',
          Level: 'Informational',
          Message: 'm',
          Rule: { Id: 'I1' },
          Location: { Start: { LineNumber: 5 } },
        },
      ]),
    );
    expect(report(['a.json', 'b.json'], findings)).toEqual([
      'FAIL a.json: 1 error, 1 warning',
      '     E1 line 3: m',
      '     W1 line 4: m',
      'ok   b.json',
      '     I1 line 5: m',
    ]);
  });

  it('silences only rules listed with a reason in the config file', () => {
    const config = readFileSync(CONFIG_FILE, 'utf8');
    const silenced = [...config.matchAll(/^ {2}- ([EWI]\d{4})$/gm)].map((m) => m[1]);
    expect(silenced).toEqual(['W3005']);
    for (const rule of silenced) {
      // The reason is the comment just above the rule.
      expect(config).toMatch(new RegExp(`# ${rule} [^\\n]+\\n(\\s+#[^\\n]*\\n)+\\s+- ${rule}`));
    }
  });
});

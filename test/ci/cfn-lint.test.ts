/**
 * `npm run lint:cfn` with the real cfn-lint (a Python package): CI's own step, run by .ci/run
 * (`npm run test:ci-tools`), not by `npm test`, whose prerequisites are Node and Java only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assembly, lint } from '../support/cloud-assembly.ts';

describe('cfn-lint on the synthesized templates, with the real linter', () => {
  it('fails, naming the template and the rule, on an error; one line per template', () => {
    const dir = assembly({
      Resources: { Topic: { Type: 'AWS::SNS::Topic', Properties: { NoSuchProperty: true } } },
    });
    mkdirSync(join(dir, 'assembly-Production'));
    writeFileSync(
      join(dir, 'assembly-Production', 'ProductionApi.template.json'),
      JSON.stringify({ Resources: { Topic: { Type: 'AWS::SNS::Topic' } } }),
    );
    const run = lint(dir);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stdout).toMatch(/^FAIL .*StagingApi\.template\.json: 1 error$/m);
    expect(run.stdout).toMatch(/^ {5}E3002 line \d+: .*NoSuchProperty/m);
    expect(run.stdout).toMatch(/^ok {3}.*ProductionApi\.template\.json$/m);
  });
});

/** Cloud assemblies made by hand, and `npm run lint:cfn`'s script run on them. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, '..', '..', 'infra', 'cfn-lint.ts');

/** A cloud assembly with one template, nested as `cdk synth` nests a stage's. */
export function assembly(template: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-lint-'));
  mkdirSync(join(dir, 'assembly-Staging'));
  writeFileSync(
    join(dir, 'assembly-Staging', 'StagingApi.template.json'),
    JSON.stringify(template),
  );
  writeFileSync(join(dir, 'manifest.json'), '{}');
  return dir;
}

/** `npm run lint:cfn -- <dir>`, as a child process. */
export const lint = (dir: string, env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8', env });

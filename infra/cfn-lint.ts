/**
 * `npm run lint:cfn [-- DIR]`: AWS's CloudFormation linter (cfn-lint) on every template that
 * `npm run synth` wrote under DIR (default cdk.out; the stages' nested assemblies included).
 * Settings, and each silenced rule with its reason, are in .cfnlintrc.yaml. Prints one line per
 * template and the findings; fails on any error or warning, when there is no template, and when
 * cfn-lint is missing (saying how to get it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, globSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The release this project pins (newer ones download schemas at run time: no offline use). */
export const CFN_LINT_VERSION = '1.51.0';
export const CONFIG_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '.cfnlintrc.yaml');
export const HOW_TO_GET =
  `cfn-lint (AWS's CloudFormation linter) was not found. Install it with Python 3.11:\n` +
  `  pip install cfn-lint==${CFN_LINT_VERSION}\n` +
  `(with pyenv: pyenv shell 3.11 first; set CFN_LINT=/path/to/cfn-lint to use another copy)`;

export type Level = 'Error' | 'Warning' | 'Informational';

export interface Finding {
  readonly file: string;
  readonly rule: string;
  readonly level: Level;
  readonly line: number;
  readonly message: string;
}

/** Every synthesized template under a cloud assembly directory, nested assemblies included. */
export function findTemplates(dir: string): string[] {
  return globSync('**/*.template.json', { cwd: dir })
    .map((file) => join(dir, file))
    .sort();
}

function runs(command: string): string | undefined {
  const result = spawnSync(command, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** cfn-lint: $CFN_LINT if set, else on PATH, else pyenv's shim (not on PATH in plain shells). */
export function locateCfnLint(
  env: NodeJS.ProcessEnv = process.env,
): { command: string; version: string } | undefined {
  const candidates = env.CFN_LINT
    ? [env.CFN_LINT]
    : ['cfn-lint', join(env.PYENV_ROOT ?? join(homedir(), '.pyenv'), 'shims', 'cfn-lint')];
  for (const command of candidates) {
    if (command.includes('/') && !existsSync(command)) continue;
    const version = runs(command);
    if (version) return { command, version };
  }
  return undefined;
}

interface JsonMatch {
  Filename: string;
  Level: Level;
  Message: string;
  Rule: { Id: string };
  Location: { Start: { LineNumber: number } };
}

/** cfn-lint's `--format json` output as findings. */
export function parseFindings(json: string): Finding[] {
  return (JSON.parse(json) as JsonMatch[]).map((m) => ({
    file: m.Filename,
    rule: m.Rule.Id,
    level: m.Level,
    line: m.Location.Start.LineNumber,
    message: m.Message,
  }));
}

/** Errors and warnings fail; informational findings are shown only. */
export const fails = (finding: Finding) => finding.level !== 'Informational';

/** One line per template (`ok   path` / `FAIL path: …`), each followed by its findings. */
export function report(templates: readonly string[], findings: readonly Finding[]): string[] {
  const lines: string[] = [];
  const count = (n: number, what: string) => (n ? [`${n} ${what}${n > 1 ? 's' : ''}`] : []);
  for (const template of templates) {
    const own = findings.filter((f) => relative(f.file, template) === '');
    const errors = own.filter((f) => f.level === 'Error').length;
    const warnings = own.filter((f) => f.level === 'Warning').length;
    lines.push(
      own.some(fails)
        ? `FAIL ${template}: ${[...count(errors, 'error'), ...count(warnings, 'warning')].join(', ')}`
        : `ok   ${template}`,
    );
    for (const f of own) lines.push(`     ${f.rule} line ${f.line}: ${f.message}`);
  }
  return lines;
}

function main(dir: string): number {
  const templates = findTemplates(dir);
  if (templates.length === 0) {
    console.error(`error: no *.template.json under ${dir}: run npm run synth first`);
    return 1;
  }
  const cfnLint = locateCfnLint();
  if (!cfnLint) {
    console.error(`error: ${HOW_TO_GET}`);
    return 1;
  }
  if (!cfnLint.version.endsWith(` ${CFN_LINT_VERSION}`)) {
    console.error(
      `warning: ${cfnLint.version} is not the pinned ${CFN_LINT_VERSION} (pip install cfn-lint==${CFN_LINT_VERSION})`,
    );
  }
  const run = spawnSync(
    cfnLint.command,
    ['--format', 'json', '--config-file', CONFIG_FILE, '--', ...templates],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  let findings: Finding[];
  try {
    findings = parseFindings(run.stdout);
  } catch {
    console.error(`error: cfn-lint failed (exit ${run.status}):\n${run.stderr || run.stdout}`);
    return 1;
  }
  for (const line of report(templates, findings)) console.log(line);
  const failing = findings.filter(fails).length;
  console.log(
    `cfn-lint ${CFN_LINT_VERSION}: ${templates.length} templates, ${failing} errors or warnings`,
  );
  return failing > 0 ? 1 : 0;
}

if (import.meta.main) process.exitCode = main(process.argv[2] ?? 'cdk.out');

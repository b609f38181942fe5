/**
 * The runbooks of docs/ run as written: their shell blocks, taken from the document, run with bash
 * against a stand-in AWS CLI (a node script on PATH that logs each call and answers from a
 * fixture) and a `sleep` that returns at once.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

/** A document of docs/. */
export const docs = (file: string) => readFileSync(join(PROJECT_ROOT, 'docs', file), 'utf8');

/**
 * The rows of a document's markdown table whose header starts with these columns (`| a | b |`),
 * each row its cells; undefined when the document has no such table.
 */
export function markdownTable(file: string, ...columns: string[]): string[][] | undefined {
  return markdownTableIn(docs(file), ...columns);
}

/** The same, in a text (a section of a document). */
export function markdownTableIn(text: string, ...columns: string[]): string[][] | undefined {
  const header = new RegExp(`^${columns.map((c) => `\\| ${c} +`).join('')}\\|`, 'm');
  const start = text.search(header);
  if (start < 0) return undefined;
  const lines = text.slice(start).split('\n');
  const end = lines.findIndex((line) => !line.startsWith('|'));
  return lines.slice(2, end < 0 ? undefined : end).map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

/** The text of a document under a heading, up to the next heading of any level. */
export function docSection(file: string, heading: string): string {
  const text = docs(file);
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file}: no heading ${heading}`);
  const rest = text.slice(start + heading.length + 2);
  const end = rest.search(/^#{1,6} /m);
  return end < 0 ? rest : rest.slice(0, end);
}

/** A step of docs/upgrade-from-1.0.0.md: its settings as `production:<key>` (absent: not given). */
export interface UpgradeStep {
  readonly step: number;
  readonly settings: Readonly<Record<string, unknown>>;
}

/** The upgrade how-to's table of deploys, each row's settings (— is a setting not given). */
export function upgradeSteps(): UpgradeStep[] {
  const section = docSection('upgrade-from-1.0.0.md', '## The deploys, one at a time');
  const rows = section
    .split('\n')
    .filter((line) => /^\| \d+ /.test(line))
    .map((line) => line.split('|').map((cell) => cell.trim().replace(/^`|`$/g, '')));
  const value = (cell: string) => (cell === '—' ? undefined : (JSON.parse(cell) as unknown));
  return rows.map((cells) => {
    const settings: Record<string, unknown> = {};
    const given = {
      ordersIndexes: value(cells[2]!),
      listVersionItems: value(cells[3]!),
      ordersAwaitReindex: value(cells[4]!),
    };
    for (const [key, v] of Object.entries(given)) {
      if (v !== undefined) settings[`production:${key}`] = v;
    }
    return { step: Number(cells[1]), settings };
  });
}

/**
 * The shell blocks of a document under a heading (up to the next heading of any level), a list
 * item's (indented three spaces) as well as the section's own.
 */
export function shellBlocks(file: string, heading: string): string {
  const section = docSection(file, heading);
  return [...section.matchAll(/^ *```sh\n([\s\S]*?)^ *```$/gm)]
    .map((m) => m[1]!.replace(/^ {3}/gm, ''))
    .join('\n');
}

/** The shell lines of a section but the operator CLI's (`npm …`, which its own tests run). */
export function awsSteps(file: string, heading: string): string {
  return shellBlocks(file, heading)
    .split('\n')
    .filter((line) => !line.startsWith('npm '))
    .join('\n');
}

/**
 * What every stand-in script starts with: the fixture (`fixture`), the call's arguments (`args`),
 * logged as one JSON line; `option(name)`, the value after a flag; `fail(why)`, the CLI's exit.
 */
const STAND_IN_PRELUDE = `
const fs = require('node:fs');
const fixture = JSON.parse(fs.readFileSync(process.env.AWS_STAND_IN_FIXTURE, 'utf8'));
const args = process.argv.slice(2);
fs.appendFileSync(process.env.AWS_STAND_IN_LOG, JSON.stringify(args) + '\\n');
const option = (name) => { const i = args.indexOf(name); return i < 0 ? undefined : args[i + 1]; };
const fail = (why) => { process.stderr.write(why + '\\n'); process.exit(254); };
`;

export interface RunbookRun {
  readonly stdout: string;
  /** The AWS CLI calls, in order, each its arguments. */
  readonly calls: string[][];
  /** Every line of the log: each call's JSON, and `sleep <seconds>` for each sleep. */
  readonly lines: string[];
}

export interface StandInAws {
  /** Runs a script with bash (-e -u -o pipefail), the stand-ins first on PATH. */
  run(script: string): Promise<RunbookRun>;
  /** Deletes the stand-ins' directory. */
  remove(): void;
}

/** The real `date`, which the stand-in wraps. */
const DATE = ['/bin/date', '/usr/bin/date'].find((path) => existsSync(path)) ?? 'date';

/**
 * A directory with a stand-in `aws` (the prelude, then `body`, which answers from `fixture`), a
 * `sleep` that logs its argument and returns at once, and what keeps the runbooks to tools every
 * operator has (bash, the AWS CLI, POSIX utilities): a `jq` that is not there, and a `date` that
 * refuses GNU's `-d`/`--date` and BSD's `-v` (a runbook computes times with shell arithmetic).
 */
export function standInAws(body: string, fixture: unknown): StandInAws {
  const dir = mkdtempSync(join(tmpdir(), 'runbook-aws-'));
  writeFileSync(join(dir, 'fixture.json'), JSON.stringify(fixture));
  writeFileSync(join(dir, 'aws'), `#!${process.execPath}\n${STAND_IN_PRELUDE}${body}`);
  writeFileSync(join(dir, 'sleep'), '#!/bin/sh\necho "sleep $1" >> "$AWS_STAND_IN_LOG"\n');
  writeFileSync(
    join(dir, 'jq'),
    '#!/bin/sh\necho "jq: not a tool the runbooks may assume" >&2\nexit 127\n',
  );
  writeFileSync(
    join(dir, 'date'),
    [
      '#!/bin/sh',
      'for a in "$@"; do case "$a" in -d|-d*|--date*|-v*) echo "date: $a is not portable" >&2; exit 1;; esac; done',
      `exec ${DATE} "$@"`,
      '',
    ].join('\n'),
  );
  for (const tool of ['aws', 'sleep', 'jq', 'date']) chmodSync(join(dir, tool), 0o755);
  let runs = 0;
  return {
    async run(script) {
      const log = join(dir, `calls-${++runs}.log`);
      writeFileSync(log, '');
      const { stdout } = await promisify(execFile)(
        'bash',
        ['-e', '-u', '-o', 'pipefail', '-c', script],
        {
          env: {
            ...process.env,
            PATH: `${dir}${delimiter}${process.env.PATH ?? ''}`,
            AWS_STAND_IN_FIXTURE: join(dir, 'fixture.json'),
            AWS_STAND_IN_LOG: log,
          },
        },
      );
      const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      const calls = lines
        .filter((line) => line.startsWith('['))
        .map((line) => JSON.parse(line) as string[]);
      return { stdout, calls, lines };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

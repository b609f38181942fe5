/**
 * Command-line flags, each defined once: `node:util` parseArgs reads them, and the help text
 * shows them, from the same definition (name, value placeholder, description).
 */
import { parseArgs } from 'node:util';
import { quotableInput } from '../keys/api-key.ts';
import { UsageError } from './usage-error.ts';

/** A flag: what parseArgs needs (`type`, `short`) and what the help shows. */
export interface Flag {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** The placeholder of a string flag's value in the help: `N`, `FILE`, `free|pro`. */
  readonly value?: string;
  readonly description: string;
  /** The command needs it: shown without brackets in a usage line. */
  readonly required?: boolean;
}

export type Flags = Readonly<Record<string, Flag>>;

/** A flag that takes a value: `--port N`. */
export function valueFlag(
  value: string,
  description: string,
  options: { readonly required?: boolean } = {},
): Flag & { readonly type: 'string' } {
  return { type: 'string', value, description, ...options };
}

/** A flag that is on or off: `--json`, `--yes, -y`. */
export function switchFlag(
  description: string,
  short?: string,
): Flag & { readonly type: 'boolean' } {
  return { type: 'boolean', description, ...(short === undefined ? {} : { short }) };
}

/** A flag as a usage line shows it: `--plan PLAN`, or `[--label TEXT]` when optional. */
function synopsis(name: string, flag: Flag): string {
  const text = `--${name}${flag.value === undefined ? '' : ` ${flag.value}`}`;
  return flag.required ? text : `[${text}]`;
}

/** The flags of a usage line: `--plan PLAN [--label TEXT] [--json]`. */
export function flagsSynopsis(flags: Flags): string {
  return Object.entries(flags)
    .map(([name, flag]) => synopsis(name, flag))
    .join(' ');
}

/** Words of a text, as lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return line === '' ? lines : [...lines, line];
}

/** Help lines are wrapped to this width. */
const HELP_WIDTH = 100;
/** Where descriptions start: a longer term (with its indent) puts its own on the next line. */
const COLUMN = 30;

/**
 * Two columns, as help text: each term, then its description, wrapped and aligned; a term too
 * wide for its column has its description start on the next line.
 */
export function helpColumns(
  rows: readonly (readonly [term: string, description: string])[],
): string {
  const pad = ' '.repeat(COLUMN);
  return rows
    .flatMap(([term, description]) => {
      const [first = '', ...rest] = wrap(description, HELP_WIDTH - COLUMN);
      const head =
        2 + term.length + 2 <= COLUMN
          ? [`  ${term.padEnd(COLUMN - 2)}${first}`]
          : [`  ${term}`, `${pad}${first}`];
      return [...head, ...rest.map((line) => `${pad}${line}`)].map((line) => line.trimEnd());
    })
    .join('\n');
}

/** The help lines of flags: `--plan PLAN`, `--yes, -y`, each with its description. */
export function describeFlags(flags: Flags): string {
  return helpColumns(
    Object.entries(flags).map(([name, flag]) => [
      `--${name}${flag.value === undefined ? '' : ` ${flag.value}`}${flag.short === undefined ? '' : `, -${flag.short}`}`,
      flag.description,
    ]),
  );
}

/** What parseFlags gives: the flags' values and the positional arguments. */
export type ParsedFlags<T extends Flags> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: true }>
>;

/**
 * A command line read against `flags` (strict: an unknown flag or a missing value is refused).
 * Whatever parseArgs refuses becomes a one-line UsageError: its first sentence, without the hint
 * about values that start with '-', the input quoted safely.
 */
export function parseFlags<T extends Flags>(
  args: readonly string[],
  flags: T,
  options: { readonly allowPositionals?: boolean } = {},
): ParsedFlags<T> {
  try {
    // Typed as allowing positionals either way: when they are refused, parseArgs throws.
    return parseArgs({
      args: [...args],
      options: flags,
      strict: true,
      allowPositionals: (options.allowPositionals ?? false) as true,
    });
  } catch (error) {
    const line = (error as Error).message.split('\n')[0] ?? '';
    throw new UsageError(quotableInput(line.replace(/\. To specify .*$/, ''), 200));
  }
}

/**
 * A command of the CLI from one definition: its flags and arguments, parsed with `node:util`
 * parseArgs, and its help, generated from the same flags (name, value, description).
 */
import {
  describeFlags,
  flagsSynopsis,
  helpColumns,
  parseFlags,
  type Flags,
  type ParsedFlags,
} from '../lib/config/flags.ts';
import { quotableInput } from '../lib/keys/api-key.ts';
import { print, UsageError, type Io } from './common.ts';
import { TARGET_FLAGS, TARGET_USAGE } from './target.ts';

export const PROGRAM = 'store-orders-admin';

export interface CommandSpec<T extends Flags = Flags> {
  /** The group and the command: `keys create`. */
  readonly name: string;
  /** One line for the group's help. */
  readonly summary: string;
  /** The help's text after the usage line. */
  readonly description: string;
  /** The command's own flags; every command also takes TARGET_FLAGS. */
  readonly flags: T;
  /** Names of the positional arguments; a trailing `?` marks an optional one. */
  readonly positionals?: readonly string[];
}

export interface Command {
  readonly spec: CommandSpec;
  run(argv: readonly string[], io: Io): Promise<void>;
}

type Parsed<T extends Flags> = ParsedFlags<T & typeof TARGET_FLAGS>;

/** `keys rotate <key-id> [--grace DURATION] [--json]`: a command as a usage line shows it. */
export function commandSynopsis(spec: CommandSpec): string {
  const positionals = (spec.positionals ?? []).map((name) =>
    name.endsWith('?') ? `[${name.slice(0, -1)}]` : `<${name}>`,
  );
  return [spec.name, ...positionals, flagsSynopsis(spec.flags)].filter(Boolean).join(' ');
}

/** What `<group> <command> --help` prints. */
function commandHelp(spec: CommandSpec): string {
  const options =
    Object.keys(spec.flags).length > 0 ? `Options:\n${describeFlags(spec.flags)}\n\n` : '';
  return `Usage: ${PROGRAM} ${commandSynopsis(spec)} <target>\n\n${spec.description}\n\n${options}${TARGET_USAGE}`;
}

/** What `<group> --help` prints: its commands, each with its summary. */
export function groupHelp(group: string, commands: readonly Command[]): string {
  const rows = commands.map(({ spec }) => {
    const synopsis = commandSynopsis(spec).slice(group.length + 1);
    return [synopsis, spec.summary] as const;
  });
  return `Usage: ${PROGRAM} ${group} <command> [options] <target>

Commands:
${helpColumns(rows)}

"${PROGRAM} ${group} <command> --help" explains each one.

${TARGET_USAGE}`;
}

/**
 * Parses a command's arguments; `undefined` when `--help` was asked (the help is printed).
 * Throws UsageError for anything the command does not take.
 */
function parseCommand<T extends Flags>(
  argv: readonly string[],
  spec: CommandSpec<T>,
  io: Io,
): Parsed<T> | undefined {
  const parsed: Parsed<T> = parseFlags(
    argv,
    { ...spec.flags, ...TARGET_FLAGS },
    {
      allowPositionals: true,
    },
  );
  if ((parsed.values as { help?: boolean }).help) {
    print(io.stdout, commandHelp(spec));
    return undefined;
  }
  const names = spec.positionals ?? [];
  const required = names.filter((name) => !name.endsWith('?'));
  if (parsed.positionals.length < required.length) {
    throw new UsageError(`missing <${required[parsed.positionals.length]}> (see --help)`);
  }
  if (parsed.positionals.length > names.length) {
    throw new UsageError(
      `unexpected argument "${quotableInput(parsed.positionals[names.length] ?? '')}" (see --help)`,
    );
  }
  return parsed;
}

/** A command: `run` gets its parsed command line, unless --help printed the help instead. */
export function defineCommand<const T extends Flags>(
  spec: CommandSpec<T>,
  run: (parsed: Parsed<T>, io: Io) => Promise<void>,
): Command {
  return {
    spec,
    run: async (argv, io) => {
      const parsed = parseCommand(argv, spec, io);
      if (parsed) await run(parsed, io);
    },
  };
}

/**
 * The operator CLI's program, apart from the process it runs in: the command groups, the usage,
 * and `runAdmin`, which runs one command line against an Io and gives its exit code. admin/cli.ts
 * runs it as a process; the tests run it in theirs.
 */
import { quotableInput } from '../lib/keys/api-key.ts';
import { commandSynopsis, groupHelp, PROGRAM, type Command } from './command.ts';
import { errorOutcome, EXIT, print, UsageError, type Io } from './common.ts';
import { KEY_COMMANDS } from './keys.ts';
import { ORDER_COMMANDS } from './orders.ts';
import { TARGET_USAGE } from './target.ts';

const GROUPS: Readonly<Record<string, { title: string; commands: readonly Command[] }>> = {
  keys: { title: 'API keys', commands: KEY_COMMANDS },
  orders: { title: 'Orders', commands: ORDER_COMMANDS },
};

const USAGE = `Usage: ${PROGRAM} <keys|orders> <command> [options] <target>
       npm run admin -- <keys|orders> <command> [options] <target>

${Object.values(GROUPS)
  .map(({ title, commands }) =>
    [`${title}:`, ...commands.map(({ spec }) => `  ${commandSynopsis(spec)}`)].join('\n'),
  )
  .join('\n\n')}

Every command takes --help. Production changes ask for confirmation (or --yes).
Exit codes: 0 done, 1 refused or failed (a refusal changes nothing; an import cut short
by a storage failure says how many orders it wrote: run it again to finish), 2 wrong
command line.

${TARGET_USAGE}`;

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h';

async function main(argv: readonly string[], io: Io): Promise<void> {
  const [groupName, commandName, ...rest] = argv;
  if (isHelp(groupName)) {
    print(io.stdout, USAGE);
    return;
  }
  if (groupName === undefined) throw new UsageError('missing command (see --help)');
  const group = GROUPS[groupName];
  if (!group)
    throw new UsageError(
      `unknown command "${quotableInput(groupName)}": keys or orders (see --help)`,
    );
  if (isHelp(commandName)) {
    print(io.stdout, groupHelp(groupName, group.commands));
    return;
  }
  if (commandName === undefined) {
    throw new UsageError(`missing ${groupName} command (see ${groupName} --help)`);
  }
  const names = group.commands.map(({ spec }) => spec.name.slice(groupName.length + 1));
  const command = group.commands[names.indexOf(commandName)];
  if (!command) {
    throw new UsageError(
      `unknown ${groupName} command "${quotableInput(commandName)}": ${names.join(', ')}`,
    );
  }
  await command.run(rest, io);
}

/**
 * Runs one command line: its exit code (0 done, 1 refused or failed, 2 a wrong command line),
 * with a failure written as one line on stderr, `error: …`, never a stack trace.
 */
export async function runAdmin(argv: readonly string[], io: Io): Promise<number> {
  try {
    await main(argv, io);
    return EXIT.ok;
  } catch (error) {
    const { code, line } = errorOutcome(error);
    io.stderr.write(`error: ${line}\n`);
    return code;
  }
}

#!/usr/bin/env node
/**
 * `npm run admin -- <group> <command>` (bin: store-orders-admin): the operator's tool for what
 * the API has no endpoint for — issuing, rotating and revoking API keys, loading and shipping
 * orders — against a deployed stage, the local API, or tables named on the command line.
 *
 * Exit codes: 0 done; 1 refused or failed (a refusal changes nothing; an import cut short by a
 * storage failure says how many orders it wrote, and running it again finishes it); 2 a wrong
 * command line.
 * Errors are one line on stderr, `error: …`, never a stack trace.
 */
import { quotableInput } from '../lib/keys/api-key.ts';
import { commandSynopsis, groupHelp, PROGRAM, type Command } from './command.ts';
import { EXIT, errorOutcome, print, processIo, UsageError, type Io } from './common.ts';
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

export async function main(argv: readonly string[], io: Io): Promise<void> {
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

function fail(error: unknown): void {
  const { code, line } = errorOutcome(error);
  process.stderr.write(`error: ${line}\n`);
  process.exitCode = code;
}

// Whatever escapes still ends as one line, never a stack trace.
process.on('uncaughtException', (error) => {
  fail(error);
  process.exit();
});
process.on('unhandledRejection', (error) => {
  fail(error);
  process.exit();
});
// A reader that goes away (`… export | head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(EXIT.ok);
  fail(error);
});

main(process.argv.slice(2), processIo).catch(fail);

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
import { EXIT, errorOutcome, print, processIo, UsageError, type Io } from './common.ts';
import { KEY_COMMANDS, KEYS_USAGE } from './keys.ts';
import { ORDER_COMMANDS, ORDERS_USAGE } from './orders.ts';
import { TARGET_USAGE } from './target.ts';

const USAGE = `Usage: store-orders-admin <keys|orders> <command> [options] <target>
       npm run admin -- <keys|orders> <command> [options] <target>

API keys:
  keys create --plan free|pro|business|enterprise [--per-minute N --per-day N] [--label TEXT]
  keys list
  keys revoke <key-id>
  keys rotate <key-id> [--grace 24h]
  keys set-plan <key-id> --plan PLAN [--per-minute N --per-day N]

Orders:
  orders import <file.json> [--replace]
  orders ship <order-id>
  orders export [file.json]

Every command takes --help. Production changes ask for confirmation (or --yes).
Exit codes: 0 done, 1 refused or failed (a refusal changes nothing; an import cut short
by a storage failure says how many orders it wrote: run it again to finish), 2 wrong
command line.

${TARGET_USAGE}`;

const GROUPS: Record<
  string,
  { usage: string; commands: Record<string, (argv: readonly string[], io: Io) => Promise<void>> }
> = {
  keys: { usage: KEYS_USAGE, commands: KEY_COMMANDS },
  orders: { usage: ORDERS_USAGE, commands: ORDER_COMMANDS },
};

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
    print(io.stdout, group.usage);
    return;
  }
  if (commandName === undefined) {
    throw new UsageError(`missing ${groupName} command (see ${groupName} --help)`);
  }
  const command = group.commands[commandName];
  if (!command) {
    throw new UsageError(
      `unknown ${groupName} command "${quotableInput(commandName)}": ${Object.keys(group.commands).join(', ')}`,
    );
  }
  await command(rest, io);
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

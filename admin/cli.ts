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
import { EXIT, errorOutcome, processIo } from './common.ts';
import { runAdmin } from './program.ts';

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

const code = await runAdmin(process.argv.slice(2), processIo);
// A failure reported while the command ran (a broken stdout) keeps its code.
process.exitCode = process.exitCode || code;

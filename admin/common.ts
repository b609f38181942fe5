/**
 * What every command of the operator CLI shares: its errors and exit codes, and the one-line
 * summary of a failure (never a stack trace).
 */
import { TIME_BUDGETS } from '../lib/config/budgets.ts';
import { OPERATOR_ATTEMPTS } from '../lib/dynamodb/client.ts';
import { parseWholeNumber, wholeNumberSetting } from '../lib/config/integers.ts';
import { UsageError } from '../lib/config/usage-error.ts';
import { describeCredentialsError, isCredentialsError } from '../lib/aws-credentials.ts';
import { DependencyFailure } from '../lib/failures.ts';
import { quotableInput, redactApiKeys } from '../lib/keys/api-key.ts';
import { InvalidKeyInput, KeyRefused } from '../lib/keys/lifecycle.ts';
import { OrderRefused } from '../lib/orders/operations.ts';

/**
 * Exit codes: 0 done, 1 refused (nothing changed) or failed (only an import cut short by a
 * storage failure leaves part of its change, and says so), 2 the command line is wrong.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The command line is wrong (unknown flag, missing argument, malformed value): exit 2. */
export { UsageError };

/** The command cannot be carried out as asked (unreadable file, no confirmation…): exit 1. */
export class Failure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Failure';
  }
}

export interface Io {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream;
  readonly stdin: NodeJS.ReadStream;
  now(): Date;
}

export const processIo: Io = {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  now: () => new Date(),
};

export function print(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`);
}

/** Attempts of each DynamoDB call the CLI makes (each ends at adminAttemptMs()). */
export const ADMIN_ATTEMPTS = OPERATOR_ATTEMPTS;

/**
 * How long the CLI waits for one attempt of a DynamoDB call: TIME_BUDGETS.adminAttemptMs, or
 * STORE_ORDERS_ADMIN_TIMEOUT_SECONDS (1 to 600) for slow links.
 */
export function adminAttemptMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.STORE_ORDERS_ADMIN_TIMEOUT_SECONDS;
  const seconds = wholeNumberSetting(
    raw || undefined,
    { min: 1, max: 600 },
    TIME_BUDGETS.adminAttemptMs / 1000,
    (expected) =>
      new UsageError(
        `STORE_ORDERS_ADMIN_TIMEOUT_SECONDS must be ${expected}, got "${quotableInput(raw ?? '')}"`,
      ),
  );
  return seconds * 1000;
}

/** A whole-number flag value, or undefined when the flag was not given. */
export function integerFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = parseWholeNumber(value, { min: 0 });
  if (n === undefined) {
    throw new UsageError(`--${flag} must be a whole number, got "${quotableInput(value)}"`);
  }
  return n;
}

export function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? '';
}

/**
 * One line for an unexpected failure: the AWS or network error behind it (name and message),
 * never a stack trace.
 */
export function describeFailure(error: unknown): string {
  let cause: unknown = error;
  if (isCredentialsError(error)) {
    // The SDK's own words, then what to do: the same line as for the stack outputs.
    const inner =
      error instanceof DependencyFailure && error.cause instanceof Error ? error.cause : error;
    const first = firstLine((inner as Partial<Error>).message ?? '') || String(inner);
    return describeCredentialsError(first, 'to reach DynamoDB');
  }
  if (cause instanceof DependencyFailure) {
    if (cause.reason === 'timeout') {
      return `DynamoDB did not answer within ${adminAttemptMs() / 1000} s, ${ADMIN_ATTEMPTS} times (is it running and reachable? STORE_ORDERS_ADMIN_TIMEOUT_SECONDS waits longer)`;
    }
    // The stores wrap the DynamoDB error that caused the failure.
    if (cause.cause !== undefined) cause = cause.cause;
  }
  if (!(cause instanceof Error)) return String(cause);
  const { code } = cause as { code?: string };
  const message =
    firstLine(cause.message) ||
    firstLine((cause as { errors?: Error[] }).errors?.[0]?.message ?? '') ||
    code ||
    cause.name;
  const name = code ?? cause.name;
  return name === 'Error' || message.includes(name) ? message : `${name}: ${message}`;
}

/** Errors that already say what went wrong in the operator's terms. */
function isExplained(error: unknown): error is Error {
  return (
    error instanceof UsageError ||
    error instanceof InvalidKeyInput ||
    error instanceof Failure ||
    error instanceof KeyRefused ||
    error instanceof OrderRefused
  );
}

/** An unexpected failure, as a Failure that says where it happened (e.g. which table). */
export function inContext(error: unknown, where: string): unknown {
  return isExplained(error) ? error : new Failure(`${where}: ${describeFailure(error)}`);
}

/**
 * The exit code and line for an error that ended a command. Whatever the line quotes (an
 * argument, a file name, an AWS message), a pasted API key in it is cut to its hint.
 */
export function errorOutcome(error: unknown): { code: number; line: string } {
  if (!isExplained(error))
    return { code: EXIT.failed, line: redactApiKeys(describeFailure(error)) };
  const usage = error instanceof UsageError || error instanceof InvalidKeyInput;
  return { code: usage ? EXIT.usage : EXIT.failed, line: redactApiKeys(error.message) };
}

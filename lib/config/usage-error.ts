/**
 * What a person gave a command is wrong: a flag, an argument, a setting, a file it names. The
 * command reports it in one line, never with a stack trace.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

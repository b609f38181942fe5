/**
 * A benchmark's command line: its flags read strictly (`--help` shows them), a wrong one refused
 * in one line with exit code 2, as every other command of the project does.
 */
import {
  describeFlags,
  parseFlags,
  switchFlag,
  valueFlag,
  type Flags,
} from '../lib/config/flags.ts';
import { wholeNumberSetting } from '../lib/config/integers.ts';
import { UsageError } from '../lib/config/usage-error.ts';

/** Says what was wrong in one line, with where to read more, and exits 2. */
function refuse(script: string, message: string): never {
  console.error(`error: ${message} (npm run ${script} -- --help)`);
  process.exit(2);
}

export function benchFlags<T extends Flags>(script: string, summary: string, flags: T) {
  const all = { ...flags, help: switchFlag('show this help') };
  try {
    const { values } = parseFlags(process.argv.slice(2), all);
    if ((values as { help?: boolean }).help) {
      console.log(`Usage: npm run ${script} -- [options]\n\n${summary}\n\n${describeFlags(all)}`);
      process.exit(0);
    }
    return values as { [K in keyof T]?: T[K]['type'] extends 'boolean' ? boolean : string };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return refuse(script, error.message);
  }
}

/** A flag that counts something: `--orders N`, its default in the help. */
export function countFlag(what: string, fallback: number) {
  return valueFlag('N', `${what} (default ${fallback})`);
}

/** A count flag's value: its default when not given, a whole number from 1, or refused. */
export function countOf(script: string, name: string, value: string | undefined, fallback: number) {
  return wholeNumberSetting(value, { min: 1 }, fallback, (expected) =>
    refuse(script, `--${name} must be ${expected}`),
  );
}

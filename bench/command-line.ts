/**
 * A benchmark's command line: its flags read strictly (`--help` shows them), a wrong one refused
 * in one line with exit code 2, as every other command of the project does.
 */
import { describeFlags, parseFlags, switchFlag, type Flags } from '../lib/config/flags.ts';
import { UsageError } from '../lib/config/usage-error.ts';

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
    console.error(`error: ${error.message} (npm run ${script} -- --help)`);
    process.exit(2);
  }
}

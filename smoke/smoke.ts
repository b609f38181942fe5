/**
 * `npm run smoke -- --base-url URL --api-key KEY [--pending-order ID] [--timeout SECONDS]`:
 * the smoke suite (smoke/checks.ts) against any base address: a deployed stage
 * (`https://…/v1`, the ApiUrl output) or the local API (`http://127.0.0.1:3000/v1`).
 * One line per check; exit 0 when all pass, 1 on a failure, 2 on a bad command line.
 * The key is sent only in the Authorization header and never printed.
 */
import { parseArgs } from 'node:util';
import { runSmoke, type CheckResult } from './checks.ts';

export const USAGE = `usage: npm run smoke -- --base-url URL --api-key KEY [--pending-order ID] [--timeout SECONDS]

  --base-url URL       the API's base address, ending in /v1 (a deployed stage's ApiUrl output,
                       or http://127.0.0.1:3000/v1 for npm start)
  --api-key KEY        an API key of that stage (sent as Authorization: Bearer KEY, never printed)
  --pending-order ID   also cancel this pending order, twice (204 both times); without it the
                       suite changes nothing
  --timeout SECONDS    time allowed per request (default 60)`;

const INT64 = /^-?(0|[1-9]\d*)$/;

interface Command {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly pendingOrder?: bigint;
  readonly timeoutMs: number;
}

/** The command line, or the reason it is wrong. */
export function parseCommandLine(args: readonly string[]): Command | 'help' | { error: string } {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        'base-url': { type: 'string' },
        'api-key': { type: 'string' },
        'pending-order': { type: 'string' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { error: (error as Error).message };
  }
  if (values.help) return 'help';
  const baseUrl = values['base-url'];
  if (!baseUrl) return { error: '--base-url is required' };
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return { error: `--base-url must be an http(s) URL, got ${JSON.stringify(baseUrl)}` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { error: `--base-url must be an http(s) URL, got ${JSON.stringify(baseUrl)}` };
  }
  if (url.search || url.hash) return { error: '--base-url must not carry a query or fragment' };
  const apiKey = values['api-key'];
  if (!apiKey) return { error: '--api-key is required' };
  const pending = values['pending-order'];
  if (pending !== undefined && (!INT64.test(pending) || BigInt(pending) >= 2n ** 63n)) {
    return {
      error: `--pending-order must be an order id (an int64), got ${JSON.stringify(pending)}`,
    };
  }
  const timeout = values.timeout ?? '60';
  if (!/^\d+$/.test(timeout) || Number(timeout) < 1 || Number(timeout) > 900) {
    return {
      error: `--timeout must be whole seconds from 1 to 900, got ${JSON.stringify(timeout)}`,
    };
  }
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey,
    ...(pending === undefined ? {} : { pendingOrder: BigInt(pending) }),
    timeoutMs: Number(timeout) * 1000,
  };
}

/** `ok   name`, `FAIL name: reason`, `skip name: reason`. */
export function formatResult(result: CheckResult): string {
  if (result.outcome === 'ok') return `ok   ${result.name}`;
  return `${result.outcome === 'fail' ? 'FAIL' : 'skip'} ${result.name}: ${result.reason ?? ''}`;
}

async function main(): Promise<number> {
  const command = parseCommandLine(process.argv.slice(2));
  if (command === 'help') {
    console.log(USAGE);
    return 0;
  }
  if ('error' in command) {
    console.error(`error: ${command.error}\n${USAGE}`);
    return 2;
  }
  console.log(
    `smoke: ${command.baseUrl}${command.pendingOrder === undefined ? ' (read-only)' : ` (cancels order ${command.pendingOrder})`}`,
  );
  const results = await runSmoke(command, (result) => console.log(formatResult(result)));
  const count = (outcome: CheckResult['outcome']) =>
    results.filter((r) => r.outcome === outcome).length;
  console.log(`smoke: ${count('ok')} passed, ${count('fail')} failed, ${count('skip')} skipped`);
  return count('fail') + count('skip') > 0 ? 1 : 0;
}

if (import.meta.main) {
  main().then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      console.error(`error: ${(error as Error).message}`);
      process.exitCode = 1;
    },
  );
}

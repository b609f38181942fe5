/**
 * `npm run smoke -- (--base-url URL | --stage STAGE) --api-key KEY [--read-only-key KEY]
 * [--pending-order ID] [--timeout SECONDS]`: the smoke suite (smoke/checks.ts) against any base address: a deployed
 * stage (`https://…/v1`, the ApiUrl output, given or read from the stage's stack outputs) or the
 * local API (`http://127.0.0.1:3000/v1`); v2's checks against v2's address (the ApiUrlV2 output,
 * or the base address with its `/v1` as `/v2`).
 * One line per check; exit 0 when all pass (a check a new stage's few orders give nothing to
 * check says so, and passes), 1 on a failure or a check skipped for one that failed, 2 on a bad
 * command line.
 * The key is sent only in the Authorization header and never printed.
 */
import { parseArgs } from 'node:util';
import {
  API_URL_OUTPUTS,
  isStageName,
  stackNames,
  STAGES,
  type StageName,
} from '../lib/deployment.ts';
import { OutputsUnavailable, stageOutputs } from '../lib/stack-outputs.ts';
import { runSmoke, type CheckResult } from './checks.ts';

export const USAGE = `usage: npm run smoke -- (--base-url URL | --stage STAGE) --api-key KEY [--read-only-key KEY] [--pending-order ID] [--timeout SECONDS]

  --base-url URL       the API's base address, ending in /v1 (a deployed stage's ApiUrl output,
                       or http://127.0.0.1:3000/v1 for npm start); v2's is the same with /v2
  --stage STAGE        ${STAGES.join('|')}: the ApiUrl and ApiUrlV2 outputs of its API stack, from
                       cdk-outputs.<stage>.json (or --outputs FILE) if present, else from
                       CloudFormation (your AWS credentials; --region REGION or AWS_REGION)
  --region REGION      with --stage: the region CloudFormation is asked in
  --outputs FILE       with --stage: the outputs file cdk deploy --outputs-file wrote
  --api-key KEY        an API key of that stage (sent as Authorization: Bearer KEY, never printed)
  --read-only-key KEY  also a key of that stage that may only read (keys create --read-only):
                       it must list and page, and be refused a cancel with 403
  --pending-order ID   also cancel this pending order, twice (204 both times); without it the
                       suite changes nothing
  --timeout SECONDS    time allowed per request (default 60)`;

const INT64 = /^-?(0|[1-9]\d*)$/;

interface Command {
  readonly baseUrl: string;
  /** v2's base address, once resolved. */
  readonly v2BaseUrl?: string;
  /** Set when the base URL is to be read from this stage's outputs (baseUrl is then ''). */
  readonly stage?: {
    readonly name: StageName;
    readonly region?: string;
    readonly outputs?: string;
  };
  readonly apiKey: string;
  readonly readOnlyKey?: string;
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
        stage: { type: 'string' },
        region: { type: 'string' },
        outputs: { type: 'string' },
        'api-key': { type: 'string' },
        'read-only-key': { type: 'string' },
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
  const stage = values.stage;
  if (stage !== undefined && !isStageName(stage)) {
    return { error: `--stage must be one of ${STAGES.join(', ')}, got ${JSON.stringify(stage)}` };
  }
  if (stage === undefined && (values.region !== undefined || values.outputs !== undefined)) {
    return { error: '--region and --outputs go with --stage' };
  }
  if (stage !== undefined && baseUrl !== undefined) {
    return { error: '--base-url and --stage exclude each other' };
  }
  if (!baseUrl && stage === undefined) return { error: '--base-url or --stage is required' };
  const common = checkKeyAndOptions(values);
  if ('error' in common) return common;
  if (stage !== undefined) {
    return {
      ...common,
      baseUrl: '',
      stage: {
        name: stage,
        ...(values.region !== undefined ? { region: values.region } : {}),
        ...(values.outputs !== undefined ? { outputs: values.outputs } : {}),
      },
    };
  }
  return checkBaseUrl(baseUrl as string, common);
}

type Options = Omit<Command, 'baseUrl' | 'stage'>;

function checkBaseUrl(baseUrl: string, options: Options): Command | { error: string } {
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
  return { ...options, baseUrl: baseUrl.replace(/\/+$/, '') };
}

function checkKeyAndOptions(values: {
  'api-key'?: string;
  'read-only-key'?: string;
  'pending-order'?: string;
  timeout?: string;
}): Options | { error: string } {
  const apiKey = values['api-key'];
  if (!apiKey) return { error: '--api-key is required' };
  const readOnlyKey = values['read-only-key'];
  if (readOnlyKey === '') return { error: '--read-only-key must be an API key' };
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
    apiKey,
    ...(readOnlyKey === undefined ? {} : { readOnlyKey }),
    ...(pending === undefined ? {} : { pendingOrder: BigInt(pending) }),
    timeoutMs: Number(timeout) * 1000,
  };
}

/** `ok   name`, `FAIL name: reason`, `skip name: reason`, `n/a  name: reason`. */
export function formatResult(result: CheckResult): string {
  if (result.outcome === 'ok') return `ok   ${result.name}`;
  const label = { fail: 'FAIL', skip: 'skip', unchecked: 'n/a ' }[result.outcome];
  return `${label} ${result.name}: ${result.reason ?? ''}`;
}

/**
 * The base URLs of a command, v1's and v2's: given (v2's is v1's with its `/v1` as `/v2`), or the
 * ApiUrl and ApiUrlV2 outputs of its stage's API stack. Throws OutputsUnavailable (one line) when
 * the outputs cannot be read or lack one.
 */
export async function resolveBaseUrls(
  command: Command,
): Promise<{ baseUrl: string; v2BaseUrl?: string }> {
  if (!command.stage) {
    const v2 = command.baseUrl.replace(/\/v1$/, '/v2');
    return { baseUrl: command.baseUrl, ...(v2 !== command.baseUrl ? { v2BaseUrl: v2 } : {}) };
  }
  const stack = stackNames(command.stage.name).api;
  const found = await stageOutputs(command.stage.name, stack, command.stage);
  const outputs = await found.read(stack);
  const [url, v2] = [API_URL_OUTPUTS.v1, API_URL_OUTPUTS.v2].map((name) => {
    const value = outputs[name];
    if (!value) {
      throw new OutputsUnavailable(`the outputs of ${stack} (${found.source}) have no ${name}`);
    }
    return value.replace(/\/+$/, '');
  }) as [string, string];
  return { baseUrl: url, v2BaseUrl: v2 };
}

async function main(): Promise<number> {
  const parsed = parseCommandLine(process.argv.slice(2));
  if (parsed === 'help') {
    console.log(USAGE);
    return 0;
  }
  if ('error' in parsed) {
    console.error(`error: ${parsed.error}\n${USAGE}`);
    return 2;
  }
  let command: Command;
  try {
    command = { ...parsed, ...(await resolveBaseUrls(parsed)) };
  } catch (error) {
    if (!(error instanceof OutputsUnavailable)) throw error;
    console.error(`error: ${error.message}`);
    return 1;
  }
  console.log(
    `smoke: ${command.baseUrl}${command.pendingOrder === undefined ? ' (read-only)' : ` (cancels order ${command.pendingOrder})`}`,
  );
  const results = await runSmoke(command, (result) => console.log(formatResult(result)));
  const count = (outcome: CheckResult['outcome']) =>
    results.filter((r) => r.outcome === outcome).length;
  const unchecked = count('unchecked');
  console.log(
    `smoke: ${count('ok')} passed, ${count('fail')} failed, ${count('skip')} skipped` +
      (unchecked > 0 ? `, ${unchecked} not checkable on this stage's orders (n/a)` : ''),
  );
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

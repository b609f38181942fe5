/**
 * `npm start`: the whole API on this machine — the real authorizer and handlers, each function
 * in containers of its own (worker threads, as Lambda runs them), behind the API Gateway
 * emulation, on DynamoDB Local (in memory) or a given endpoint. With `--stage NAME`, the stage as
 * `cdk synth` makes it from the checked-in settings (./synthesized-stage.ts): its tables created
 * empty from the template, its functions' bundles with the template's settings, its routes,
 * throttles and authorizer.
 *
 * Lifecycle: SIGINT, SIGTERM and SIGHUP stop everything; so does the end of the process that
 * started it (npm or a shell killed without this process); if this process is killed outright,
 * DynamoDB Local's wrapper stops Java and removes the state file; if DynamoDB Local dies, this
 * says so in one line and exits 1.
 */
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { API_STAGE } from '../lib/api/routes.ts';
import { describeFlags, parseFlags, switchFlag, valueFlag } from '../lib/config/flags.ts';
import { wholeNumberSetting } from '../lib/config/integers.ts';
import { UsageError } from '../lib/config/usage-error.ts';
import { isStageName, STAGES, type StageName } from '../lib/deployment.ts';
import { LOCAL_REGION } from '../lib/dynamodb/client.ts';
import { keyHint, quotableInput } from '../lib/keys/api-key.ts';
import { parseKeyEntries, type KeyEntry } from '../lib/keys/key-input.ts';
import { resolveLimits } from '../lib/limits/plans.ts';
import {
  limiterSettingsFromEnv,
  MAX_BAN_SECONDS,
  type LimiterSettings,
} from '../lib/limits/limiter.ts';
import { formatProblem, parseOrders } from '../lib/orders/order-input.ts';
import { orderToJson, type Order } from '../lib/orders/order.ts';
import { ContainerPool, DEFAULT_MAX_CONTAINERS } from './container-pool.ts';
import { DEMO_KEYS, DEMO_ORDERS } from './demo-data.ts';
import { createGateway, createGatewayServer, type GatewayListener } from './gateway.ts';
import {
  DEFAULT_TABLE_PREFIX,
  functionEnvironment,
  localStateFile,
  removeLocalState,
  startLocalStack,
  writeLocalState,
  type LocalStack,
} from './local-stack.ts';
import {
  startSynthesizedStack,
  synthesizedTablePrefix,
  templateGatewayOptions,
  templateRuntimes,
  type SynthesizedStack,
} from './synthesized-stage.ts';

const FLAGS = {
  port: valueFlag('N', 'port to listen on (default 3000; 0 picks a free one)'),
  seed: valueFlag('FILE', 'JSON array of orders to load instead of the demo orders'),
  keys: valueFlag(
    'FILE',
    'JSON array of {"key", "plan", "limits"?} to register instead of the demo keys',
  ),
  'dynamodb-endpoint': valueFlag(
    'URL',
    'use a running DynamoDB instead of starting DynamoDB Local',
  ),
  'table-prefix': valueFlag('NAME', `prefix of the table names (default ${DEFAULT_TABLE_PREFIX})`),
  'authorizer-ttl': valueFlag(
    'SECONDS',
    'authorizer cache TTL, 0 to 3600 (default 60, as deployed)',
  ),
  'ban-after': valueFlag(
    'N',
    'ban a key at its N+1th early refusal in a minute window, 1 to 1000 (default 10, or RATE_LIMIT_BAN_AFTER_REFUSALS)',
  ),
  'ban-seconds': valueFlag(
    'SECONDS',
    `how long a ban lasts, 1 to ${MAX_BAN_SECONDS} (default 900, or RATE_LIMIT_BAN_SECONDS; deployed stages take 60 or more)`,
  ),
  containers: valueFlag(
    'N',
    `containers per function at most, 1 to 64 (default ${DEFAULT_MAX_CONTAINERS})`,
  ),
  stage: valueFlag(
    'NAME',
    `run the stage ${STAGES.join(' or ')} as cdk synth makes it from cdk.json: its tables empty (or --seed, --keys), its functions' bundles and settings`,
  ),
  assembly: valueFlag(
    'DIR',
    'with --stage: a cloud assembly already synthesized (cdk synth -o DIR) instead of synthesizing',
  ),
  help: switchFlag('show this help'),
};

const USAGE = `Usage: npm start -- [options]

Starts the Store Orders API locally: API Gateway emulation + the real functions + DynamoDB Local.

Options:
${describeFlags(FLAGS)}`;

interface StartOptions {
  port: number;
  seedOrders?: Order[];
  keys?: KeyEntry[];
  dynamodbEndpoint?: string;
  /** The stage to run as synthesized (--stage), from this cloud assembly if given (--assembly). */
  stage?: StageName;
  assembly?: string;
  tablePrefix: string;
  authorizerTtlSeconds: number;
  maxContainers: number;
  /** The functions' RATE_LIMIT_BAN_* variables the flags set (over this process's environment). */
  banEnv: Record<string, string>;
  ban: LimiterSettings;
}

function integerOption(
  value: string | undefined,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  return wholeNumberSetting(
    value,
    { min, max },
    fallback,
    (expected) =>
      new UsageError(`--${name} must be ${expected}, got "${quotableInput(value ?? '')}"`),
  );
}

async function readInputFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--${flag} ${quotableInput(path, 200)}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

function problemsLine(
  flag: string,
  path: string,
  problems: readonly { index: number; message: string }[],
): string {
  const shown = problems.slice(0, 3).map(formatProblem).join('; ');
  const more = problems.length > 3 ? `; and ${problems.length - 3} more` : '';
  return `--${flag} ${quotableInput(path, 200)}: ${shown}${more}`;
}

/**
 * The flags npm kept for itself: `npm start --port 3001` (no `--`) gives npm `--port` (it sets
 * npm_config_port) and this program only `3001`.
 */
function flagsNpmTook(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(FLAGS).filter(
    (name) => name !== 'help' && env[`npm_config_${name.replaceAll('-', '_')}`] !== undefined,
  );
}

function readFlags(argv: string[]) {
  try {
    return parseFlags(argv, FLAGS);
  } catch (error) {
    const taken = flagsNpmTook();
    if (!(error instanceof UsageError) || taken.length === 0) throw error;
    const example = `npm start -- --${taken[0]} ${argv[0] ?? '…'}`;
    throw new UsageError(
      `${error.message}: npm kept ${taken.map((name) => `--${name}`).join(', ')} for itself; put the options after --, e.g. ${example}`,
    );
  }
}

/** The ban the functions will apply: the flags', else the environment's, else the defaults. */
function banOptions(
  banAfter: string | undefined,
  banSeconds: string | undefined,
): Pick<StartOptions, 'banEnv' | 'ban'> {
  const banEnv: Record<string, string> = {};
  if (banAfter !== undefined) {
    banEnv.RATE_LIMIT_BAN_AFTER_REFUSALS = String(integerOption(banAfter, 'ban-after', 1, 1000, 0));
  }
  if (banSeconds !== undefined) {
    banEnv.RATE_LIMIT_BAN_SECONDS = String(
      integerOption(banSeconds, 'ban-seconds', 1, MAX_BAN_SECONDS, 0),
    );
  }
  let ban: LimiterSettings;
  try {
    ban = limiterSettingsFromEnv({ ...process.env, ...banEnv });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return { banEnv, ban };
}

async function parseOptions(argv: string[]): Promise<StartOptions | 'help'> {
  const { values } = readFlags(argv);
  if (values.help) return 'help';
  const stage = values.stage;
  if (stage !== undefined && !isStageName(stage)) {
    throw new UsageError(`--stage must be ${STAGES.join(' or ')}, got "${quotableInput(stage)}"`);
  }
  if (stage !== undefined) {
    // What the template sets is the template's: the stage runs as it is deployed.
    const set = ['authorizer-ttl', 'ban-after', 'ban-seconds'].filter(
      (f) => values[f as keyof typeof values] !== undefined,
    );
    if (set.length > 0) {
      throw new UsageError(
        `--stage ${stage} runs the stage's own settings: --${set[0]} is its template's (change it in cdk.json)`,
      );
    }
  }
  if (values.assembly !== undefined && stage === undefined) {
    throw new UsageError('--assembly goes with --stage: the stage to run from it');
  }
  const options: StartOptions = {
    port: integerOption(values.port, 'port', 0, 65535, 3000),
    ...(stage ? { stage } : {}),
    ...(values.assembly !== undefined ? { assembly: values.assembly } : {}),
    tablePrefix:
      values['table-prefix'] ?? (stage ? synthesizedTablePrefix(stage) : DEFAULT_TABLE_PREFIX),
    authorizerTtlSeconds: integerOption(values['authorizer-ttl'], 'authorizer-ttl', 0, 3600, 60),
    maxContainers: integerOption(values.containers, 'containers', 1, 64, DEFAULT_MAX_CONTAINERS),
    ...banOptions(values['ban-after'], values['ban-seconds']),
  };
  if (!/^[A-Za-z0-9_.-]{3,200}$/.test(options.tablePrefix)) {
    throw new UsageError('--table-prefix must be 3 to 200 letters, digits, "_", "-" or "."');
  }
  const endpoint = values['dynamodb-endpoint'];
  if (endpoint !== undefined) {
    if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
      throw new UsageError(
        `--dynamodb-endpoint must be an http(s) URL, got "${quotableInput(endpoint)}"`,
      );
    }
    options.dynamodbEndpoint = endpoint;
  }
  if (values.seed !== undefined) {
    const parsed = parseOrders(await readInputFile(values.seed, 'seed'), { lines: true });
    if (!parsed.ok) throw new UsageError(problemsLine('seed', values.seed, parsed.problems));
    options.seedOrders = parsed.orders;
  }
  if (values.keys !== undefined) {
    const parsed = parseKeyEntries(await readInputFile(values.keys, 'keys'));
    if (!parsed.ok) throw new UsageError(problemsLine('keys', values.keys, parsed.problems));
    options.keys = parsed.entries;
  }
  return options;
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new UsageError(
          error.code === 'EADDRINUSE'
            ? `port ${port} is already in use (choose another with --port)`
            : `cannot listen on port ${port}: ${error.message}`,
        ),
      );
    });
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

function describeKeys(keys: readonly KeyEntry[]): string[] {
  const demo = keys === DEMO_KEYS;
  return keys.map((entry) => {
    const limits = resolveLimits(entry.plan, entry.limits);
    const shown = demo ? entry.key : keyHint(entry.key);
    return `  ${entry.plan.padEnd(11)} ${shown}  (${limits.perMinute}/min, ${limits.perDay}/day)`;
  });
}

function describeOrders(
  stack: LocalStack,
  seeded: readonly Order[] | undefined,
  synthesized: boolean,
): string[] {
  if (seeded) return [`Orders: ${seeded.length} loaded from --seed`];
  if (synthesized)
    return ['Orders: none (a new stage is empty: npm run admin -- orders import FILE --local)'];
  if (stack.ordersLoaded === 0)
    return ['Orders: the orders table already existed; its contents were kept'];
  return [`Demo orders:`, ...DEMO_ORDERS.map((order) => `  ${orderToJson(order)}`)];
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** The ban a stage's functions apply, as its template sets their environment. */
function banOfTemplate(stack: SynthesizedStack): LimiterSettings {
  return limiterSettingsFromEnv(stack.template.functions.cancelOrder?.environment ?? {});
}

/** Ends when the process that started this one is gone (its parent changes). */
function watchParent(onGone: () => void): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) onGone();
  }, 500).unref();
}

/** Writes the line, then exits once it has reached stderr (a pipe is not cut short). */
function exitWith(code: number, line?: string): void {
  if (line === undefined) process.exit(code);
  process.stderr.write(`${line}\n`, () => process.exit(code));
}

async function main(argv: string[]): Promise<void> {
  const options = await parseOptions(argv);
  if (options === 'help') {
    console.log(USAGE);
    return;
  }
  // Claim the port first: a taken port is reported before DynamoDB Local is started at all.
  // Until the functions are ready, the server answers 503.
  const running: { gateway?: GatewayListener; pool?: ContainerPool } = {};
  const server = createGatewayServer(() => running.gateway);
  const port = await listen(server, options.port);

  let stack: LocalStack | undefined;
  let stopping = false;
  const shutdown = async (reason: string, code = 0, line?: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    if (code === 0) console.log(`\n${reason}: stopping`);
    server.closeAllConnections();
    server.close();
    await running.pool?.close();
    await removeLocalState();
    await stack?.stop();
    exitWith(code, line);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void shutdown(signal));
  watchParent(() => void shutdown('the process that started npm start has ended'));

  let synthesized: SynthesizedStack | undefined;
  try {
    if (options.stage) {
      synthesized = await startSynthesizedStack({
        stage: options.stage,
        ...(options.assembly ? { assemblyDir: options.assembly } : {}),
        ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
        tablePrefix: options.tablePrefix,
        ...(options.seedOrders ? { seedOrders: options.seedOrders } : {}),
        ...(options.keys ? { keys: options.keys } : {}),
        stateFile: localStateFile(),
        progress: (line) => console.log(line),
      });
      stack = synthesized;
    } else {
      stack = await startLocalStack({
        dynamodbEndpoint: options.dynamodbEndpoint,
        tablePrefix: options.tablePrefix,
        seedOrders: options.seedOrders,
        keys: options.keys,
        stateFile: localStateFile(),
      });
    }
  } catch (error) {
    server.close();
    throw new UsageError(
      options.dynamodbEndpoint
        ? `cannot use DynamoDB at ${options.dynamodbEndpoint}: ${(error as Error).message.split('\n')[0]}`
        : ((error as Error).message.split('\n')[0] ?? 'DynamoDB Local did not start'),
    );
  }
  const started = stack;
  const dynamoDbPid = started.dynamoDbPid;
  void started.dynamoDbExited.then((how) => {
    if (stopping) return;
    void shutdown(
      'DynamoDB Local ended',
      1,
      `error: DynamoDB Local (pid ${dynamoDbPid}) ended unexpectedly (${how}); the local API stops with it`,
    );
  });

  const log = (line: string): void => console.log(line);
  const pool = new ContainerPool({
    env: synthesized ? {} : { ...functionEnvironment(started), ...options.banEnv },
    maxContainers: options.maxContainers,
    ...(synthesized ? { runtimes: templateRuntimes(synthesized.template, started.endpoint) } : {}),
    log,
  });
  running.pool = pool;
  await pool.prewarm();
  const apiUrl = `http://127.0.0.1:${port}/${API_STAGE}`;
  const gatewayOptions = synthesized
    ? templateGatewayOptions(synthesized.template)
    : { authorizerTtlSeconds: options.authorizerTtlSeconds };
  running.gateway = createGateway({ invoker: pool, ...gatewayOptions, log });
  const ban = synthesized ? banOfTemplate(synthesized) : options.ban;
  await writeLocalState({
    apiUrl,
    endpoint: started.endpoint,
    region: LOCAL_REGION,
    tables: started.tables,
    pid: process.pid,
    dynamoDbPid: started.dynamoDbPid,
    ban: { afterRefusals: ban.maxRefusalsPerMinute, seconds: ban.banMs / 1000 },
    ...(options.stage ? { stage: options.stage } : {}),
  });

  const lines = [
    ...(synthesized
      ? [
          `Stage ${options.stage} as synthesized (${synthesized.assemblyDir}): its tables as the template makes them, its functions' bundles with the template's settings`,
        ]
      : []),
    `DynamoDB: ${started.endpoint}${options.dynamodbEndpoint ? '' : ' (DynamoDB Local, in memory)'}`,
    `Tables: ${Object.values(started.tables).join(', ')}`,
    ...describeOrders(started, options.seedOrders, synthesized !== undefined),
    ...(started.keys.length > 0
      ? [
          `API keys${started.keys === DEMO_KEYS ? ' (demo keys, local only)' : ''}:`,
          ...describeKeys(started.keys),
        ]
      : [`API keys: none yet (npm run admin -- keys create --plan pro --local)`]),
    `Authorizer cache TTL: ${gatewayOptions.authorizerTtlSeconds} s`,
    `Ban: at the ${ordinal(ban.maxRefusalsPerMinute + 1)} early refusal in a minute window, for ${ban.banMs / 1000} s`,
    ...(synthesized
      ? Object.entries(synthesized.template.apiStages).map(
          ([name, s]) =>
            `Stage throttle ${name}: ${s.throttle ? `${s.throttle.rateLimit}/s, burst ${s.throttle.burstLimit}` : 'none'}`,
        )
      : []),
    `Functions: up to ${options.maxContainers} containers each (worker threads), one invocation at a time per container`,
    started.keys === DEMO_KEYS
      ? `Try: curl -H "Authorization: Bearer ${DEMO_KEYS[0]?.key}" ${apiUrl}/store/orders`
      : `Try: curl -H "Authorization: Bearer <your key>" ${apiUrl}/store/orders`,
    // v2 beside v1: the filtered, paged list (and the same cancel).
    `v2 (filtered pages, beta): http://127.0.0.1:${port}/v2/store/orders?status=pending`,
    `Listening on ${apiUrl}`,
  ];
  console.log(lines.join('\n'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message =
    error instanceof UsageError
      ? error.message
      : `unexpected failure: ${quotableInput((error as Error)?.message ?? String(error), 300)}`;
  // DynamoDB Local (if started) is stopped by its wrapper when this process ends.
  exitWith(1, `error: ${message}`);
});

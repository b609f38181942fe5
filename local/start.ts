/**
 * `npm start`: the whole API on this machine — the real authorizer and handlers behind the
 * API Gateway emulation, on DynamoDB Local (in memory, stopped on exit) or a given endpoint.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import { API_STAGE } from '../lib/api/routes.ts';
import { keyHint } from '../lib/keys/api-key.ts';
import { parseKeyEntries, type KeyEntry } from '../lib/keys/key-input.ts';
import { resolveLimits } from '../lib/limits/plans.ts';
import { formatProblem, parseOrders } from '../lib/orders/order-input.ts';
import { orderToJson, type Order } from '../lib/orders/order.ts';
import { DEMO_KEYS, DEMO_ORDERS } from './demo-data.ts';
import { createGateway } from './gateway.ts';
import {
  DEFAULT_TABLE_PREFIX,
  loadFunctions,
  removeLocalState,
  startLocalStack,
  writeLocalState,
  type LocalStack,
} from './local-stack.ts';
import { LOCAL_REGION } from '../lib/dynamodb/client.ts';

const USAGE = `Usage: npm start -- [options]

Starts the Store Orders API locally: API Gateway emulation + the real functions + DynamoDB Local.

Options:
  --port N                 port to listen on (default 3000; 0 picks a free one)
  --seed FILE              JSON array of orders to load instead of the demo orders
  --keys FILE              JSON array of {"key", "plan", "limits"?} to register instead of the demo keys
  --dynamodb-endpoint URL  use a running DynamoDB instead of starting DynamoDB Local
  --table-prefix NAME      prefix of the table names (default ${DEFAULT_TABLE_PREFIX})
  --authorizer-ttl SECONDS authorizer cache TTL, 0 to 3600 (default 60, as deployed)
  --help                   show this help`;

/** A problem with what the user gave: reported as one line, never as a stack trace. */
class UsageError extends Error {}

interface StartOptions {
  port: number;
  seedOrders?: Order[];
  keys?: KeyEntry[];
  dynamodbEndpoint?: string;
  tablePrefix: string;
  authorizerTtlSeconds: number;
}

function integerOption(
  value: string | undefined,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

async function readInputFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `--${flag} ${path}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
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
  return `--${flag} ${path}: ${shown}${more}`;
}

async function parseOptions(argv: string[]): Promise<StartOptions | 'help'> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        seed: { type: 'string' },
        keys: { type: 'string' },
        'dynamodb-endpoint': { type: 'string' },
        'table-prefix': { type: 'string' },
        'authorizer-ttl': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]);
  }
  if (values.help) return 'help';
  const options: StartOptions = {
    port: integerOption(values.port, 'port', 0, 65535, 3000),
    tablePrefix: values['table-prefix'] ?? DEFAULT_TABLE_PREFIX,
    authorizerTtlSeconds: integerOption(values['authorizer-ttl'], 'authorizer-ttl', 0, 3600, 60),
  };
  if (!/^[A-Za-z0-9_.-]{3,200}$/.test(options.tablePrefix)) {
    throw new UsageError('--table-prefix must be 3 to 200 letters, digits, "_", "-" or "."');
  }
  const endpoint = values['dynamodb-endpoint'];
  if (endpoint !== undefined) {
    if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
      throw new UsageError(`--dynamodb-endpoint must be an http(s) URL, got "${endpoint}"`);
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

function describeOrders(stack: LocalStack, seeded: readonly Order[] | undefined): string[] {
  if (seeded) return [`Orders: ${seeded.length} loaded from --seed`];
  if (stack.ordersLoaded === 0)
    return ['Orders: the orders table already existed; its contents were kept'];
  return [`Demo orders:`, ...DEMO_ORDERS.map((order) => `  ${orderToJson(order)}`)];
}

async function main(argv: string[]): Promise<void> {
  const options = await parseOptions(argv);
  if (options === 'help') {
    console.log(USAGE);
    return;
  }
  const lines: string[] = [];
  // Claim the port first: a taken port is reported before DynamoDB Local is started at all.
  let handle: (req: IncomingMessage, res: ServerResponse) => unknown = (_req, res) => {
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1' });
    res.end('{"code":"SERVICE_UNAVAILABLE","message":"The local API is starting.","status":503}');
  };
  const server = createServer((req, res) => void handle(req, res));
  const port = await listen(server, options.port);

  let stack: LocalStack | undefined;
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping`);
    server.closeAllConnections();
    server.close();
    await removeLocalState();
    await stack?.stop();
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void shutdown(signal));

  try {
    stack = await startLocalStack({
      dynamodbEndpoint: options.dynamodbEndpoint,
      tablePrefix: options.tablePrefix,
      seedOrders: options.seedOrders,
      keys: options.keys,
    });
  } catch (error) {
    server.close();
    throw new UsageError(
      options.dynamodbEndpoint
        ? `cannot use DynamoDB at ${options.dynamodbEndpoint}: ${(error as Error).message.split('\n')[0]}`
        : (error as Error).message.split('\n')[0],
    );
  }
  const functions = await loadFunctions(stack);
  const apiUrl = `http://127.0.0.1:${port}/${API_STAGE}`;
  handle = createGateway({
    functions,
    authorizer: functions.authorizer,
    authorizerTtlSeconds: options.authorizerTtlSeconds,
    log: (line) => console.log(line),
  });
  await writeLocalState({
    apiUrl,
    endpoint: stack.endpoint,
    region: LOCAL_REGION,
    tables: stack.tables,
    pid: process.pid,
    dynamoDbPid: stack.dynamoDbPid,
  });

  lines.push(
    `DynamoDB: ${stack.endpoint}${options.dynamodbEndpoint ? '' : ' (DynamoDB Local, in memory)'}`,
    `Tables: ${Object.values(stack.tables).join(', ')}`,
    ...describeOrders(stack, options.seedOrders),
    `API keys${stack.keys === DEMO_KEYS ? ' (demo keys, local only)' : ''}:`,
    ...describeKeys(stack.keys),
    `Authorizer cache TTL: ${options.authorizerTtlSeconds} s`,
    stack.keys === DEMO_KEYS
      ? `Try: curl -H "Authorization: Bearer ${DEMO_KEYS[0]?.key}" ${apiUrl}/store/orders`
      : `Try: curl -H "Authorization: Bearer <your key>" ${apiUrl}/store/orders`,
    `Listening on ${apiUrl}`,
  );
  console.log(lines.join('\n'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message =
    error instanceof UsageError
      ? error.message
      : `unexpected failure: ${(error as Error)?.message ?? String(error)}`;
  console.error(`error: ${message}`);
  process.exitCode = 1;
  // DynamoDB Local (if started) is killed by its exit hook.
  setImmediate(() => process.exit(1));
});

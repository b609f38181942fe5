/**
 * The local API of the cost benchmark (bench/cost.ts), in a process of its own: the API Gateway
 * emulation and the functions in containers, as `npm start` runs them, with each function loaded
 * through bench/cost-function.ts (its own lane of the capacity proxy, marks around each
 * invocation) and the settings production gives them (LOG_LEVEL INFO, metrics on). Its stdout
 * and stderr carry only what the functions write (and the marks); it talks to the benchmark over
 * the IPC channel: `{ type: 'ready', url }` once it listens, then `{ type: 'access', bytes }` for
 * each request's access log line (the stack's format, which API Gateway would write to
 * CloudWatch Logs).
 *
 * Settings: BENCH_COST_SERVER, a JSON `{ prefix, endpoints, authorizerTtlSeconds, logLevel }`.
 */
import { join } from 'node:path';
import { FUNCTION_NAMES } from '../lib/functions.ts';
import { ContainerPool } from '../local/container-pool.ts';
import { createGateway, createGatewayServer } from '../local/gateway.ts';
import { functionEnvironment, localTableNames, PROJECT_ROOT } from '../local/local-stack.ts';

export interface CostServerSettings {
  readonly prefix: string;
  /** The proxy's endpoint of each function, and `other` for anything else. */
  readonly endpoints: Readonly<Record<string, string>>;
  readonly authorizerTtlSeconds: number;
  readonly logLevel: string;
}

const settings = JSON.parse(process.env.BENCH_COST_SERVER ?? 'null') as CostServerSettings | null;
if (!settings || !process.send) {
  throw new Error('bench/cost-server.ts runs as bench/cost.ts starts it (settings, IPC)');
}
const send = (message: unknown): void => void process.send!(message);

const entry = join(PROJECT_ROOT, 'bench', 'cost-function.ts');
const pool = new ContainerPool({
  env: {
    ...functionEnvironment({
      endpoint: settings.endpoints.other!,
      tables: localTableNames(settings.prefix),
    }),
    LOG_LEVEL: settings.logLevel,
    METRICS_DISABLED: 'false',
    BENCH_COST_ENDPOINTS: JSON.stringify(settings.endpoints),
  },
  // One request at a time: one container a function, the same warm one for every request.
  maxContainers: 1,
  entries: Object.fromEntries(FUNCTION_NAMES.map((name) => [name, entry])),
});
await pool.prewarm();
const gateway = createGateway({
  invoker: pool,
  authorizerTtlSeconds: settings.authorizerTtlSeconds,
  log: (line) => {
    // The access log line of a request (JSON); the emulator's own notes are not API Gateway's.
    if (line.startsWith('{')) send({ type: 'access', bytes: Buffer.byteLength(`${line}\n`) });
  },
});
const server = createGatewayServer(() => gateway);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
send({ type: 'ready', url: `http://127.0.0.1:${(server.address() as { port: number }).port}` });

process.on('disconnect', () => {
  server.closeAllConnections();
  server.close();
  void pool.close().then(() => process.exit(0));
});

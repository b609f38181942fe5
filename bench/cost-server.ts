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
 * With `stage`, the stage as synthesized (local/stage-template.ts): each function's bundle with
 * its template's environment, memory and timeout, the template's routes and gateway responses
 * (its authorizer cache TTL aside: the benchmark keeps a key's policy cached for the whole run).
 *
 * Settings: BENCH_COST_SERVER, a JSON `{ prefix, endpoints, authorizerTtlSeconds, logLevel,
 * stage? }`.
 */
import { join } from 'node:path';
import type { StageName } from '../lib/deployment.ts';
import { LOCAL_REGION } from '../lib/dynamodb/client.ts';
import { FUNCTION_NAMES } from '../lib/functions.ts';
import { ContainerPool, type FunctionRuntime } from '../local/container-pool.ts';
import { createGateway, createGatewayServer } from '../local/gateway.ts';
import { functionEnvironment, localTableNames, PROJECT_ROOT } from '../local/local-stack.ts';
import { readTemplateStage } from '../local/stage-template.ts';
import { templateGatewayOptions, templateRuntimes } from '../local/synthesized-stage.ts';

export interface CostServerSettings {
  readonly prefix: string;
  /** The proxy's endpoint of each function, and `other` for anything else. */
  readonly endpoints: Readonly<Record<string, string>>;
  readonly authorizerTtlSeconds: number;
  readonly logLevel: string;
  /** A stage as synthesized, from this cloud assembly. */
  readonly stage?: { readonly name: StageName; readonly assemblyDir: string };
}

const settings = JSON.parse(process.env.BENCH_COST_SERVER ?? 'null') as CostServerSettings | null;
if (!settings || !process.send) {
  throw new Error('bench/cost-server.ts runs as bench/cost.ts starts it (settings, IPC)');
}
const send = (message: unknown): void => void process.send!(message);

const entry = join(PROJECT_ROOT, 'bench', 'cost-function.ts');
const benchEnv = {
  METRICS_DISABLED: 'false',
  BENCH_COST_ENDPOINTS: JSON.stringify(settings.endpoints),
};
const template = settings.stage
  ? readTemplateStage(settings.stage.assemblyDir, settings.stage.name, {
      tablePrefix: settings.prefix,
      region: LOCAL_REGION,
    })
  : undefined;
// A stage as synthesized: each function's bundle, loaded by the measuring wrapper, with the
// template's settings (its LOG_LEVEL, production's INFO, among them).
const runtimes = template
  ? Object.fromEntries(
      Object.entries(templateRuntimes(template, settings.endpoints.other!)).map(
        ([name, runtime]): [string, FunctionRuntime] => [
          name,
          {
            ...runtime,
            entry,
            format: 'module',
            handlerName: 'handler',
            env: { ...runtime.env, ...benchEnv, BENCH_COST_BUNDLE: runtime.entry },
          },
        ],
      ),
    )
  : undefined;
const pool = new ContainerPool({
  env: template
    ? {}
    : {
        ...functionEnvironment({
          endpoint: settings.endpoints.other!,
          tables: localTableNames(settings.prefix),
        }),
        LOG_LEVEL: settings.logLevel,
        ...benchEnv,
      },
  // One request at a time: one container a function, the same warm one for every request.
  maxContainers: 1,
  entries: Object.fromEntries(FUNCTION_NAMES.map((name) => [name, entry])),
  ...(runtimes ? { runtimes } : {}),
});
await pool.prewarm();
const gateway = createGateway({
  invoker: pool,
  ...(template ? templateGatewayOptions(template) : {}),
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

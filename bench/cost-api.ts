/**
 * The cost benchmark's instrument: the local API (bench/cost-server.ts, in a process of its own)
 * with DynamoDB behind the capacity proxy (bench/capacity-proxy.ts), and `measure`, which sends
 * one request and gives its answer with what one function did for it — the handler's duration,
 * the bytes it wrote (bench/function-output.ts), its DynamoDB calls and their units — and the
 * access log line's bytes. Requests go one at a time: whatever happens between two of them is a
 * problem (`problems`), as is a call the proxy could put down to no function, or one DynamoDB
 * answered with no capacity.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import { PROJECT_ROOT } from '../local/local-stack.ts';
import { readBody, startCapacityProxy, type CapacityProxy } from './capacity-proxy.ts';
import type { Sample } from './cost-record.ts';
import type { CostServerSettings } from './cost-server.ts';
import { FunctionOutput } from './function-output.ts';

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

export interface BenchRequest {
  readonly method: 'GET' | 'DELETE';
  readonly path: string;
  /** The API key sent as the bearer token. */
  readonly key: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A sample, with the answer it measured. */
export type Measured = Sample & { readonly answer: Answer };

/** The code of an error answer's body (the Error object). */
function errorCode(answer: Answer): string | undefined {
  if (answer.status < 400) return undefined;
  try {
    return (JSON.parse(answer.body.toString('utf8')) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

export class CostApi {
  /** What went wrong while measuring; the benchmark fails when there is anything. */
  readonly problems: string[] = [];
  private readonly output = new FunctionOutput();
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private accessBytes: number[] = [];
  private accessArrived: (() => void) | undefined;
  private base = '';

  private readonly proxy: CapacityProxy;
  private readonly server: ChildProcess;

  private constructor(proxy: CapacityProxy, server: ChildProcess) {
    this.proxy = proxy;
    this.server = server;
  }

  /**
   * Starts the proxy in front of `dynamodbEndpoint` and the local API on the tables of `prefix`
   * (which must exist, with their orders and keys).
   */
  static async start(
    dynamodbEndpoint: string,
    prefix: string,
    stage?: CostServerSettings['stage'],
  ): Promise<CostApi> {
    const proxy = await startCapacityProxy(dynamodbEndpoint, [...FUNCTION_NAMES, 'other']);
    const settings: CostServerSettings = {
      prefix,
      endpoints: proxy.endpoints,
      // Long enough that a key's policy stays cached for the whole run: the authorizer is
      // measured on keys it has not seen.
      authorizerTtlSeconds: 3600,
      // As production runs them (infra/config.ts).
      logLevel: 'INFO',
      ...(stage ? { stage } : {}),
    };
    const server = spawn(process.execPath, [join(PROJECT_ROOT, 'bench', 'cost-server.ts')], {
      env: { ...process.env, BENCH_COST_SERVER: JSON.stringify(settings) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const api = new CostApi(proxy, server);
    for (const stream of ['stdout', 'stderr'] as const) {
      server[stream]!.on('data', (chunk: Buffer) => api.output.read(stream, chunk.toString()));
    }
    api.base = await new Promise<string>((resolve, reject) => {
      server.on('message', (message: { type: string; url?: string; bytes?: number }) => {
        if (message.type === 'ready') resolve(message.url!);
        if (message.type === 'access') {
          api.accessBytes.push(message.bytes!);
          api.accessArrived?.();
        }
      });
      server.once('exit', (code) => reject(new Error(`bench/cost-server.ts exited with ${code}`)));
    });
    return api;
  }

  /** Bytes the containers wrote with no function's tag (the runtime's, as they started). */
  get untaggedBytes(): number {
    return this.output.untagged;
  }

  /**
   * One request, measured: its answer, and what `fn` (the route's function, or the
   * authorizer) did for it, once the route's function has ended and the access line is in.
   */
  async measure(
    req: BenchRequest,
    route: FunctionName,
    fn: FunctionName = route,
  ): Promise<Measured> {
    const stray = this.proxy.take();
    if (stray.length > 0) {
      this.problems.push(
        `DynamoDB calls between requests: ${stray.map((c) => `${c.lane} ${c.operation}`).join(', ')}`,
      );
    }
    this.output.reset();
    this.accessBytes = [];
    const answer = await this.send(req);
    await this.output.waitFor(fn === route ? [route] : [fn, route]);
    while (this.accessBytes.length === 0) {
      await new Promise<void>((resolve) => {
        this.accessArrived = resolve;
        setTimeout(resolve, 50);
      });
    }
    const calls = this.proxy.take();
    const strays = calls.filter((call) => !(FUNCTION_NAMES as string[]).includes(call.lane));
    if (strays.length > 0) this.problems.push(`${strays.length} DynamoDB calls of no function`);
    const unmeasured = calls.filter((call) => call.unmeasured);
    if (unmeasured.length > 0) {
      this.problems.push(
        `${req.method} ${req.path}: ${unmeasured.map((c) => `${c.operation} ${c.error ?? c.status}`).join(', ')} answered with no capacity`,
      );
    }
    const code = errorCode(answer);
    const { ms, bytes } = this.output.of(fn);
    return {
      answer,
      status: answer.status,
      ...(code ? { code } : {}),
      ms,
      logBytes: bytes,
      // The access line is the request's, not its authorizer's.
      accessLogBytes: fn === route ? this.accessBytes[0]! : 0,
      calls: calls.filter((call) => call.lane === fn),
    };
  }

  /** A request to the local API, answered whole. */
  private send(req: BenchRequest): Promise<Answer> {
    return new Promise((resolve, reject) => {
      request(
        new URL(req.path, this.base),
        {
          method: req.method,
          agent: this.agent,
          headers: { Authorization: `Bearer ${req.key}`, ...req.headers },
        },
        (response) => {
          readBody(response).then(
            (body) =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
            reject,
          );
        },
      )
        .on('error', reject)
        .end();
    });
  }

  async close(): Promise<void> {
    this.agent.destroy();
    if (this.server.exitCode === null) {
      this.server.disconnect();
      await once(this.server, 'exit');
    }
    await this.proxy.close();
  }
}

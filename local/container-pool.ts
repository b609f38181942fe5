/**
 * Lambda's execution model for the local API. Per function, a pool of containers — worker
 * threads running local/container.ts — each serving one invocation at a time and kept warm for
 * the next, with its own module state, SDK clients, connection pool and logger. A container's
 * first invocation pays its cold start, which the log shows. The pool grows under load up to
 * `maxContainers` per function; invocations beyond that wait for a free container (Lambda would
 * start another one: the emulation's one difference). A container that runs past its function's
 * timeout is discarded, as Lambda discards a timed-out sandbox.
 */
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import type { ContainerData } from './container.ts';
import type { Invocation, InvokeOptions, Invoker } from './invoker.ts';

const FUNCTIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'functions');
const CONTAINER_SCRIPT = new URL('./container.ts', import.meta.url);

/**
 * How long a container whose client went away may take to stop by itself before it is
 * discarded: more than the functions' own DynamoDB budget, so that they normally end cleanly.
 */
const ABORT_GRACE_MS = 3_000;

/** Bytes of a streamed body in flight between a container and its client, by default. */
const STREAM_WINDOW = 1024 * 1024;

/** Containers per function by default: enough to overlap I/O waits on a 2-core machine. */
export const DEFAULT_MAX_CONTAINERS = 4;

/**
 * How one function runs when it is not its source module with lib/functions.ts's settings: a
 * stage as synthesized runs each function's bundle with the template's settings
 * (local/stage-template.ts).
 */
export interface FunctionRuntime {
  /** Absolute path of its module or bundle. */
  readonly entry: string;
  readonly format: 'module' | 'commonjs';
  /** The export Lambda calls. */
  readonly handlerName: string;
  readonly memoryMb: number;
  /** Its own environment, on top of the pool's `env`. */
  readonly env: Readonly<Record<string, string>>;
  /** Its containers at most (its reserved concurrency), below the pool's `maxContainers`. */
  readonly maxContainers?: number;
  /**
   * Whether `env` is its whole environment, as Lambda gives a function only its configuration's
   * (a stage as synthesized); else it runs on this process's environment, `env` over it.
   */
  readonly ownEnvironment?: boolean;
}

export interface ContainerPoolOptions {
  /** The functions' environment (table names, endpoint…), on top of this process's. */
  readonly env: Readonly<Record<string, string>>;
  readonly maxContainers?: number;
  readonly log?: (line: string) => void;
  /** Modules to run instead of functions/<entry> (tests). */
  readonly entries?: Partial<Record<FunctionName, string>>;
  /** Functions run otherwise than from their source (a stage as synthesized). */
  readonly runtimes?: Partial<Record<FunctionName, FunctionRuntime>>;
  /** The functions it runs (all by default; a release that had fewer runs only its own). */
  readonly functions?: readonly FunctionName[];
  /**
   * Bytes of a streamed body in flight between a container and its client (default 1 MiB): with
   * the gateway's own buffer (a quarter of it), what a slow client can make the server hold.
   */
  readonly streamWindowBytes?: number;
}

export interface PoolStats {
  /** Invocations that started a new container (cold starts), per function. */
  readonly cold: Record<string, number>;
  /** Invocations served by a container already warm, per function. */
  readonly warm: Record<string, number>;
  /** Containers alive now, per function. */
  readonly containers: Record<string, number>;
}

type Message =
  | { type: 'ready'; initMs: number }
  | { type: 'memory'; liveBytes: number }
  | { type: 'returned'; id: number; result: unknown }
  | { type: 'prelude'; id: number; prelude: Extract<Invocation, { kind: 'streaming' }>['prelude'] }
  | { type: 'chunk'; id: number; data: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'failed'; id: number; message: string; tooLarge: boolean };

class Container {
  readonly worker: Worker;
  readonly label: string;
  readonly ready: Promise<number>;
  /** Set while it serves an invocation. */
  busy = false;
  served = 0;
  /** Its module is loaded (it answers messages). */
  started = false;
  private exited = false;

  private readonly streamWindow: number;

  constructor(
    name: FunctionName,
    number: number,
    runtime: FunctionRuntime,
    env: Readonly<Record<string, string>>,
    streamWindow: number,
  ) {
    this.label = `${name}#${number}`;
    this.streamWindow = streamWindow;
    const data: ContainerData = {
      name,
      entry: runtime.entry,
      format: runtime.format,
      handlerName: runtime.handlerName,
      memoryMb: runtime.memoryMb,
      streamWindow,
    };
    this.worker = new Worker(CONTAINER_SCRIPT, {
      workerData: data,
      env: runtime.ownEnvironment ? { ...runtime.env } : { ...process.env, ...env, ...runtime.env },
      // A Lambda function's memory setting bounds what it may hold.
      resourceLimits: { maxOldGenerationSizeMb: runtime.memoryMb },
      name: this.label,
    });
    this.worker.once('exit', () => (this.exited = true));
    this.ready = new Promise<number>((resolve, reject) => {
      const onMessage = (message: Message) => {
        if (message.type !== 'ready') return;
        this.worker.off('message', onMessage);
        resolve(message.initMs);
      };
      this.worker.on('message', onMessage);
      this.worker.once('error', reject);
      this.worker.once('exit', (code) => reject(new Error(`container exited with ${code}`)));
    });
    this.ready.then(
      () => (this.started = true),
      () => undefined,
    );
  }

  get alive(): boolean {
    return !this.exited;
  }

  /**
   * What it holds now (see local/container.ts `memory`); 0 once it has exited (a container
   * discarded while asked holds nothing). Callers ask one at a time (the answer carries no id).
   */
  memory(): Promise<number> {
    if (this.exited) return Promise.resolve(0);
    return new Promise((resolve) => {
      const settle = (bytes: number) => {
        this.worker.off('message', onMessage);
        this.worker.off('exit', onExit);
        resolve(bytes);
      };
      const onMessage = (message: Message) => {
        if (message.type === 'memory') settle(message.liveBytes);
      };
      const onExit = () => settle(0);
      this.worker.on('message', onMessage);
      this.worker.once('exit', onExit);
      this.worker.postMessage({ type: 'memory' });
    });
  }

  discard(): void {
    this.exited = true;
    void this.worker.terminate();
  }

  /** Runs one invocation; resolves with its answer (for a stream: once the prelude is in). */
  run(id: number, event: unknown, options: InvokeOptions, onFinished: () => void) {
    const { worker } = this;
    return new Promise<Invocation>((resolve) => {
      let body: Readable | undefined;
      let settleStream: { resolve: () => void; reject: (error: Error) => void } | undefined;
      let owed = 0;
      let finished = false;
      const credit = () => {
        if (owed > 0 && !finished) worker.postMessage({ type: 'credit', id, bytes: owed });
        owed = 0;
      };
      const finish = (): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        clearTimeout(grace);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        options.signal?.removeEventListener('abort', onAbort);
        onFinished();
      };
      /** The invocation ends without a proper answer: in a stream, the body is cut. */
      const fail = (invocation: Invocation, reason: string): void => {
        if (body) {
          body.destroy(new Error(reason));
          settleStream?.reject(new Error(reason));
        } else {
          resolve(invocation);
        }
        finish();
      };
      const onMessage = (message: Message) => {
        if (message.type === 'ready' || message.type === 'memory' || message.id !== id) return;
        switch (message.type) {
          case 'returned':
            resolve({ kind: 'returned', result: message.result });
            finish();
            return;
          case 'failed':
            fail(
              message.tooLarge
                ? { kind: 'too-large' }
                : { kind: 'failed', message: message.message },
              message.message,
            );
            return;
          case 'prelude': {
            body = new Readable({ read: credit, highWaterMark: this.streamWindow / 4 });
            const done = new Promise<void>((resolveDone, rejectDone) => {
              settleStream = { resolve: resolveDone, reject: rejectDone };
            });
            done.catch(() => undefined);
            resolve({ kind: 'streaming', prelude: message.prelude, body, done });
            return;
          }
          case 'chunk': {
            const data = message.data;
            owed += data.byteLength;
            if (body?.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength))) credit();
            return;
          }
          case 'end':
            body?.push(null);
            settleStream?.resolve();
            finish();
            return;
        }
      };
      const onExit = (): void => fail({ kind: 'failed', message: 'container exited' }, 'exited');
      // Lambda ends an invocation at its timeout by discarding the sandbox.
      const timer = setTimeout(() => {
        this.discard();
        fail({ kind: 'timed-out' }, 'the function timed out');
      }, options.timeoutMs);
      let grace: NodeJS.Timeout | undefined;
      const onAbort = (): void => {
        worker.postMessage({ type: 'abort', id });
        grace = setTimeout(() => {
          this.discard();
          fail({ kind: 'failed', message: 'the client went away' }, 'the client went away');
        }, ABORT_GRACE_MS);
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ type: 'invoke', id, event, timeoutMs: options.timeoutMs });
    });
  }
}

class FunctionPool {
  private readonly containers: Container[] = [];
  private readonly queue: { start: (container: Container) => void; signal?: AbortSignal }[] = [];
  private numbered = 0;
  cold = 0;
  warm = 0;

  private readonly name: FunctionName;
  private readonly runtime: FunctionRuntime;
  private readonly options: ContainerPoolOptions;

  constructor(name: FunctionName, runtime: FunctionRuntime, options: ContainerPoolOptions) {
    this.name = name;
    this.runtime = runtime;
    this.options = options;
  }

  get size(): number {
    return this.containers.filter((c) => c.alive).length;
  }

  /** A new container, its cold start logged once it is ready. */
  private spawn(): Container {
    const container = new Container(
      this.name,
      ++this.numbered,
      this.runtime,
      this.options.env,
      this.options.streamWindowBytes ?? STREAM_WINDOW,
    );
    this.containers.push(container);
    container.worker.once('exit', () => {
      const at = this.containers.indexOf(container);
      if (at >= 0) this.containers.splice(at, 1);
    });
    container.ready.then(
      (initMs) => this.options.log?.(`${container.label}: cold start, init ${initMs} ms`),
      (error: unknown) =>
        this.options.log?.(`${container.label}: could not start: ${(error as Error).message}`),
    );
    return container;
  }

  /** Starts a container ahead of the first request (as provisioned concurrency would). */
  async prewarm(): Promise<void> {
    if (this.size === 0) await this.spawn().ready;
  }

  /**
   * Runs the event in a free container. The event keeps the request time the gateway stamped
   * on arrival: the wait for a container counts against the request's time, as a cold start
   * does on Lambda (the function's own floor keeps it from starting with an expired budget).
   */
  async invoke(event: unknown, options: InvokeOptions): Promise<Invocation> {
    const container = await this.acquire(options.signal);
    if (!container) return { kind: 'failed', message: 'the client went away' };
    try {
      await container.ready;
    } catch (error) {
      container.discard();
      this.release(container);
      return { kind: 'failed', message: `container could not start: ${(error as Error).message}` };
    }
    if (container.served++ === 0) this.cold++;
    else this.warm++;
    return container.run(++invocationIds, event, options, () => this.release(container));
  }

  /** A free container: an idle one, a new one while the pool may grow, else the next to free. */
  private acquire(signal: AbortSignal | undefined): Promise<Container | undefined> {
    const idle = this.containers.find((c) => c.alive && !c.busy);
    const container =
      idle ??
      (this.size <
      Math.min(
        this.options.maxContainers ?? DEFAULT_MAX_CONTAINERS,
        this.runtime.maxContainers ?? Infinity,
      )
        ? this.spawn()
        : undefined);
    if (container) {
      container.busy = true;
      return Promise.resolve(container);
    }
    return new Promise((resolve) => {
      const waiter = {
        start: (free: Container) => {
          signal?.removeEventListener('abort', leave);
          resolve(free);
        },
        signal,
      };
      const leave = (): void => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        resolve(undefined);
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.queue.push(waiter);
    });
  }

  private release(container: Container): void {
    container.busy = false;
    const next = this.queue.shift();
    if (!next) return;
    const free = container.alive ? container : this.spawn();
    free.busy = true;
    next.start(free);
  }

  /** Whether an invocation is running or waiting for a container. */
  get inFlight(): boolean {
    return this.queue.length > 0 || this.containers.some((c) => c.alive && c.busy);
  }

  /** What its ready containers hold together. */
  async memory(): Promise<number> {
    const ready = this.containers.filter((c) => c.alive && c.started);
    const held = await Promise.all(ready.map((c) => c.memory()));
    return held.reduce((sum, bytes) => sum + bytes, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.containers.map((c) => c.worker.terminate()));
  }
}

/** A function run from its source module (or a test's), with lib/functions.ts's settings. */
function sourceRuntime(name: FunctionName, options: ContainerPoolOptions): FunctionRuntime {
  return {
    entry: options.entries?.[name] ?? join(FUNCTIONS_DIR, FUNCTIONS[name].entry),
    format: 'module',
    handlerName: 'handler',
    memoryMb: FUNCTIONS[name].memoryMb,
    env: {},
  };
}

let invocationIds = 0;

export class ContainerPool implements Invoker {
  private readonly pools: Map<FunctionName, FunctionPool>;

  constructor(options: ContainerPoolOptions) {
    this.pools = new Map(
      (options.functions ?? (Object.keys(FUNCTIONS) as FunctionName[])).map((name) => [
        name,
        new FunctionPool(name, options.runtimes?.[name] ?? sourceRuntime(name, options), options),
      ]),
    );
  }

  invoke(name: FunctionName, event: unknown, options: InvokeOptions): Promise<Invocation> {
    const pool = this.pools.get(name);
    if (!pool) return Promise.resolve({ kind: 'failed', message: `no function ${name}` });
    return pool.invoke(event, options);
  }

  /** One warm container per function before the first request. */
  async prewarm(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.prewarm()));
  }

  /** What all containers hold (heap and external memory), for measurements. */
  async memory(): Promise<number> {
    const held = await Promise.all([...this.pools.values()].map((pool) => pool.memory()));
    return held.reduce((sum, bytes) => sum + bytes, 0);
  }

  stats(): PoolStats {
    const of = (pick: (pool: FunctionPool) => number) =>
      Object.fromEntries([...this.pools].map(([name, pool]) => [name, pick(pool)]));
    return { cold: of((p) => p.cold), warm: of((p) => p.warm), containers: of((p) => p.size) };
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
  }

  /**
   * Closes once no invocation is in flight (at most `timeoutMs`): a version taken out of service
   * finishes what it was serving, as Lambda lets an old version's invocations end.
   */
  async drain(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while ([...this.pools.values()].some((pool) => pool.inFlight) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.close();
  }
}

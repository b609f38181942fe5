/**
 * The local API as `npm start` runs it (API Gateway emulation, functions in containers) on given
 * tables, in a process of its own that measures what it holds while it serves: its RSS (all its
 * threads) and its live memory — heap and external memory of the main thread and of every
 * container, after a collection (run with --expose-gc) — RSS sampled every 25 ms, live memory
 * 150 ms after the previous sample.
 *
 * Prints `READY <url>`. On stdin, `reset` starts a new measurement of RSS only (cheap: for timing
 * runs), `reset live` one of RSS and live memory (a collection in every thread every 150 ms or
 * so: a run measured so is slower), and `report` prints `{ baselineRss, peakRss, baselineLive,
 * peakLive }` (bytes) of the current one.
 *
 * Usage: node --expose-gc bench/list-server.ts <dynamodb-endpoint> <table-prefix> [containers]
 */
import { createInterface } from 'node:readline';
import { ContainerPool } from '../local/container-pool.ts';
import { createGateway, createGatewayServer } from '../local/gateway.ts';
import { functionEnvironment, localTableNames } from '../local/local-stack.ts';

const [endpoint, prefix, containers] = process.argv.slice(2);
if (!endpoint || !prefix) throw new Error('usage: list-server.ts <endpoint> <prefix> [containers]');
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with --expose-gc');

const pool = new ContainerPool({
  env: {
    ...functionEnvironment({ endpoint, tables: localTableNames(prefix) }),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'ERROR',
  },
  maxContainers: containers ? Number(containers) : undefined,
});
await pool.prewarm();
const gateway = createGateway({ invoker: pool, authorizerTtlSeconds: 3600 });
const server = createGatewayServer(() => gateway);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

async function live(): Promise<number> {
  collect!();
  const main = process.memoryUsage();
  return main.heapUsed + main.external + (await pool.memory());
}

let measurement = {
  baselineRss: 0,
  peakRss: 0,
  baselineLive: 0,
  peakLive: 0,
  liveSamples: 0,
  liveMs: 0,
};
let withLive = false;
/** A live-memory sample is being taken (one collection at a time). */
let sampling = false;
async function reset(live_: boolean): Promise<void> {
  // No sample while the baseline is taken: one collection at a time.
  withLive = false;
  while (sampling) await new Promise((resolve) => setTimeout(resolve, 5));
  // The least of three: a collection right after a list may not have reclaimed everything yet.
  const baselineLive = live_ ? Math.min(await live(), await live(), await live()) : 0;
  const rss = process.memoryUsage().rss;
  measurement = {
    baselineRss: rss,
    peakRss: rss,
    baselineLive,
    peakLive: baselineLive,
    liveSamples: 0,
    liveMs: 0,
  };
  withLive = live_;
}
await reset(false);

// RSS every 25 ms (cheap). Live memory needs a full collection in every thread, which stalls
// each of them: sampled 150 ms after the previous sample ended, so that the measured list still
// gets most of the CPU (back to back, the collections starved the containers into 503s).
setInterval(() => {
  measurement.peakRss = Math.max(measurement.peakRss, process.memoryUsage().rss);
}, 25).unref();
async function sampleLive(): Promise<void> {
  if (withLive) {
    const current = measurement; // a sample counts for the measurement it started in
    const started = performance.now();
    sampling = true;
    const bytes = await live().finally(() => (sampling = false));
    current.peakLive = Math.max(current.peakLive, bytes);
    current.liveSamples++;
    current.liveMs += performance.now() - started;
  }
  setTimeout(() => void sampleLive(), 150).unref();
}
void sampleLive();

console.log(`READY http://127.0.0.1:${(server.address() as { port: number }).port}/v1`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim().startsWith('reset')) {
    await reset(line.trim() === 'reset live');
    console.log('RESET');
  } else if (line.trim() === 'report') {
    console.log(JSON.stringify(measurement));
  }
}
await pool.close();
process.exit(0);

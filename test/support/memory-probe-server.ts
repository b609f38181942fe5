/**
 * The local API (gateway emulation + real handlers) in a process of its own that measures its
 * live memory: run with --expose-gc, it collects garbage and samples heap + array buffers every
 * 25 ms, so the figure is what the process holds, not what the collector has yet to free.
 * Prints `READY <url>`; on a line `report` on stdin prints the samples as JSON and exits.
 *
 * Usage: node --expose-gc memory-probe-server.ts <dynamodb-endpoint> <table-prefix>
 */
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { createGateway } from '../../local/gateway.ts';
import { loadFunctions, localTableNames } from '../../local/local-stack.ts';

const [endpoint, prefix] = process.argv.slice(2);
if (!endpoint || !prefix) throw new Error('usage: memory-probe-server.ts <endpoint> <prefix>');
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with --expose-gc');

const functions = await loadFunctions({ endpoint, tables: localTableNames(prefix) });
const listener = createGateway({
  functions,
  authorizer: functions.authorizer,
  authorizerTtlSeconds: 60,
});
const server = createServer((req, res) => void listener(req, res));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

const live = (): number => {
  collect();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
};
const baseline = live();
let peak = baseline;
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => {
  peak = Math.max(peak, live());
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 25);

console.log(`READY http://127.0.0.1:${(server.address() as { port: number }).port}/v1`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'report') continue;
  clearInterval(sampler);
  console.log(
    JSON.stringify({ baselineLiveBytes: baseline, peakLiveBytes: peak, peakRssBytes: peakRss }),
  );
  process.exit(0);
}

/**
 * `npm run bench:client-parse`: how fast `@store-orders/client` reads a streamed order list —
 * the incremental parser alone, fed the body in 16 KB chunks as fetch hands it over, for a list
 * whose ids fit a JS number exactly and for one whose ids are all past 2^53 (the exact path).
 * Prints the median of several runs (CPU time) in MB/s and orders/s beside JSON.parse of the whole body,
 * which is no streaming parser (it holds the list) and rounds ids past 2^53: the floor.
 */
import { OrderListParser } from '../client/src/order-list-parser.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { median } from './statistics.ts';

const values = benchFlags('bench:client-parse', 'How fast the client reads a streamed list.', {
  orders: countFlag('orders in each list', 200_000),
  runs: countFlag('runs of each parse (the median is printed)', 9),
});
const ORDERS = countOf('bench:client-parse', 'orders', values.orders, 200_000);
const RUNS = countOf('bench:client-parse', 'runs', values.runs, 9);
const CHUNK = 16 * 1024;

function body(firstId: bigint): string {
  const orders = Array.from(
    { length: ORDERS },
    (_, i) =>
      `{"id":${firstId + BigInt(i)},"petId":${(i * 7919) % 100_000},"quantity":${1 + (i % 9)},` +
      `"shipDate":"2026-11-${String(1 + (i % 28)).padStart(2, '0')}T09:00:00Z",` +
      `"complete":${i % 3 === 0},"status":"${['pending', 'shipped', 'cancelled'][i % 3]}"}`,
  );
  return `[${orders.join(',')}]`;
}

function measure(label: string, text: string, parse: () => number): void {
  const times: number[] = [];
  for (let run = 0; run < RUNS + 1; run++) {
    // CPU time of this process, which other processes on a busy machine disturb less than the
    // clock on the wall.
    const started = process.cpuUsage();
    const count = parse();
    const used = process.cpuUsage(started);
    const ms = (used.user + used.system) / 1000;
    if (count !== ORDERS) throw new Error(`${label}: ${count} orders, expected ${ORDERS}`);
    if (run > 0) times.push(ms); // the first run warms up
  }
  const ms = median(times);
  const mb = text.length / 1e6;
  console.log(
    `${label.padEnd(44)} ${(mb / (ms / 1000)).toFixed(1).padStart(6)} MB/s ${((ORDERS / ms) * 1000).toFixed(0).padStart(9)} orders/s  (${ms.toFixed(0)} CPU ms)`,
  );
}

function streamed(text: string): number {
  const parser = new OrderListParser();
  let count = 0;
  for (let i = 0; i < text.length; i += CHUNK) {
    for (const order of parser.push(text.slice(i, i + CHUNK))) if (order.id !== undefined) count++;
  }
  parser.end();
  return count;
}

console.log(`${ORDERS} orders, ${CHUNK / 1024} KB chunks, median of ${RUNS} runs`);
for (const [name, firstId] of [
  ['ids below 2^53', 1n],
  ['ids past 2^53', 9_007_199_254_740_993n],
] as const) {
  const text = body(firstId);
  measure(`client parser, ${name} (${(text.length / 1e6).toFixed(1)} MB)`, text, () =>
    streamed(text),
  );
  measure(`JSON.parse of the whole body, ${name}`, text, () => (JSON.parse(text) as []).length);
}

/**
 * `npm run bench:compression [-- --orders N]`: how the levels of functions/shared/compression.ts
 * were picked. Compresses the JSON of N bench orders (default 200,000; the orders of
 * `npm run bench:list`) with each coding at a range of levels, as the list does (in 16 KiB
 * writes, through Node's stream compressors, on one thread), and prints the output's share of
 * the identity bytes and the CPU time spent. A list function has about one vCPU.
 */
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { CONTENT_CODINGS, type ContentCoding } from '../lib/api/content-coding.ts';
import { orderToJson } from '../lib/orders/order.ts';
import { COMPRESSION_LEVELS, createCompressor } from '../functions/shared/compression.ts';
import { benchOrders } from './list.ts';

const LEVELS: Readonly<Record<ContentCoding, readonly number[]>> = {
  zstd: [1, 2, 3, 4, 5, 6, 9],
  br: [1, 2, 3, 4, 5, 6, 9], // 11, brotli's default: 8.0% for 100× the CPU of 9
  gzip: [1, 3, 4, 5, 6, 7, 9],
};
const WRITE_BYTES = 16 * 1024;

async function compress(json: Buffer, coding: ContentCoding, level: number) {
  const compressor = createCompressor(coding, level);
  let bytes = 0;
  compressor.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const done = new Promise((resolve, reject) => compressor.on('end', resolve).on('error', reject));
  const cpu = process.cpuUsage();
  for (let at = 0; at < json.length; at += WRITE_BYTES) {
    if (!compressor.write(json.subarray(at, at + WRITE_BYTES))) {
      await new Promise((resolve) => compressor.once('drain', resolve));
    }
  }
  compressor.end();
  await done;
  const used = process.cpuUsage(cpu);
  return { bytes, cpuSeconds: (used.user + used.system) / 1e6 };
}

const values = benchFlags('bench:compression', 'Bytes and CPU of each coding and level.', {
  orders: countFlag('orders in the JSON compressed', 200_000),
});
const orders = benchOrders(countOf('bench:compression', 'orders', values.orders, 200_000));
const json = Buffer.from(`[${orders.map(orderToJson).join(',')}]`);
console.log(
  `${orders.length} orders, ${json.length.toLocaleString('en')} bytes of JSON (CPU of every thread, zlib's included)\n`,
);
console.log('| coding | level | of identity | CPU s | MB/s of input |');
console.log('|---|---|---|---|---|');
for (const coding of CONTENT_CODINGS) {
  for (const level of LEVELS[coding]) {
    await compress(json, coding, level); // warm
    const { bytes, cpuSeconds } = await compress(json, coding, level);
    const chosen = COMPRESSION_LEVELS[coding] === level ? ' (chosen)' : '';
    console.log(
      `| ${coding} | ${level}${chosen} | ${((bytes / json.length) * 100).toFixed(1)}% | ${cpuSeconds.toFixed(2)} | ${(json.length / 1e6 / cpuSeconds).toFixed(0)} |`,
    );
  }
}

/** The compressor inside the list's stream: back-pressure, prompt flushes, failures, departures. */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CONTENT_CODINGS, type ContentCoding } from '../../lib/api/content-coding.ts';
import { compressed, IDLE_FLUSH_MS } from '../../functions/shared/compression.ts';

const CHUNK = 64 * 1024;

/** Text that compresses about as badly as text can (hex), served lazily; counts what was taken. */
function source(chunks: number, options: { pauseAfterFirstMs?: number; failAfter?: number } = {}) {
  const hash = createHash('sha256');
  let taken = 0;
  const stream = new Readable({
    highWaterMark: CHUNK,
    read() {
      void (async () => {
        if (taken === 1 && options.pauseAfterFirstMs) await sleep(options.pauseAfterFirstMs);
        if (options.failAfter !== undefined && taken === options.failAfter) {
          stream.destroy(new Error('the database failed mid-stream'));
          return;
        }
        if (taken === chunks) {
          stream.push(null);
          return;
        }
        taken++;
        const chunk = Buffer.from(randomBytes(CHUNK / 2).toString('hex'));
        hash.update(chunk);
        stream.push(chunk);
      })();
    },
  });
  return { stream, taken: () => taken, digest: () => hash.digest('hex') };
}

function decoder(coding: ContentCoding) {
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return coding === 'gzip'
    ? zlib.createGunzip(flush)
    : coding === 'br'
      ? zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH })
      : zlib.createZstdDecompress();
}

describe.each(CONTENT_CODINGS)('%s inside the stream', (coding) => {
  it('takes from its source only as fast as its output is read, and loses nothing', async () => {
    const input = source(200); // 12.5 MiB
    const output = compressed(input.stream, coding);
    await sleep(300);
    // Nobody reads: the source was asked for what the compressor's window holds, not the 200.
    expect(input.taken()).toBeLessThanOrEqual(coding === 'br' ? 16 : 8);
    const plain = createHash('sha256');
    const decode = decoder(coding);
    decode.on('data', (chunk: Buffer) => plain.update(chunk));
    output.pipe(decode);
    await once(decode, 'end');
    expect(input.taken()).toBe(200);
    expect(plain.digest('hex')).toBe(input.digest());
  });

  it('sends its first chunk at once, before the source goes on', async () => {
    const input = source(3, { pauseAfterFirstMs: 1_000 });
    // No idle flush could deliver it in time: only the first chunk's own flush can.
    const output = compressed(input.stream, coding, { idleFlushMs: 60_000 });
    const decode = decoder(coding);
    output.pipe(decode);
    const started = performance.now();
    const [first] = (await once(decode, 'data')) as [Buffer];
    expect(performance.now() - started).toBeLessThan(500);
    expect(first.length).toBeGreaterThan(0);
    output.destroy();
  });

  it('flushes what came before a pause of the source', async () => {
    const stream = new Readable({ read: () => undefined });
    const push = (chunk: string | null): void => void stream.push(chunk);
    const output = compressed(stream, coding);
    const decode = decoder(coding);
    const seen: string[] = [];
    decode.on('data', (chunk: Buffer) => seen.push(chunk.toString()));
    output.pipe(decode);
    push('[{"id":1}');
    await sleep(100);
    push(',{"id":2}');
    await sleep(IDLE_FLUSH_MS * 4);
    expect(seen.join('')).toBe('[{"id":1},{"id":2}');
    push(null);
  });

  it('never ends its output when the source fails: a cut list cannot pass for a complete one', async () => {
    const input = source(50, { failAfter: 10 });
    const output = compressed(input.stream, coding);
    const bytes: Buffer[] = [];
    output.on('data', (chunk: Buffer) => bytes.push(chunk));
    const [error] = (await once(output, 'error')) as [Error];
    expect(error.message).toBe('the database failed mid-stream');
    const whole =
      coding === 'gzip'
        ? () => zlib.gunzipSync(Buffer.concat(bytes))
        : coding === 'br'
          ? () => zlib.brotliDecompressSync(Buffer.concat(bytes))
          : () => zlib.zstdDecompressSync(Buffer.concat(bytes));
    expect(whole).toThrow();
  });

  it('stops its source when its reader goes away', async () => {
    const input = source(1_000);
    const output = compressed(input.stream, coding);
    output.resume();
    await sleep(50);
    output.destroy();
    await sleep(100);
    expect(input.stream.destroyed).toBe(true);
    expect(input.taken()).toBeLessThan(1_000);
  });
});

/**
 * Compressing a streamed body inside the stream: API Gateway does no content coding for
 * streamed responses, and on AWS the bytes on the wire decide a long list's speed (past its
 * first 6 MB a streamed response gets at most 2 MB/s).
 */
import { pipeline } from 'node:stream/promises';
import { Writable, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { ContentCoding } from '../../lib/api/content-coding.ts';

/**
 * Levels, picked with `npm run bench:compression` for bytes against CPU time on one core (a
 * 1,769 MB function has one vCPU): gzip 6, zlib's default; br 5 and zstd 5, the cheapest levels
 * that send fewer bytes than gzip 6. The figures: docs/architecture.md, "Large lists".
 */
export const COMPRESSION_LEVELS: Readonly<Record<ContentCoding, number>> = {
  gzip: 6,
  br: 5,
  zstd: 5,
};

type Compressor = zlib.Gzip | zlib.BrotliCompress | zlib.ZstdCompress;

export function createCompressor(
  coding: ContentCoding,
  level: number = COMPRESSION_LEVELS[coding],
): Compressor {
  switch (coding) {
    case 'gzip':
      return zlib.createGzip({ level });
    case 'br':
      return zlib.createBrotliCompress({
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: level,
          [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
          // A 512 KiB window (the default is 4 MiB): orders repeat within a few hundred bytes,
          // and a stalled client then holds at most that much input in the compressor.
          [zlib.constants.BROTLI_PARAM_LGWIN]: 19,
        },
      });
    case 'zstd':
      return zlib.createZstdCompress({
        params: { [zlib.constants.ZSTD_c_compressionLevel]: level },
      });
  }
}

/** How long the source may pause before what it gave so far is flushed to the client. */
export const IDLE_FLUSH_MS = 50;

/**
 * `source`, compressed as it flows:
 * - back-pressure holds: the source is written only as fast as the compressor's output is
 *   taken, so memory stays at the compressor's own buffers however slow the client;
 * - the first chunk (the array's first order) is flushed at once, and so is whatever came before
 *   any pause of the source longer than IDLE_FLUSH_MS: a client sees orders as they are read,
 *   not at the end;
 * - a failure of the source destroys the compressed stream before its trailer: a client can never
 *   mistake a cut list for a complete one; a client that goes away stops the source.
 */
export function compressed(
  source: Readable,
  coding: ContentCoding,
  options: { readonly bufferBytes?: number; readonly idleFlushMs?: number } = {},
): Readable {
  const compressor = createCompressor(coding);
  const flush = (): void => {
    if (!compressor.destroyed && !compressor.writableEnded) compressor.flush();
  };
  let first = true;
  // One timer, pushed back by every later chunk: it fires only after a pause of the source.
  let idle: NodeJS.Timeout | undefined;
  const feeder = new Writable({
    highWaterMark: options.bufferBytes ?? 16 * 1024,
    write(chunk: Buffer, _encoding, done) {
      const ready = compressor.write(chunk);
      if (first) {
        first = false;
        flush();
      } else if (idle) {
        idle.refresh();
      } else {
        idle = setTimeout(flush, options.idleFlushMs ?? IDLE_FLUSH_MS);
      }
      if (ready) done();
      else compressor.once('drain', () => done());
    },
    final(done) {
      clearTimeout(idle);
      compressor.end();
      done();
    },
  });
  pipeline(source, feeder).catch((error: unknown) => {
    clearTimeout(idle);
    compressor.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  compressor.once('close', () => {
    clearTimeout(idle);
    if (!feeder.writableFinished) feeder.destroy();
  });
  return compressor;
}

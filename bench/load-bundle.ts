/**
 * Loads one function bundle as Lambda's Node.js runtime does: `require()` of its CommonJS file,
 * with the runtime's streaming global in place. Prints, as JSON, the milliseconds the load took
 * (module evaluation: the part of a cold start the code decides) and the type of its `handler`.
 * Run in a fresh process per sample, without NODE_OPTIONS, as Lambda runs the functions:
 *
 *   node bench/load-bundle.ts path/to/index.js
 */
import { createRequire } from 'node:module';

Object.assign(globalThis, {
  awslambda: {
    streamifyResponse: (h: unknown) => h,
    HttpResponseStream: { from: (s: unknown) => s },
  },
});
const file = process.argv[2];
if (!file) throw new Error('usage: node bench/load-bundle.ts <bundle.js>');
const started = performance.now();
const loaded = createRequire(import.meta.url)(file) as { handler?: unknown };
console.log(JSON.stringify({ ms: performance.now() - started, handler: typeof loaded.handler }));

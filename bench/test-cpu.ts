/**
 * `npm run bench:test-cpu [-- --only PATHS] [--interval-ms N] [--top N]`: where a test run's
 * CPU goes. Runs `npm test`'s program (test/run-all.ts; with `--only`, the checks and vitest on
 * those paths) and samples every process it starts from /proc (bench/process-census.ts), then
 * prints, per test file, the CPU it spent in its vitest worker and in the processes it started
 * (Java, the local API, the CLI…), and the processes of the run itself (its DynamoDB Local, the
 * checks, vitest's own). Linux only (it reads /proc). The run's wall time against its CPU on this
 * machine's cores is the floor no ordering of the files can beat.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { valueFlag } from '../lib/config/flags.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import {
  costsByFile,
  machineBusySeconds,
  ProcessCensus,
  reapedChildrenSeconds,
  runOwnCosts,
  type FileCost,
  type WorkerRecord,
} from './process-census.ts';

const SCRIPT = 'bench:test-cpu';
const flags = benchFlags(
  SCRIPT,
  "Runs npm test's program and prints where its CPU went: per test file (its vitest worker and the processes it started) and the run's own processes. Linux only.",
  {
    only: valueFlag('PATHS', 'run the checks and vitest on these paths only (space-separated)'),
    'interval-ms': countFlag('milliseconds between two samples of /proc', 250),
    top: countFlag('test files to list, the costliest first', 30),
  },
);
const intervalMs = countOf(SCRIPT, 'interval-ms', flags['interval-ms'], 250);
const top = countOf(SCRIPT, 'top', flags.top, 30);
if (!existsSync('/proc/self/stat')) {
  console.error(`error: ${SCRIPT} reads /proc, which this system does not have (Linux only)`);
  process.exit(2);
}

const PROJECT_ROOT = join(import.meta.dirname, '..');
const directory = mkdtempSync(join(tmpdir(), 'store-orders-test-cpu-'));
const cpuLog = join(directory, 'workers.jsonl');
const args = flags.only?.split(/\s+/).filter(Boolean) ?? [];

const started = performance.now();
const busyAtStart = machineBusySeconds();
const reapedAtStart = reapedChildrenSeconds();
const run = spawn(process.execPath, [join(PROJECT_ROOT, 'test', 'run-all.ts'), ...args], {
  cwd: PROJECT_ROOT,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, STORE_ORDERS_TEST_CPU_LOG: cpuLog },
});
/** The run's last words, shown if it fails. */
let output = '';
const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000));
run.stdout.on('data', keep);
run.stderr.on('data', keep);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => run.kill(signal));

const census = new ProcessCensus(run.pid ?? process.pid);
const sampler = setInterval(() => census.sample(), intervalMs);
census.sample();
const code = await new Promise<number | null>((resolve) => run.once('close', resolve));
clearInterval(sampler);
const wallSeconds = (performance.now() - started) / 1000;
const busyAtEnd = machineBusySeconds();
const reapedAtEnd = reapedChildrenSeconds();

const records: WorkerRecord[] = existsSync(cpuLog)
  ? readFileSync(cpuLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as WorkerRecord)
  : [];
rmSync(directory, { recursive: true, force: true });

const processes = census.processes();
const files = costsByFile(processes, records);
const own = runOwnCosts(processes, records);
const filesSeconds = files.reduce((sum, file) => sum + file.totalSeconds, 0);
const ownSeconds = own.reduce((sum, kind) => sum + kind.seconds, 0);
const totalSeconds = filesSeconds + ownSeconds;
const cores = availableParallelism();

const s = (seconds: number) => seconds.toFixed(1);
function describeProcesses(file: FileCost): string {
  return (
    [...file.processes]
      .sort((a, b) => b[1].seconds - a[1].seconds)
      .map(([kind, cost]) => `${kind} ${s(cost.seconds)} (${cost.count})`)
      .join(', ') || '—'
  );
}

console.log(
  `\n## CPU of the run, per test file (the costliest ${Math.min(top, files.length)} of ${files.length})\n`,
);
console.log('| test file | CPU s | in its worker | its processes: CPU s (how many) | wall s |');
console.log('| --- | --- | --- | --- | --- |');
for (const file of files.slice(0, top)) {
  console.log(
    `| ${file.file} | ${s(file.totalSeconds)} | ${s(file.workerSeconds)} | ${describeProcesses(file)} | ${s(file.wallSeconds)} |`,
  );
}
const rest = files.slice(top);
if (rest.length > 0) {
  const restSeconds = rest.reduce((sum, file) => sum + file.totalSeconds, 0);
  console.log(`| the other ${rest.length} files | ${s(restSeconds)} | | | |`);
}
console.log('\n## CPU of the run itself (processes no test file started)\n');
console.log('| process | CPU s | how many |');
console.log('| --- | --- | --- |');
for (const kind of own) console.log(`| ${kind.kind} | ${s(kind.seconds)} | ${kind.count} |`);
// Every process of the run that was waited for, exactly (what the census misses included): the
// floor is taken from it when it is the larger.
const reaped =
  reapedAtStart !== undefined && reapedAtEnd !== undefined
    ? reapedAtEnd - reapedAtStart
    : undefined;
const floorSeconds = Math.max(totalSeconds, reaped ?? 0) / cores;
console.log(
  `\nTotal: ${s(totalSeconds)} s of CPU (test files ${s(filesSeconds)}, the run itself ${s(ownSeconds)}) in ${s(wallSeconds)} s on ${cores} cores: ` +
    `${Math.round((totalSeconds / (wallSeconds * cores)) * 100)}% busy; no order of the files can end it before ${s(floorSeconds)} s.`,
);
if (reaped !== undefined) {
  console.log(
    `The run's processes spent ${s(reaped)} s of CPU in all (the kernel's count of those waited for); the census saw ${Math.round((totalSeconds / reaped) * 100)}% of it.`,
  );
}
if (busyAtStart !== undefined && busyAtEnd !== undefined) {
  // What the census does not see: processes that lived between two samples, the last moments of
  // those that ended, this program, and anything else the machine ran meanwhile.
  const busy = busyAtEnd - busyAtStart;
  console.log(
    `The machine's CPUs were busy ${s(busy)} s meanwhile (${Math.round((busy / (wallSeconds * cores)) * 100)}%); the census saw ${Math.round((totalSeconds / busy) * 100)}% of it.`,
  );
}
console.log(
  "(vitest's own row is its processes less what the files spent in them: start-up, transforms, collection.)",
);
if (code !== 0) {
  console.error(`\n${output}\nerror: the run failed (exit ${code}); its figures are not a measure`);
  process.exit(1);
}

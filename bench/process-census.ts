/**
 * Who spent a machine's CPU while a command ran: every process's CPU time, read from Linux's
 * /proc at an interval, each process put down to the test file that started it (the variable
 * TEST_FILE_VARIABLE in its environment, which test/support/setup.ts sets for the processes a
 * test starts) and to a kind (Java, the local API, ESLint…) read from its command line. Used by
 * `npm run bench:test-cpu` (bench/test-cpu.ts).
 *
 * A process is sampled, not traced: one that starts and ends between two samples is not seen,
 * and one that ends is counted up to its last sample. Processes already running when the census
 * starts count only what they spend after it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Set by test/support/setup.ts to the running test file (`test/…`): its processes inherit it. */
export const TEST_FILE_VARIABLE = 'STORE_ORDERS_TEST_FILE';

/** /proc/<pid>/stat counts CPU in clock ticks of 1/100 s (USER_HZ, 100 on Linux's ABI). */
const TICKS_PER_SECOND = 100;

/** The kind of vitest's processes (its main process and its workers). */
export const VITEST_KIND = 'vitest';

/** What a process is, from its command line: the first rule that matches. */
const KINDS: readonly (readonly [kind: string, pattern: RegExp])[] = [
  ['shell', /^(\S*\/)?(ba)?sh /],
  ['DynamoDB Local (Java)', /\bjava\b.*DynamoDBLocal/],
  ['local API (local/start.ts)', /local\/start\.ts/],
  ['operator CLI', /admin\/cli\.ts/],
  [VITEST_KIND, /vitest/],
  ['ESLint', /eslint/],
  ['Prettier', /prettier/],
  ['tsc', /\btsc\b|typescript/],
  ['OpenAPI linters', /spectral|redocly/],
  ['esbuild', /esbuild/],
  ['npm test (test/run-all.ts)', /test\/run-all\.ts/],
  ['npm', /npm-cli\.js|\/npm\b|^npm\b/],
  ['smoke suite', /smoke\//],
  ['bench', /bench\//],
];

export function kindOf(commandLine: string): string {
  for (const [kind, pattern] of KINDS) if (pattern.test(commandLine)) return kind;
  const program = commandLine.split(' ').find((word) => word !== '');
  // A process that ended before it was first read (a zombie) shows no command line.
  if (program === undefined) return 'ended (no command line)';
  return `other (${program.split('/').at(-1)})`;
}

/** One process as /proc shows it now. */
export interface ProcessStat {
  readonly pid: number;
  readonly parentPid: number;
  /** When it started, in clock ticks since boot: with the pid, it names one process. */
  readonly startTicks: number;
  /** User and system CPU, in seconds. */
  readonly cpuSeconds: number;
}

/**
 * The fields of a /proc/<pid>/stat line after the command name, from field 3 (state) on: the
 * name (field 2) is in parentheses and may hold spaces and parentheses itself.
 */
function statFields(text: string): string[] {
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** Parses /proc/<pid>/stat; undefined for text that is not one. */
export function parseStat(pid: number, text: string): ProcessStat | undefined {
  const fields = statFields(text);
  const user = Number(fields[11]);
  const system = Number(fields[12]);
  const start = Number(fields[19]);
  const parentPid = Number(fields[1]);
  if (fields.length < 20 || ![user, system, start, parentPid].every(Number.isFinite))
    return undefined;
  return { pid, parentPid, startTicks: start, cpuSeconds: (user + system) / TICKS_PER_SECOND };
}

/**
 * The CPU of every descendant this process has waited for (and that they waited for), in
 * seconds: /proc/self/stat's cutime and cstime. Exact, where the census samples: it includes the
 * processes too short to be seen.
 */
export function reapedChildrenSeconds(procDir = '/proc'): number | undefined {
  const text = readOr(join(procDir, 'self', 'stat'), '');
  const fields = statFields(text); // cutime and cstime: fields 16 and 17
  const ticks = Number(fields[13]) + Number(fields[14]);
  return text === '' || !Number.isFinite(ticks) ? undefined : ticks / TICKS_PER_SECOND;
}

/**
 * The machine's CPU time spent busy (all but idle and waiting for I/O) since boot, in seconds,
 * from /proc/stat's first line; undefined where there is none.
 */
export function machineBusySeconds(procDir = '/proc'): number | undefined {
  const line = readOr(join(procDir, 'stat'), '').split('\n')[0] ?? '';
  const [label, ...fields] = line.trim().split(/\s+/);
  if (label !== 'cpu' || fields.length < 5) return undefined;
  const ticks = fields.map(Number);
  if (!ticks.every(Number.isFinite)) return undefined;
  const total = ticks.reduce((sum, value, index) => (index < 8 ? sum + value : sum), 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return (total - idle) / TICKS_PER_SECOND;
}

export interface CensusEntry {
  readonly pid: number;
  /** The test file that started it, or undefined for the run's own processes. */
  readonly testFile: string | undefined;
  readonly kind: string;
  /** CPU seconds it spent since the census first saw it running or since it started. */
  readonly cpuSeconds: number;
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** A process as the census follows it. */
interface Tracked {
  readonly pid: number;
  testFile: string | undefined;
  kind: string;
  /** The command line it was named by (none yet: undefined); read again each sample. */
  commandLine: string | undefined;
  cpuSeconds: number;
  readonly baseSeconds: number;
}

/**
 * Samples the processes descended from `root` (the command measured, and what it starts). A
 * process is one when its parent, alive when the census first sees it, is one; a process whose
 * parent ended before that (an orphan, adopted by init) is not seen. Its command line is read
 * at every sample and the process named again when it changes: a child caught between fork and
 * exec shows its parent's command line and environment.
 */
export class ProcessCensus {
  /** The root's descendants, by `pid:start` (a reused pid is another process). */
  private readonly entries = new Map<string, Tracked>();
  private readonly ignored = new Set<string>();
  private readonly root: number;
  private readonly startedTicks: number;
  private readonly procDir: string;

  /** `procDir` is /proc; a test gives a directory laid out as /proc is. */
  constructor(root: number, procDir = '/proc') {
    this.root = root;
    this.procDir = procDir;
    // Processes that started before the census count from their first sample.
    const uptimeSeconds = Number(readOr(join(procDir, 'uptime'), '0').split(' ')[0]);
    this.startedTicks = uptimeSeconds * TICKS_PER_SECOND;
  }

  /** Reads every process once. */
  sample(): void {
    let names: string[];
    try {
      names = readdirSync(this.procDir);
    } catch {
      return;
    }
    const stats = names
      .filter((name) => /^\d+$/.test(name))
      .map((name) => parseStat(Number(name), readOr(join(this.procDir, name, 'stat'), '')))
      .filter((stat) => stat !== undefined) // gone between the listing and the read
      // Parents before children (a parent starts first), whatever their pids after a wrap.
      .sort((a, b) => a.startTicks - b.startTicks || a.pid - b.pid);
    const alive = new Map(stats.map((stat) => [stat.pid, `${stat.pid}:${stat.startTicks}`]));
    for (const stat of stats) {
      const id = `${stat.pid}:${stat.startTicks}`;
      if (this.ignored.has(id)) continue;
      let entry = this.entries.get(id);
      if (!entry) {
        const parent = alive.get(stat.parentPid);
        if (stat.pid !== this.root && !(parent && this.entries.has(parent))) {
          this.ignored.add(id);
          continue;
        }
        entry = {
          pid: stat.pid,
          testFile: undefined,
          kind: kindOf(''),
          commandLine: undefined,
          cpuSeconds: 0,
          baseSeconds: stat.startTicks < this.startedTicks ? stat.cpuSeconds : 0,
        };
        this.entries.set(id, entry);
      }
      this.name(entry, join(this.procDir, String(stat.pid)));
      entry.cpuSeconds = Math.max(entry.cpuSeconds, stat.cpuSeconds - entry.baseSeconds);
    }
  }

  /** Names it from its command line and environment, unless its command line is unchanged. */
  private name(entry: Tracked, directory: string): void {
    const commandLine = readOr(join(directory, 'cmdline'), '').replaceAll('\0', ' ').trim();
    if (commandLine === entry.commandLine) return;
    // Ended since the listing (a zombie has none): keep what it was named by.
    if (commandLine === '' && entry.commandLine !== undefined) return;
    const environment = readOr(join(directory, 'environ'), '').split('\0');
    const marked = environment.find((line) => line.startsWith(`${TEST_FILE_VARIABLE}=`));
    entry.commandLine = commandLine;
    entry.kind = kindOf(commandLine);
    entry.testFile = marked?.slice(TEST_FILE_VARIABLE.length + 1) || undefined;
  }

  /** Every process seen, with what it spent. */
  processes(): CensusEntry[] {
    return [...this.entries.values()].map(({ pid, testFile, kind, cpuSeconds }) => ({
      pid,
      testFile,
      kind,
      cpuSeconds,
    }));
  }
}

/** What a test file cost: in its vitest worker (as the worker measured it) and in its processes. */
export interface FileCost {
  readonly file: string;
  readonly workerSeconds: number;
  readonly wallSeconds: number;
  /** CPU seconds of the processes it started, by kind, and how many of each. */
  readonly processes: ReadonlyMap<string, { seconds: number; count: number }>;
  readonly totalSeconds: number;
}

/** A test file's own CPU, as its worker recorded it (test/support/setup.ts). */
export interface WorkerRecord {
  readonly file: string;
  readonly cpuMs: number;
  readonly wallMs: number;
}

type ByKind = Map<string, { seconds: number; count: number }>;

/** Adds a process's CPU to its kind's. */
function addByKind(kinds: ByKind, entry: CensusEntry): void {
  const kind = kinds.get(entry.kind) ?? { seconds: 0, count: 0 };
  kinds.set(entry.kind, { seconds: kind.seconds + entry.cpuSeconds, count: kind.count + 1 });
}

/** The census and the workers' records, per test file, the costliest first. */
export function costsByFile(
  processes: readonly CensusEntry[],
  records: readonly WorkerRecord[],
): FileCost[] {
  const files = new Map<
    string,
    { workerSeconds: number; wallSeconds: number; processes: ByKind }
  >();
  const of = (file: string) => {
    let cost = files.get(file);
    if (!cost) files.set(file, (cost = { workerSeconds: 0, wallSeconds: 0, processes: new Map() }));
    return cost;
  };
  for (const record of records) {
    const cost = of(record.file);
    cost.workerSeconds += record.cpuMs / 1000;
    cost.wallSeconds += record.wallMs / 1000;
  }
  for (const entry of processes) {
    if (entry.testFile !== undefined) addByKind(of(entry.testFile).processes, entry);
  }
  return [...files]
    .map(([file, cost]) => ({
      file,
      ...cost,
      totalSeconds:
        cost.workerSeconds + [...cost.processes.values()].reduce((sum, k) => sum + k.seconds, 0),
    }))
    .sort((a, b) => b.totalSeconds - a.totalSeconds || a.file.localeCompare(b.file));
}

/**
 * The processes no test file started (the run's DynamoDB Local, the checks, vitest), by kind.
 * The test files' own CPU in vitest's workers (`records`) is taken out of vitest's row: what
 * stays there is vitest's start-up, transforms and collection.
 */
export function runOwnCosts(
  processes: readonly CensusEntry[],
  records: readonly WorkerRecord[] = [],
): { kind: string; seconds: number; count: number }[] {
  const kinds: ByKind = new Map();
  for (const entry of processes) if (entry.testFile === undefined) addByKind(kinds, entry);
  const vitest = kinds.get(VITEST_KIND);
  if (vitest) {
    const inFiles = records.reduce((sum, record) => sum + record.cpuMs / 1000, 0);
    vitest.seconds = Math.max(0, vitest.seconds - inFiles);
  }
  return [...kinds]
    .map(([kind, cost]) => ({ kind, ...cost }))
    .sort((a, b) => b.seconds - a.seconds || a.kind.localeCompare(b.kind));
}

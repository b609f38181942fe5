/** `npm run bench:test-cpu`'s census of a run's processes (bench/process-census.ts). */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  costsByFile,
  kindOf,
  machineBusySeconds,
  parseStat,
  reapedChildrenSeconds,
  ProcessCensus,
  runOwnCosts,
  TEST_FILE_VARIABLE,
} from '../../bench/process-census.ts';

/** /proc/<pid>/stat as Linux writes it: utime, stime and starttime in ticks of 1/100 s. */
function statLine(
  pid: number,
  parent: number,
  ticks: number,
  start: number,
  name = 'node',
): string {
  const fields = Array.from({ length: 50 }, () => '0');
  fields[0] = 'S';
  fields[1] = String(parent);
  fields[11] = String(ticks - Math.floor(ticks / 4)); // user
  fields[12] = String(Math.floor(ticks / 4)); // system
  fields[19] = String(start);
  return `${pid} (${name}) ${fields.join(' ')}\n`;
}

interface FakeProcess {
  pid: number;
  parent: number;
  ticks: number;
  start: number;
  command: string;
  testFile?: string;
}

let directories: string[] = [];
afterEach(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  directories = [];
});

/** A directory laid out as /proc, with an uptime of `uptimeSeconds`. */
function fakeProc(uptimeSeconds: number) {
  const root = mkdtempSync(join(tmpdir(), 'fake-proc-'));
  directories.push(root);
  writeFileSync(join(root, 'uptime'), `${uptimeSeconds}.00 1.00\n`);
  return {
    root,
    write(process: FakeProcess): void {
      const directory = join(root, String(process.pid));
      mkdirSync(directory, { recursive: true });
      writeFileSync(
        join(directory, 'stat'),
        statLine(process.pid, process.parent, process.ticks, process.start, 'x (y) z'),
      );
      writeFileSync(join(directory, 'cmdline'), process.command.replaceAll(' ', '\0'));
      const environment = ['PATH=/usr/bin'];
      if (process.testFile) environment.push(`${TEST_FILE_VARIABLE}=${process.testFile}`);
      writeFileSync(join(directory, 'environ'), environment.join('\0'));
    },
    remove(pid: number): void {
      rmSync(join(root, String(pid)), { recursive: true });
    },
  };
}

describe('a process census', () => {
  it('knows which test file started a process: the setup marks the running one for its children', () => {
    expect(process.env[TEST_FILE_VARIABLE]).toBe('test/unit/process-census.test.ts');
  });

  it('reads the CPU, the parent and the start of a stat line whose name has spaces and parentheses', () => {
    // As Linux writes it (proc(5)): pid (comm) state ppid pgrp session tty tpgid flags minflt
    // cminflt majflt cmajflt utime stime cutime cstime priority nice threads itreal starttime …
    const line =
      '4242 (a) (b) S 4200 4242 4200 0 -1 4194560 12345 0 0 0 250 80 7 3 20 0 11 0 987654 1234567890 4567';
    expect(parseStat(4242, line)).toEqual({
      pid: 4242,
      parentPid: 4200,
      startTicks: 987654,
      cpuSeconds: 3.3,
    });
    expect(parseStat(7, '')).toBeUndefined();
    expect(parseStat(7, '7 (x) S 1 2')).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')(
    'reads this very process as the kernel and Node see it',
    () => {
      const before = process.cpuUsage();
      const stat = parseStat(process.pid, readFileSync('/proc/self/stat', 'utf8'));
      const after = process.cpuUsage();
      expect(stat?.parentPid).toBe(process.ppid);
      // Node's figure is exact, the kernel's in ticks of 10 ms: they agree within a few ticks.
      expect(stat!.cpuSeconds).toBeGreaterThan((before.user + before.system) / 1e6 - 0.05);
      expect(stat!.cpuSeconds).toBeLessThan((after.user + after.system) / 1e6 + 0.05);
    },
  );

  it('names the processes a run starts by their command lines', () => {
    const kinds = [
      'java -Djava.library.path=/x/DynamoDBLocal_lib -Xmx1g -jar /x/DynamoDBLocal.jar -inMemory',
      '/n/node /repo/local/start.ts --port 0',
      '/n/node /repo/admin/cli.ts bans list',
      '/n/node /repo/node_modules/vitest/vitest.mjs run',
      'node /repo/node_modules/.bin/eslint .',
      '/n/node /repo/node_modules/typescript-7/bin/tsc -p .',
      '/n/node /repo/test/run-all.ts',
      'npm run check',
      'sh -c java "$@" dynamodb-local -jar DynamoDBLocal.jar',
      'cat',
      '',
    ].map(kindOf);
    expect(kinds).toEqual([
      'DynamoDB Local (Java)',
      'local API (local/start.ts)',
      'operator CLI',
      'vitest',
      'ESLint',
      'tsc',
      'npm test (test/run-all.ts)',
      'npm',
      'shell',
      'other (cat)',
      'ended (no command line)',
    ]);
  });

  it("counts the root's descendants only, each from when it was first seen or started, up to its last sample", () => {
    const proc = fakeProc(1_000); // the census starts at tick 100,000
    const run = {
      pid: 100,
      parent: 1,
      ticks: 5_000,
      start: 90_000,
      command: 'node test/run-all.ts',
    };
    const java = {
      pid: 101,
      parent: 100,
      ticks: 10,
      start: 100_010,
      command: 'java DynamoDBLocal.jar',
    };
    const stranger = {
      pid: 102,
      parent: 1,
      ticks: 40,
      start: 100_020,
      command: 'java DynamoDBLocal.jar',
    };
    for (const process of [run, java, stranger]) proc.write(process);
    const census = new ProcessCensus(100, proc.root);
    census.sample();
    // A test's API, with a grandchild started between two samples; the run spends 3 s more.
    const api = {
      pid: 150,
      parent: 103,
      ticks: 200,
      start: 100_100,
      command: 'node local/start.ts',
      testFile: 'test/e2e/a.test.ts',
    };
    const worker = {
      pid: 103,
      parent: 100,
      ticks: 900,
      start: 100_050,
      command: 'node vitest.mjs',
    };
    proc.write(api);
    proc.write(worker);
    proc.write({ ...run, ticks: 5_300 });
    proc.write({ ...java, ticks: 610 });
    proc.write({ ...stranger, ticks: 900 });
    census.sample();
    // The API ends after 1 s more; it counts up to its last sample.
    proc.write({ ...api, ticks: 300 });
    census.sample();
    proc.remove(150);
    census.sample();

    const seen = census.processes().sort((a, b) => a.pid - b.pid);
    expect(seen.map((p) => [p.pid, p.kind, p.testFile, p.cpuSeconds])).toEqual([
      [100, 'npm test (test/run-all.ts)', undefined, 3],
      [101, 'DynamoDB Local (Java)', undefined, 6.1],
      [103, 'vitest', undefined, 9],
      [150, 'local API (local/start.ts)', 'test/e2e/a.test.ts', 3],
    ]);
  });

  it("names a process caught between fork and exec again once it has exec'd", () => {
    const proc = fakeProc(1_000);
    const worker = { pid: 100, parent: 1, ticks: 0, start: 100_001, command: 'node vitest.mjs' };
    proc.write(worker);
    // Forked, not yet exec'd: the parent's command line and the environment it started with.
    proc.write({ pid: 120, parent: 100, ticks: 1, start: 100_002, command: 'node vitest.mjs' });
    const census = new ProcessCensus(100, proc.root);
    census.sample();
    expect(census.processes().find((p) => p.pid === 120)).toMatchObject({
      kind: 'vitest',
      testFile: undefined,
    });
    proc.write({
      pid: 120,
      parent: 100,
      ticks: 150,
      start: 100_002,
      command: 'node local/start.ts',
      testFile: 'test/e2e/a.test.ts',
    });
    census.sample();
    const named = {
      pid: 120,
      kind: 'local API (local/start.ts)',
      testFile: 'test/e2e/a.test.ts',
      cpuSeconds: 1.5,
    };
    expect(census.processes().find((p) => p.pid === 120)).toEqual(named);
    // Ended, not yet waited for: a zombie shows no command line, and keeps its name.
    proc.write({ pid: 120, parent: 100, ticks: 150, start: 100_002, command: '' });
    census.sample();
    expect(census.processes().find((p) => p.pid === 120)).toEqual(named);
  });

  it('follows parents by when they started, not by pid: after a wrap, and when a pid is reused', () => {
    const proc = fakeProc(1_000);
    proc.write({
      pid: 30_000,
      parent: 1,
      ticks: 0,
      start: 100_001,
      command: 'node test/run-all.ts',
    });
    // After the pids wrapped, a child has a lower pid than its parent.
    proc.write({
      pid: 300,
      parent: 30_000,
      ticks: 100,
      start: 100_005,
      command: 'java DynamoDBLocal.jar',
    });
    proc.write({ pid: 200, parent: 300, ticks: 50, start: 100_006, command: 'cat' });
    const census = new ProcessCensus(30_000, proc.root);
    census.sample();
    // The Java ends; a stranger's process later gets its pid, and that one starts a child.
    proc.remove(300);
    proc.remove(200);
    proc.write({
      pid: 300,
      parent: 1,
      ticks: 70,
      start: 100_500,
      command: 'java DynamoDBLocal.jar',
    });
    proc.write({ pid: 310, parent: 300, ticks: 90, start: 100_501, command: 'cat' });
    census.sample();
    expect(census.processes().map((p) => [p.pid, p.kind, p.cpuSeconds])).toEqual([
      [30_000, 'npm test (test/run-all.ts)', 0],
      [300, 'DynamoDB Local (Java)', 1],
      [200, 'other (cat)', 0.5],
    ]);
  });

  it("puts each file's processes and worker CPU together, and takes the files' share out of vitest's own", () => {
    const processes = [
      { pid: 1, testFile: 'test/e2e/a.test.ts', kind: 'local API (local/start.ts)', cpuSeconds: 2 },
      {
        pid: 2,
        testFile: 'test/e2e/a.test.ts',
        kind: 'local API (local/start.ts)',
        cpuSeconds: 1.5,
      },
      { pid: 3, testFile: 'test/e2e/a.test.ts', kind: 'DynamoDB Local (Java)', cpuSeconds: 4 },
      { pid: 4, testFile: 'test/unit/b.test.ts', kind: 'esbuild', cpuSeconds: 0.5 },
      { pid: 5, testFile: undefined, kind: 'vitest', cpuSeconds: 20 },
      { pid: 6, testFile: undefined, kind: 'DynamoDB Local (Java)', cpuSeconds: 30 },
    ];
    const records = [
      { file: 'test/e2e/a.test.ts', cpuMs: 1_000, wallMs: 9_000 },
      { file: 'test/unit/b.test.ts', cpuMs: 8_000, wallMs: 3_000 },
      { file: 'test/unit/c.test.ts', cpuMs: 500, wallMs: 100 },
    ];
    const files = costsByFile(processes, records);
    expect(files.map((file) => [file.file, file.totalSeconds, file.workerSeconds])).toEqual([
      ['test/e2e/a.test.ts', 8.5, 1],
      ['test/unit/b.test.ts', 8.5, 8],
      ['test/unit/c.test.ts', 0.5, 0.5],
    ]);
    expect(Object.fromEntries(files[0]!.processes)).toEqual({
      'local API (local/start.ts)': { seconds: 3.5, count: 2 },
      'DynamoDB Local (Java)': { seconds: 4, count: 1 },
    });
    expect(runOwnCosts(processes, records)).toEqual([
      { kind: 'DynamoDB Local (Java)', seconds: 30, count: 1 },
      { kind: 'vitest', seconds: 10.5, count: 1 },
    ]);
  });

  it("reads the machine's busy CPU time from /proc/stat: all but idle and I/O wait", () => {
    const proc = fakeProc(10);
    // user nice system idle iowait irq softirq steal guest guest_nice (guests are in user already)
    writeFileSync(join(proc.root, 'stat'), 'cpu  100 20 30 5000 70 1 2 3 40 0\ncpu0 1 2 3\n');
    expect(machineBusySeconds(proc.root)).toBeCloseTo(1.56, 10);
    writeFileSync(join(proc.root, 'stat'), 'intr 1 2\n');
    expect(machineBusySeconds(proc.root)).toBeUndefined();
  });

  it.runIf(process.platform === 'linux')("counts a child's CPU once it has been waited for", () => {
    const before = reapedChildrenSeconds();
    execFileSync(process.execPath, [
      '-e',
      'const end = Date.now() + 300; while (Date.now() < end);',
    ]);
    const after = reapedChildrenSeconds();
    expect(before).toBeDefined();
    expect(after! - before!).toBeGreaterThan(0.05);
    expect(after! - before!).toBeLessThan(5);
  });

  it.runIf(process.platform === 'linux')(
    'sees the CPU a real child spends, put down to the test file the setup marked for it',
    async () => {
      const child = spawn(
        process.execPath,
        ['-e', 'const end = Date.now() + 400; while (Date.now() < end);'],
        // Its environment is this process's, which the test setup marked.
      );
      const census = new ProcessCensus(process.pid);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      let ended = false;
      void exited.then(() => (ended = true));
      while (!ended) {
        census.sample();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const mine = census.processes().filter((p) => p.pid === child.pid);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({
        testFile: 'test/unit/process-census.test.ts',
        kind: 'other (node)',
      });
      // Busy for 400 ms of wall time; on a busy machine it may get less of a core, never none.
      expect(mine[0]!.cpuSeconds).toBeGreaterThan(0.05);
      expect(mine[0]!.cpuSeconds).toBeLessThan(5);
    },
  );
});

/**
 * What each function writes, told apart in the output of the cost benchmark's local API
 * (bench/cost-server.ts), where the containers' stdout and stderr arrive mixed, a write at a time,
 * in no guaranteed order between containers. In each container, bench/cost-function.ts puts a
 * tag naming the function before every write (`\0cost:<name>\0`: JSON, which the functions write,
 * never holds a NUL), and writes a mark of its own before and after each invocation, with the
 * handler's duration at the end; within one container the order of its writes is kept, so all of
 * an invocation's lines are in before its end mark.
 */

const NUL = '\u0000';

/** The tag before each write of function `name`. */
export function dataTag(name: string): string {
  return `${NUL}cost:${name}${NUL}`;
}

export function beginMark(name: string): string {
  return `${NUL}cost-begin:${name}${NUL}\n`;
}

export function endMark(name: string, ms: number): string {
  return `${NUL}cost-end:${name}:${ms.toFixed(3)}${NUL}\n`;
}

const TAG = new RegExp(`${NUL}(cost|cost-begin|cost-end):([^${NUL}]*)${NUL}`, 'g');

type Stream = 'stdout' | 'stderr';

/**
 * Reads the two streams as they come: bytes written by each function (tags and marks not
 * counted), begun and ended invocations, and handler durations (from the end marks on stdout),
 * since the last `reset`. Bytes without a tag (the runtime's own, before a function loaded) are
 * counted apart.
 */
export class FunctionOutput {
  private readonly partial: Record<Stream, string> = { stdout: '', stderr: '' };
  private bytes = new Map<string, number>();
  private durations = new Map<string, number>();
  private begun: Record<Stream, Map<string, number>> = { stdout: new Map(), stderr: new Map() };
  private ended: Record<Stream, Map<string, number>> = { stdout: new Map(), stderr: new Map() };
  private readonly listeners = new Set<() => void>();
  /** Bytes written with no function's tag, since the start. */
  untagged = 0;

  /** Takes what arrived on one stream. */
  read(stream: Stream, text: string): void {
    const lines = (this.partial[stream] + text).split('\n');
    this.partial[stream] = lines.pop()!;
    for (const line of lines) this.readLine(stream, line);
    for (const listener of this.listeners) listener();
  }

  private readLine(stream: Stream, line: string): void {
    let owner: string | undefined;
    let at = 0;
    const count = (to: number, newline: boolean) => {
      const bytes = Buffer.byteLength(line.slice(at, to)) + (newline ? 1 : 0);
      if (bytes === 0) return;
      if (owner === undefined) this.untagged += bytes;
      else this.bytes.set(owner, (this.bytes.get(owner) ?? 0) + bytes);
    };
    for (const match of line.matchAll(TAG)) {
      count(match.index, false);
      const [, kind, value] = match as unknown as [string, string, string];
      at = match.index + match[0].length;
      if (kind === 'cost') {
        owner = value;
        continue;
      }
      const [name, ms] = value.split(':') as [string, string | undefined];
      const marks = kind === 'cost-begin' ? this.begun : this.ended;
      marks[stream].set(name, (marks[stream].get(name) ?? 0) + 1);
      if (kind === 'cost-end' && stream === 'stdout') {
        this.durations.set(name, (this.durations.get(name) ?? 0) + Number(ms));
      }
      // A mark is a line of its own: nothing after it on the line is counted.
      return;
    }
    count(line.length, true);
  }

  /** Starts counting a new request. */
  reset(): void {
    this.bytes = new Map();
    this.durations = new Map();
    this.begun = { stdout: new Map(), stderr: new Map() };
    this.ended = { stdout: new Map(), stderr: new Map() };
  }

  /** Every function named has ended an invocation, and every invocation begun has ended. */
  settled(names: readonly string[]): boolean {
    return (['stdout', 'stderr'] as const).every(
      (stream) =>
        names.every((name) => (this.ended[stream].get(name) ?? 0) > 0) &&
        [...this.begun[stream]].every(([name, n]) => (this.ended[stream].get(name) ?? 0) >= n),
    );
  }

  /** Waits until `settled(names)`, at most `timeoutMs`. */
  async waitFor(names: readonly string[], timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.settled(names)) {
      if (Date.now() > deadline) {
        throw new Error(`no end of ${names.join(' and ')} in the functions' output`);
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.listeners.delete(done);
          resolve();
        };
        this.listeners.add(done);
        setTimeout(done, 50);
      });
    }
  }

  /** What `name` did since the reset: its handlers' time and the bytes it wrote. */
  of(name: string): { ms: number; bytes: number } {
    return { ms: this.durations.get(name) ?? 0, bytes: this.bytes.get(name) ?? 0 };
  }
}

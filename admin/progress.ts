/**
 * A progress bar on stderr: redrawn in place (at most ten times a second) when stderr is a
 * terminal; otherwise only the final line is printed, so logs get one line, not thousands.
 */
export interface Progress {
  update(done: number): void;
  /** Leaves the final state on its own line. */
  finish(done: number): void;
  /** Erases the bar from a terminal, leaving no line (a phase that a later bar follows). */
  clear(): void;
}

const WIDTH = 30;

export function progressBar(
  total: number,
  unit: string,
  stream: NodeJS.WriteStream,
  clock: () => number = () => performance.now(),
): Progress {
  const started = clock();
  const line = progressLine(stream, clock);
  const render = (done: number): string => {
    const share = total === 0 ? 1 : Math.min(1, done / total);
    const filled = Math.round(share * WIDTH);
    const seconds = (clock() - started) / 1000;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    return `[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${done}/${total} ${unit} ${Math.floor(share * 100)}% ${rate} ${unit}/s`;
  };
  return {
    update: (done) => line.update(() => render(done)),
    finish(done) {
      stream.write(stream.isTTY === true ? `\r${render(done)}\x1b[K\n` : `${render(done)}\n`);
    },
    clear: () => line.clear(),
  };
}

/**
 * Progress of work whose total is not known in advance: a line redrawn in place (at most ten
 * times a second) on a terminal, nothing otherwise; `clear` erases it before the summary. The
 * text may be given as a function, called only when the line is redrawn.
 */
export function progressLine(
  stream: NodeJS.WriteStream,
  clock: () => number = () => performance.now(),
): { update(text: string | (() => string)): void; clear(): void } {
  const interactive = stream.isTTY === true;
  let drawnAt = -Infinity;
  return {
    update(text) {
      if (!interactive) return;
      const now = clock();
      if (now - drawnAt < 100) return;
      drawnAt = now;
      stream.write(`\r${typeof text === 'function' ? text() : text}\x1b[K`);
    },
    clear() {
      if (interactive && drawnAt > -Infinity) stream.write('\r\x1b[K');
    },
  };
}

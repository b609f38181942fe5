/** Waiting that an AbortSignal can cut short (web-standard timers only). */

type Timer = ReturnType<typeof setTimeout>;

/**
 * Resolves after `ms` milliseconds (never, when undefined), or as soon as `wake` settles;
 * rejects with the signal's reason when it aborts first.
 */
export function wait(
  ms: number | undefined,
  options: { signal?: AbortSignal | undefined; wake?: Promise<void> | undefined } = {},
): Promise<void> {
  const { signal, wake } = options;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<void>((resolve, reject) => {
    let timer: Timer | undefined;
    const done = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      done();
      reject(signal?.reason as Error);
    };
    if (ms !== undefined) {
      timer = setTimeout(
        () => {
          done();
          resolve();
        },
        Math.max(0, ms),
      );
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    void wake?.then(() => {
      done();
      resolve();
    });
  });
}

/**
 * An AbortController that aborts with a TimeoutError when the server has been silent for
 * `timeoutMs`: `touch()` restarts the clock (a chunk arrived), `pause()` stops it (the caller is
 * busy, not the server), `finish()` stops it for good. Its signal follows the caller's too.
 */
export class Watchdog {
  readonly signal: AbortSignal;
  readonly #controller = new AbortController();
  readonly #timeoutMs: number;
  #timer: Timer | undefined;

  constructor(timeoutMs: number, callerSignal?: AbortSignal) {
    this.#timeoutMs = timeoutMs;
    this.signal = callerSignal
      ? AbortSignal.any([callerSignal, this.#controller.signal])
      : this.#controller.signal;
    this.touch();
  }

  touch(): void {
    this.pause();
    if (!Number.isFinite(this.#timeoutMs)) return;
    this.#timer = setTimeout(() => {
      this.#controller.abort(
        new DOMException(
          `The server sent nothing for ${this.#timeoutMs} ms (the call's timeout).`,
          'TimeoutError',
        ),
      );
    }, this.#timeoutMs);
  }

  pause(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  finish(): void {
    this.pause();
  }

  /** Aborts the request (the caller stopped reading). */
  abort(): void {
    this.pause();
    this.#controller.abort(new DOMException('The caller stopped reading.', 'AbortError'));
  }
}

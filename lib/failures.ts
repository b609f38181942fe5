/**
 * Failures of a dependency (the database), in the terms the service acts on. The adapters that
 * talk to a dependency classify every failure once, here; the edge (functions/) decides what a
 * client is told: transient → 503 with Retry-After, permanent → 500 with an error log, a metric
 * and an alarm.
 */

/**
 * - `transient`: retrying later can work — throttling, a 5xx, a timeout, a refused or reset
 *   connection.
 * - `permanent`: it will not work until someone changes something — access denied, a missing
 *   table, a request the database rejects, stored data the service cannot read.
 */
export type FailureKind = 'transient' | 'permanent';

export class DependencyFailure extends Error {
  readonly kind: FailureKind;
  /** What failed, for logs: e.g. `orders table`. Never a key or a credential. */
  readonly dependency: string;
  /** A short classification for logs and tests: `timeout`, `throttled`, `access-denied`… */
  readonly reason: string;

  constructor(
    kind: FailureKind,
    dependency: string,
    reason: string,
    options: { message?: string; cause?: unknown } = {},
  ) {
    super(options.message ?? `${dependency}: ${reason} (${kind})`, { cause: options.cause });
    this.name = 'DependencyFailure';
    this.kind = kind;
    this.dependency = dependency;
    this.reason = reason;
  }
}

/**
 * The reason of a transient failure whose cause takes more than a moment to pass: an index the
 * request needs is not deployed, is still being built, or does not yet hold every item.
 */
export const INDEX_NOT_READY = 'index-not-ready';

/** Options of a call to a store: the deadline its work must meet (aborts at the deadline). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

export function isTransient(error: unknown): error is DependencyFailure {
  return error instanceof DependencyFailure && error.kind === 'transient';
}

/**
 * A promise that settles by `signal`'s deadline at the latest: when the signal aborts first, it
 * rejects with `onAbort()`. The work itself is told through the same signal (the SDK aborts
 * its request); this makes the deadline hold even where the work does not watch the signal
 * (a retry's back-off sleep).
 */
export async function byDeadline<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  onAbort: () => Error,
): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    throw onAbort();
  }
  let abandon: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    abandon = () => reject(onAbort());
    signal.addEventListener('abort', abandon, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    if (abandon) signal.removeEventListener('abort', abandon);
    // Whichever lost the race must not become an unhandled rejection.
    work.catch(() => undefined);
    aborted.catch(() => undefined);
  }
}

/**
 * The pacer that every call of a client goes through, so that a burst of calls does not send
 * requests the server would refuse (and never sends before a Retry-After it was given, which is
 * what could get the key banned).
 */
import { ApiError, type ApiErrorCode } from './errors.ts';
import type { RateLimitInfo } from './rate-limit-headers.ts';
import { wait } from './timers.ts';

export interface PacerOptions {
  /** Requests let in flight while the key's remaining count is not known. */
  readonly initialConcurrency: number;
  /**
   * RATE_LIMITED refusals this client accepts in one minute before it stops sending until the
   * next minute: a safety net below the server's ban threshold (more than 10).
   */
  readonly maxRefusalsPerMinute: number;
}

/** A request let through by the pacer; give it back with `answered` or `abandoned`. */
export interface Ticket {
  readonly answersBefore: number;
}

/** What the pacer learns from an answer. */
export interface PacedAnswer {
  readonly status: number;
  readonly info: RateLimitInfo | undefined;
  readonly code?: string | undefined;
  readonly retryAfterSeconds?: number | undefined;
}

/** What the pacer knows, for display and tests. */
export interface PacerSnapshot {
  /** Requests sent and not answered yet. */
  readonly inFlight: number;
  /**
   * Requests the client may send now without being refused: the last answer's remaining count
   * minus requests sent since (plus the one a sliding window freed since). Undefined when not
   * known.
   */
  readonly available: number | undefined;
  /** Local time (ms) until which nothing is sent: a 429's Retry-After. */
  readonly blockedUntil: number | undefined;
  /** Local time (ms) at which the key's ban ends, when an answer said it is banned. */
  readonly bannedUntil: number | undefined;
}

const DEFAULT_BAN_MS = 15 * 60_000;

type Decision =
  | { readonly go: true }
  | {
      readonly go: false;
      /** Local time at which to decide again; undefined: at the next answer. */
      readonly until: number | undefined;
      /** Whether an answer can let the call go sooner. */
      readonly answersHelp: boolean;
      readonly code: ApiErrorCode;
    };

/**
 * Seconds until the key has more quota than the answer left it: the `t` of the windows with the
 * fewest requests remaining (RateLimit: the sliding window frees requests before its fixed
 * window ends), or the binding window's reset when the answer has no RateLimit field.
 */
function moreQuotaInSeconds(info: RateLimitInfo): number | undefined {
  const windows = info.windows;
  if (windows !== undefined) {
    const fewest = Math.min(...windows.map((w) => w.remaining));
    return Math.max(...windows.filter((w) => w.remaining === fewest).map((w) => w.resetSeconds));
  }
  return info.reset === undefined ? undefined : info.reset - info.receivedAt / 1000;
}

/**
 * State shared by every call of one client: how many requests the key has left (a lower bound,
 * from the last answers), when the server's sliding window frees the next one, and how long a
 * 429 said to wait. A call asks `acquire` before it sends; it waits while the server would
 * refuse it, and fails (without sending) when its time budget ends first.
 *
 * Counting: each request sent takes one from `available`. An answer says how many requests the
 * key has left after it (`remaining`); requests still in flight, and those answered while it was
 * in flight, may have been counted after it, so they are taken off too. The result never
 * exceeds what the server really has left (other users of the key aside), and stays true as
 * time passes: a sliding window only frees requests. When none are left, the pacer waits for
 * the moment the answers said more quota comes (RateLimit `t`, or a 429's Retry-After, which
 * the server guarantees exact) and lets one request go; its answer tells the count again.
 */
export class RateLimitPacer {
  readonly #options: PacerOptions;
  #available: number | undefined;
  /** Local time at which the key has at least one more request than `#available` says. */
  #moreAt: number | undefined;
  /** The binding window `#available` belongs to: its name and X-RateLimit-Reset (seconds). */
  #windowName: string | undefined;
  #window = 0;
  #blockedUntil = 0;
  #bannedUntil = 0;
  #inFlight = 0;
  #answers = 0;
  #refusalMinute = -1;
  #refusals = 0;
  #last: RateLimitInfo | undefined;
  #wake!: Promise<void>;
  #notify!: () => void;

  constructor(options: PacerOptions) {
    this.#options = options;
    this.#renewWake();
  }

  /** The rate-limit headers of the last answer that carried any. */
  get last(): RateLimitInfo | undefined {
    return this.#last;
  }

  snapshot(now = Date.now()): PacerSnapshot {
    this.#release(now);
    return {
      inFlight: this.#inFlight,
      available: this.#available,
      blockedUntil: this.#blockedUntil > now ? this.#blockedUntil : undefined,
      bannedUntil: this.#bannedUntil > now ? this.#bannedUntil : undefined,
    };
  }

  /**
   * Waits until a request may be sent, and reserves it. When it cannot be sent by `deadline`,
   * waits until then (a loop of calls around a blocked key costs a timer, not a CPU) and throws
   * an ApiError (`sent: false`, `retryAt`: when to come back; the call's previous failure as its
   * cause); throws the signal's reason when it aborts.
   */
  async acquire(
    deadline: number,
    signal: AbortSignal | undefined,
    attempts: number,
    lastFailure?: Error,
  ) {
    for (;;) {
      signal?.throwIfAborted();
      const now = Date.now();
      const decision = this.#decide(now);
      if (decision.go) {
        if (this.#available !== undefined) this.#available--;
        this.#inFlight++;
        return { answersBefore: this.#answers } satisfies Ticket;
      }
      if (now >= deadline) {
        throw this.#notSent(decision.code, decision.until, now, attempts, lastFailure);
      }
      const end = Math.min(decision.until ?? Infinity, deadline);
      await wait(Number.isFinite(end) ? end - now : undefined, {
        signal,
        wake: decision.answersHelp ? this.#wake : undefined,
      });
    }
  }

  /**
   * Records an answer: its status, rate-limit headers, `Retry-After` and, for an error, its code.
   */
  answered(ticket: Ticket, answer: PacedAnswer): void {
    const { status, info, code, retryAfterSeconds } = answer;
    this.#inFlight--;
    const during = this.#answers - ticket.answersBefore;
    this.#answers++;
    if (info !== undefined) {
      this.#last = info;
      this.#count(info, during);
    }
    const now = info?.receivedAt ?? Date.now();
    if (code === 'API_KEY_TEMPORARILY_BANNED') {
      const banMs = retryAfterSeconds === undefined ? DEFAULT_BAN_MS : retryAfterSeconds * 1000;
      this.#bannedUntil = Math.max(this.#bannedUntil, now + banMs);
    } else if (status === 429) {
      // Nothing is sent until Retry-After; then exactly one request is admitted (the server's
      // Retry-After is exact), and its answer tells the count again.
      const until = now + (retryAfterSeconds ?? 1) * 1000;
      this.#blockedUntil = Math.max(this.#blockedUntil, until);
      this.#available = 0;
      this.#moreAt = this.#blockedUntil;
      const minute = Math.floor(now / 60_000);
      if (minute !== this.#refusalMinute) {
        this.#refusalMinute = minute;
        this.#refusals = 0;
      }
      this.#refusals++;
    }
    this.#signal();
  }

  /** Gives back a ticket whose request got no answer (network failure, abort). */
  abandoned(_ticket: Ticket): void {
    this.#inFlight--;
    // It may still have been counted: answers to requests in flight with it take it off.
    this.#answers++;
    this.#signal();
  }

  #count(info: RateLimitInfo, during: number): void {
    if (info.remaining === undefined) return;
    // An answer about an earlier fixed window of the same binding window came in late: its
    // count is stale. (The binding window can switch between minute and day: a smaller reset
    // of another window is not stale.)
    const name = info.windows?.[0]?.name;
    const window = info.reset ?? 0;
    if (name === this.#windowName && window < this.#window) return;
    this.#windowName = name;
    this.#window = window;
    this.#available = Math.max(0, info.remaining - this.#inFlight - during);
    const more = moreQuotaInSeconds(info);
    this.#moreAt = more === undefined ? undefined : info.receivedAt + Math.max(0, more) * 1000;
  }

  /**
   * When the key has no request left and the time for more has come, one is free again; when
   * no answer said when more comes and none is due, the count is not known any more.
   */
  #release(now: number): void {
    if (this.#available !== 0) return;
    if (this.#moreAt !== undefined && now >= this.#moreAt) {
      this.#available = 1;
      this.#moreAt = undefined;
    } else if (this.#moreAt === undefined && this.#inFlight === 0) {
      this.#available = undefined;
    }
  }

  #decide(now: number): Decision {
    if (this.#bannedUntil > now) {
      return {
        go: false,
        until: this.#bannedUntil,
        answersHelp: false,
        code: 'API_KEY_TEMPORARILY_BANNED',
      };
    }
    if (this.#blockedUntil > now) {
      return { go: false, until: this.#blockedUntil, answersHelp: false, code: 'RATE_LIMITED' };
    }
    if (
      this.#refusals >= this.#options.maxRefusalsPerMinute &&
      Math.floor(now / 60_000) === this.#refusalMinute
    ) {
      const nextMinute = (this.#refusalMinute + 1) * 60_000;
      return { go: false, until: nextMinute, answersHelp: false, code: 'RATE_LIMITED' };
    }
    this.#release(now);
    if (this.#available !== undefined) {
      if (this.#available > 0) return { go: true };
      // None left: wait for the sliding window to free one; answers still due may tell sooner.
      return {
        go: false,
        until: this.#moreAt,
        answersHelp: this.#inFlight > 0,
        code: 'RATE_LIMITED',
      };
    }
    if (this.#inFlight < this.#options.initialConcurrency) return { go: true };
    return { go: false, until: undefined, answersHelp: true, code: 'RATE_LIMITED' };
  }

  #notSent(
    code: ApiErrorCode,
    until: number | undefined,
    now: number,
    attempts: number,
    cause: Error | undefined,
  ) {
    const seconds = until === undefined ? undefined : Math.max(1, Math.ceil((until - now) / 1000));
    const reason =
      code === 'API_KEY_TEMPORARILY_BANNED'
        ? 'the API key is temporarily banned'
        : until === undefined
          ? "the answers of requests in flight, which tell the key's remaining count, did not come"
          : "the key's rate limit would refuse it";
    const when = until === undefined ? '' : ` (retry at ${new Date(until).toISOString()})`;
    return new ApiError({
      code,
      status: 429,
      message: `Not sent: ${reason} within the call's time budget${when}.`,
      retryAfterSeconds: seconds,
      retryAt: until,
      rateLimit: this.#last,
      sent: false,
      attempts,
      cause,
    });
  }

  #renewWake(): void {
    this.#wake = new Promise<void>((resolve) => {
      this.#notify = resolve;
    });
  }

  #signal(): void {
    const notify = this.#notify;
    this.#renewWake();
    notify();
  }
}

/**
 * What the rate limiter writes for one request, decided on a key's counter state it is given:
 * the decision (./sliding-window.ts, the ban of ./ban.ts), and the one conditional write that
 * makes it true — the state it was decided on (its conditions) and what it changes. Pure: the
 * store (lib/dynamodb/rate-limit-table.ts) reads a key's state, writes what this says, and when
 * the write's conditions no longer hold, gives the state it found back here for a new plan.
 *
 * Any number of writers may plan on the same stale state: the conditions pin what each decision
 * relied on (window starts and the previous windows' counts, which are immutable once closed; a
 * bound on the current count; the moment the last refusal named and the refusals counted), so
 * at most one of two conflicting writes holds, and no interleaving admits more than the limit or
 * bans twice.
 */
import { refusalStep, refusalsIn, type BanSettings, type RefusalStep } from './ban.ts';
import type { Limits } from './plans.ts';
import {
  DAY_MS,
  decide,
  MINUTE_MS,
  previousShare,
  rollWindow,
  windowStart,
  type CounterState,
  type Decision,
  type WindowCount,
} from './sliding-window.ts';

/** How long a key's stored counters are kept: two days after its day window starts, and never less than its ban. */
export function keepUntil(dayStart: number, bannedUntil?: number): number {
  return Math.max(dayStart + 2 * DAY_MS, bannedUntil ?? 0);
}

/** How long the counters of a key with nothing stored are kept, if its first write creates them. */
export function keepNewUntil(now: number): number {
  return keepUntil(windowStart(now, DAY_MS));
}

/** One window's part of an admission. */
export type WindowWrite =
  /**
   * The stored window is still the one the decision saw: its start and previous count as they
   * were, and its current count below `below` (the limit less the previous window's weighted
   * share); the current count goes up by one.
   */
  | {
      readonly kind: 'same';
      readonly start: number;
      readonly previous: number;
      readonly below: number;
    }
  /**
   * A new window: the stored one is exactly as seen (start and current count, or absent), and its
   * count becomes the new window's previous; the current count starts at 1.
   */
  | {
      readonly kind: 'roll';
      readonly seenStart: number | undefined;
      readonly seenCurrent: number | undefined;
      readonly start: number;
      readonly previous: number;
    };

/** The write of an admitted request: both windows, the key not banned at `at`. */
export interface AdmitWrite {
  readonly kind: 'admit';
  readonly at: number;
  readonly minute: WindowWrite;
  readonly day: WindowWrite;
  readonly keepUntil: number;
}

/**
 * The write of a refused request (429 RATE_LIMITED), the key not banned at `at`. Its step (ban.ts)
 * was decided on whether the request came before the previous refusal's `retryAt` (`now`) and
 * on `seen` refusals counted in the window starting at `step.start`: the write pins both.
 */
export interface RefuseWrite {
  readonly kind: 'refuse';
  readonly at: number;
  readonly now: number;
  readonly step: RefusalStep;
  readonly seen: number;
  /** The refusal window as stored, when the step starts a new one. */
  readonly seenRefusalStart: number | undefined;
  readonly maxRefusalsPerMinute: number;
  /** A ban keeps the counters at least as long as it lasts. */
  readonly keepUntil?: number;
}

export type CounterWrite = AdmitWrite | RefuseWrite;

/** What the limiter does for a request: answer at once (a banned key), or write, then answer. */
export type RequestPlan =
  | { readonly write?: undefined; readonly decision: Decision }
  | {
      readonly write: CounterWrite;
      /** The decision, once the write held, from the state it stored. */
      readonly answer: (stored: CounterState) => Decision;
    };

function windowWrite(
  known: WindowCount | undefined,
  at: number,
  windowMs: number,
  limit: number,
): WindowWrite {
  const rolled = rollWindow(known, at, windowMs);
  if (known && known.start === rolled.start) {
    return {
      kind: 'same',
      start: known.start,
      previous: known.previous,
      below: limit - previousShare(rolled, at, windowMs),
    };
  }
  return {
    kind: 'roll',
    seenStart: known?.start,
    seenCurrent: known?.current,
    start: rolled.start,
    previous: rolled.previous,
  };
}

/** Both windows of a state as they stand at `at`. */
function windowsAt(state: CounterState, at: number) {
  return {
    minute: rollWindow(state.minute, at, MINUTE_MS),
    day: rollWindow(state.day, at, DAY_MS),
  };
}

/** The plan for a request of a key at `now`, decided on `state`. */
export function planRequest(
  state: CounterState,
  now: number,
  limits: Limits,
  settings: BanSettings,
): RequestPlan {
  // Decided (and written) at the request's counter time: never behind the stored windows.
  const decision = decide(state, now, limits);
  if (decision.outcome === 'banned') return { decision };
  const { at } = decision;
  if (decision.outcome === 'admitted') {
    const day = rollWindow(state.day, at, DAY_MS);
    return {
      write: {
        kind: 'admit',
        at,
        minute: windowWrite(state.minute, at, MINUTE_MS, limits.perMinute),
        day: windowWrite(state.day, at, DAY_MS, limits.perDay),
        keepUntil: keepUntil(day.start, state.bannedUntil),
      },
      answer: (stored) => ({ ...decision, ...windowsAt(stored, at) }),
    };
  }
  const step = refusalStep(state, now, at, decision.retryAfterMs, settings);
  return {
    write: {
      kind: 'refuse',
      at,
      now,
      step,
      seen: refusalsIn(state, at),
      seenRefusalStart: state.refusals?.start,
      maxRefusalsPerMinute: settings.maxRefusalsPerMinute,
      ...(step.kind === 'ban'
        ? { keepUntil: keepUntil(rollWindow(state.day, at, DAY_MS).start, step.bannedUntil) }
        : {}),
    },
    answer: (stored) => {
      const windows = windowsAt(stored, at);
      // The refusal that starts a ban is answered as banned: the ban holds from this request on.
      if (step.kind === 'ban') {
        return { outcome: 'banned', at, ...windows, retryAfterMs: step.bannedUntil - now };
      }
      // Counts that moved meanwhile (another container rolled a window) can only lengthen the wait.
      const after = decide(stored, now, limits);
      const wait = after.outcome === 'admitted' ? 0 : after.retryAfterMs;
      return { ...decision, ...windows, retryAfterMs: Math.max(decision.retryAfterMs, wait) };
    },
  };
}

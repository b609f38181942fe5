/**
 * What a conditional request (If-None-Match) costs a key. A request answered 304 Not Modified
 * does not use the plan's quota (as on GitHub: "a conditional request does not count against
 * your primary rate limit if a 304 response is returned"), but 304s are not unlimited either:
 * each key has an allowance of free conditional requests per fixed minute window (aligned to
 * the minute) as large as its plan's per-minute limit. A conditional request takes one from
 * the allowance; when the answer is 304, that is all it costs. A conditional request beyond
 * the allowance, or one whose answer is the whole list, counts against the plan like any
 * other request (and may then be refused with 429, which counts towards a ban as usual). A
 * banned key gets its 429 whatever it asks.
 *
 * So one key can have at most its plan's per-minute limit answered 304 for free, plus its plan,
 * in a minute: a flood of conditional requests is bounded per key like any other flood, and
 * a client that polls at its plan's rate gets every unchanged poll for free.
 */
import type { CallOptions } from '../failures.ts';
import type { CountedKey } from '../keys/key-record.ts';
import { keepNewUntil } from './counter-plan.ts';
import type { Limits } from './plans.ts';
import {
  DAY_MS,
  decide,
  MINUTE_MS,
  rollWindow,
  windowStart,
  type CounterState,
  type Decision,
} from './sliding-window.ts';

export interface FreeAllowanceResult {
  /**
   * `free`: taken from the allowance (a 304 costs nothing more); `exhausted`: the allowance of
   * this minute is used up (count the request as any other); `banned`: the key is banned.
   */
  readonly outcome: 'free' | 'exhausted' | 'banned';
  /** The key's standing, with nothing counted: what the rate-limit headers of a 304 show. */
  readonly standing: Decision;
}

/** Takes one free conditional request from a key's allowance, atomically. */
export interface FreeAllowance {
  takeFree(caller: CountedKey, now: number, options?: CallOptions): Promise<FreeAllowanceResult>;
}

/**
 * A key's standing at `now` with no request counted: banned, limited (with the wait), or
 * admitted with the counts as they are (decide() adds the request it admits; this does not).
 */
export function standing(state: CounterState, now: number, limits: Limits): Decision {
  const decision = decide(state, now, limits);
  if (decision.outcome !== 'admitted') return decision;
  return {
    ...decision,
    minute: rollWindow(state.minute, decision.at, MINUTE_MS),
    day: rollWindow(state.day, decision.at, DAY_MS),
  };
}

/** The allowance's window as stored: the start of its minute, and what was taken in it. */
export interface AllowanceWindow {
  readonly start: number;
  readonly count: number;
}

/**
 * The write that takes one free request, the key not banned at `now`: in the allowance's minute
 * as last seen (its count below the allowance), or starting a new minute from the window as seen
 * (or none). The counters' expiry is set only on an item that has none (one this creates).
 */
export interface FreeTakeWrite {
  readonly kind: 'free';
  readonly now: number;
  readonly start: number;
  readonly seen:
    | { readonly kind: 'same'; readonly below: number }
    | { readonly kind: 'new'; readonly seenStart: number | undefined };
  readonly keepNewUntil: number;
}

/**
 * What taking one free request does: answer at once (a key banned in the state it was planned
 * on: no write), or write, then read what the write held or found (freeTakeResult).
 */
export type FreeTakePlan =
  | { readonly write?: undefined; readonly result: FreeAllowanceResult }
  | { readonly write: FreeTakeWrite };

/**
 * The plan to take one free request at `now`, decided on the key's state and the allowance's
 * window as known.
 */
export function planFreeTake(
  state: CounterState,
  known: AllowanceWindow | undefined,
  now: number,
  limits: Limits,
): FreeTakePlan {
  const current = standing(state, now, limits);
  if (current.outcome === 'banned') return { result: { outcome: 'banned', standing: current } };
  const start = windowStart(now, MINUTE_MS);
  return {
    write: {
      kind: 'free',
      now,
      start,
      seen:
        known?.start === start
          ? { kind: 'same', below: limits.perMinute }
          : { kind: 'new', seenStart: known?.start },
      keepNewUntil: keepNewUntil(now),
    },
  };
}

/**
 * What a take of the allowance means, from whether its write held and the key's state and
 * allowance it stored or found: undefined when the write failed on a window it had not seen
 * (then plan again from the stored one).
 */
export function freeTakeResult(
  written: boolean,
  state: CounterState,
  allowance: AllowanceWindow | undefined,
  now: number,
  limits: Limits,
): FreeAllowanceResult | undefined {
  const result = standing(state, now, limits);
  if (written) return { outcome: 'free', standing: result };
  if (result.outcome === 'banned') return { outcome: 'banned', standing: result };
  const start = windowStart(now, MINUTE_MS);
  if (allowance?.start === start && allowance.count >= limits.perMinute) {
    return { outcome: 'exhausted', standing: result };
  }
  return undefined;
}

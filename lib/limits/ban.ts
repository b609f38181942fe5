/**
 * The temporary ban of CONTRACT 4.3, as a pure function of a key's counter state and a refusal:
 * which refusals count towards a ban, and which one starts it.
 *
 * A refusal (429 RATE_LIMITED) counts only when its request arrived before the moment the key's
 * previous refusal told its client to wait for (`retryAt`: that refusal's time plus its
 * Retry-After in whole seconds). A client that waits as told after every 429 never has a refusal
 * counted, however long it runs. Counted refusals are counted per minute window (aligned to the
 * minute); the one that finds `maxRefusalsPerMinute` already counted in its window starts the
 * ban, is itself answered as banned, and restarts the count (a ban shorter than the window does
 * not re-trigger on the next refusal after it).
 */
import { MINUTE_MS, retryAfterSeconds, windowStart, type CounterState } from './sliding-window.ts';

export interface BanSettings {
  /** A key whose counted refusals in one minute window go over this number is banned. */
  readonly maxRefusalsPerMinute: number;
  readonly banMs: number;
}

/** What one refusal does to the key's state. */
export type RefusalStep =
  /** The request waited as told (or it is the key's first refusal): not counted. */
  | { readonly kind: 'waited'; readonly retryAt: number }
  /** Sent too early: counted, `count` refusals now in the window starting at `start`. */
  | {
      readonly kind: 'counted';
      readonly start: number;
      readonly count: number;
      readonly retryAt: number;
    }
  /** Sent too early, over the threshold: the key is banned until `bannedUntil`. */
  | { readonly kind: 'ban'; readonly start: number; readonly bannedUntil: number };

/** The moment a refusal at `now` tells its client to come back at (Retry-After, rounded up). */
export function toldRetryAt(now: number, retryAfterMs: number): number {
  return now + retryAfterSeconds(retryAfterMs) * 1000;
}

/** Whether a request at `now` came before the moment the key's previous refusal named. */
export function isEarly(state: CounterState, now: number): boolean {
  return state.retryAt !== undefined && now < state.retryAt;
}

/** Counted refusals in the minute window of `at` so far. */
export function refusalsIn(state: CounterState, at: number): number {
  const start = windowStart(at, MINUTE_MS);
  return state.refusals?.start === start ? state.refusals.count : 0;
}

/**
 * The step a refusal of a request that arrived at `now` (counted at `at`, see counterTime),
 * told to wait `retryAfterMs`, takes from `state`.
 */
export function refusalStep(
  state: CounterState,
  now: number,
  at: number,
  retryAfterMs: number,
  settings: BanSettings,
): RefusalStep {
  const retryAt = toldRetryAt(now, retryAfterMs);
  if (!isEarly(state, now)) return { kind: 'waited', retryAt };
  const start = windowStart(at, MINUTE_MS);
  const count = refusalsIn(state, at);
  if (count >= settings.maxRefusalsPerMinute) {
    return { kind: 'ban', start, bannedUntil: at + settings.banMs };
  }
  return { kind: 'counted', start, count: count + 1, retryAt };
}

/**
 * The per-key limits the service can honour. Each key's counts live in one DynamoDB item, and one
 * item takes at most 1,000 writes a second (WCU/s; the items are under 1 KB): a limit the item
 * cannot sustain would turn the key's excess traffic into throttled writes and 503s, not 429s.
 * A stage's API Gateway throttle (requests a second, for all keys together) caps a key too.
 */
import type { Limits } from './plans.ts';

/** DynamoDB's ceiling for one item: 1,000 WCU a second. */
export const ITEM_WRITES_PER_SECOND = 1_000;

/**
 * Writes to a key's counter item per request its per-minute limit admits, at most: the count
 * itself; a conditional request past its free allowance first tries the allowance (a failed
 * conditional write costs its WCU too), then counts; and the free allowance (as large as the
 * per-minute limit) lets as many 304s through, one write each (lib/limits/free-allowance.ts).
 */
export const COUNTER_WRITES_PER_ADMITTED = 3;

/** The share of the item's capacity a key's limit may plan for: the rest absorbs refusals. */
export const ITEM_MARGIN = 0.8;

const MINUTES_PER_DAY = 1_440;

/** The highest per-minute limit one counter item sustains: 16,000. */
export const ITEM_PER_MINUTE_CEILING = Math.floor(
  (ITEM_WRITES_PER_SECOND * 60 * ITEM_MARGIN) / COUNTER_WRITES_PER_ADMITTED,
);

export interface Ceiling {
  readonly perMinute: number;
  readonly perDay: number;
  /** Why: what binds first. */
  readonly because: string;
}

/** The highest limits a key can have, with the stage throttle (requests a second) if known. */
export function perKeyCeiling(stage?: { name: string; throttleRps: number }): Ceiling {
  const item: Ceiling = {
    perMinute: ITEM_PER_MINUTE_CEILING,
    perDay: ITEM_PER_MINUTE_CEILING * MINUTES_PER_DAY,
    because: `one key's counter item takes ${ITEM_WRITES_PER_SECOND} writes/s (DynamoDB's per-item limit), a request costs it up to ${COUNTER_WRITES_PER_ADMITTED} writes, ${Math.round(ITEM_MARGIN * 100)}% of it planned`,
  };
  if (!stage || stage.throttleRps * 60 >= item.perMinute) return item;
  return {
    perMinute: stage.throttleRps * 60,
    perDay: stage.throttleRps * 60 * MINUTES_PER_DAY,
    because: `the ${stage.name} stage's API Gateway throttle is ${stage.throttleRps} requests/s for all keys together`,
  };
}

/** Why limits cannot be honoured (one line, with the ceiling), or undefined when they can. */
export function unhonourable(limits: Limits, ceiling: Ceiling): string | undefined {
  if (limits.perMinute > ceiling.perMinute) {
    return `a per-minute limit of ${limits.perMinute} cannot be honoured: the ceiling is ${ceiling.perMinute}/min (${ceiling.because})`;
  }
  if (limits.perDay > ceiling.perDay) {
    return `a per-day limit of ${limits.perDay} cannot be honoured: the ceiling is ${ceiling.perDay}/day (${ceiling.perMinute}/min all day; ${ceiling.because})`;
  }
  return undefined;
}

/**
 * The free allowance of conditional requests (lib/limits/conditional.ts) on the rate limits
 * table: its window (`cw`, `cc`) lives in the key's item beside the counts, so that one write
 * takes from it and reads the key's standing.
 */
import { DependencyFailure, type CallOptions } from '../failures.ts';
import type { Caller } from '../keys/key-record.ts';
import { standing, type FreeAllowanceResult } from '../limits/conditional.ts';
import { DAY_MS, MINUTE_MS, windowStart, type CounterState } from '../limits/sliding-window.ts';
import {
  allowanceOf,
  DEPENDENCY,
  itemToState,
  notBanned,
  TTL,
  type AllowanceWindow,
  type ItemWrite,
  type RateLimitUpdate,
} from './rate-limit-item.ts';
import { UpdateBuilder } from './update-builder.ts';

/** Writes per free conditional request before the store counts as failing (stale cache, rollover). */
const FREE_ATTEMPTS = 4;

export class DynamoDbFreeAllowance {
  /** The limiter's write of a key's item (one attempt). */
  private readonly write: ItemWrite;
  /** Told of every state of a key read, for the limiter's cache. */
  private readonly remember: (keyId: string, state: CounterState, now: number) => void;
  /** The allowance's window last seen per key. */
  private readonly allowances = new Map<string, AllowanceWindow>();

  constructor(
    write: ItemWrite,
    remember: (keyId: string, state: CounterState, now: number) => void,
  ) {
    this.write = write;
    this.remember = remember;
  }

  /**
   * Takes one free conditional request from the key's allowance (its plan's per-minute limit,
   * per fixed minute window), in one conditional write that also requires the key not to be
   * banned: nothing is taken from a banned key, nor once the allowance is used up. Reads and
   * returns the key's standing (ALL_NEW, or ALL_OLD when the condition failed), with nothing
   * counted against the plan. A store failure is thrown (a DependencyFailure).
   */
  async takeFree(
    caller: Caller,
    now: number,
    options: CallOptions = {},
  ): Promise<FreeAllowanceResult> {
    const start = windowStart(now, MINUTE_MS);
    let known = this.allowances.get(caller.keyId);
    for (let attempt = 0; attempt < FREE_ATTEMPTS; attempt++) {
      const b: RateLimitUpdate = new UpdateBuilder();
      const [cw, cc] = [b.name('cw'), b.name('cc')];
      notBanned(b, now);
      if (known?.start === start) {
        b.condition(`${cw} = ${b.value(start)}`);
        b.condition(`${cc} < ${b.value(caller.limits.perMinute)}`);
        b.set(`${cc} = ${cc} + ${b.value(1)}`);
      } else {
        b.equalsOrAbsent('cw', known?.start);
        b.set(`${cw} = ${b.value(start)}`);
        b.set(`${cc} = ${b.value(1)}`);
      }
      // An item this creates expires like the limiter's; an existing expiry is left alone.
      const ttl = b.name(TTL);
      const expires = Math.ceil((windowStart(now, DAY_MS) + 2 * DAY_MS) / 1000);
      b.set(`${ttl} = if_not_exists(${ttl}, ${b.value(expires)})`);
      const { written, item } = await this.write(b, caller.keyId, options.signal);
      const state = itemToState(item);
      this.remember(caller.keyId, state, now);
      const result = standing(state, now, caller.limits);
      known = allowanceOf(item);
      if (known) this.allowances.set(caller.keyId, known);
      if (written) return { outcome: 'free', standing: result };
      if (result.outcome === 'banned') return { outcome: 'banned', standing: result };
      if (known?.start === start && known.count >= caller.limits.perMinute) {
        return { outcome: 'exhausted', standing: result };
      }
      // A stale window: try again with the stored one.
    }
    throw new DependencyFailure('transient', DEPENDENCY, 'contention', {
      message: `${DEPENDENCY}: no consistent write of the free allowance after ${FREE_ATTEMPTS} attempts (transient)`,
    });
  }
}

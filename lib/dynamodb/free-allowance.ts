/**
 * The free allowance of conditional requests (lib/limits/free-allowance.ts) on the rate limits
 * table: its window (`cw`, `cc`) lives in the key's item beside the counts, so that one write
 * takes from it and reads the key's standing. What to write is planned on the key's state and the
 * allowance's window as last seen (./rate-limit-items.ts): a ban seen there is answered without a
 * write, like the count's; a write that failed on a window it had not seen is planned again on
 * the stored one.
 */
import { DependencyFailure, type CallOptions } from '../failures.ts';
import type { CountedKey } from '../keys/key-record.ts';
import {
  freeTakeResult,
  planFreeTake,
  type FreeAllowance,
  type FreeAllowanceResult,
} from '../limits/free-allowance.ts';
import { DEPENDENCY } from './rate-limit-item.ts';
import type { RateLimitItems } from './rate-limit-items.ts';

/** Writes per free conditional request before the store counts as failing (stale cache, rollover). */
const FREE_ATTEMPTS = 4;

export class DynamoDbFreeAllowance implements FreeAllowance {
  private readonly items: RateLimitItems;

  constructor(items: RateLimitItems) {
    this.items = items;
  }

  /**
   * Takes one free conditional request from the key's allowance (its plan's per-minute limit,
   * per fixed minute window), in one conditional write that also requires the key not to be
   * banned: nothing is taken from a banned key, nor once the allowance is used up. A ban the
   * container has cached is answered from the cache, without a write. Reads and
   * returns the key's standing (ALL_NEW, or ALL_OLD when the condition failed), with nothing
   * counted against the plan. A store failure is thrown (a DependencyFailure).
   */
  async takeFree(
    caller: CountedKey,
    now: number,
    options: CallOptions = {},
  ): Promise<FreeAllowanceResult> {
    const { keyId, limits } = caller;
    // A banned key's take is answered from its cached ban, no write (but a read every BAN_RECHECK_MS).
    let state = await this.items.stateToPlanOn(keyId, now, limits, options.signal);
    let allowance = this.items.knownAllowance(keyId);
    for (let attempt = 0; attempt < FREE_ATTEMPTS; attempt++) {
      const plan = planFreeTake(state, allowance, now, limits);
      if (!plan.write) return plan.result;
      const found = await this.items.write(plan.write, keyId, now, options.signal);
      const result = freeTakeResult(found.written, found.state, found.allowance, now, limits);
      if (result) return result;
      ({ state, allowance } = found);
    }
    throw new DependencyFailure('transient', DEPENDENCY, 'contention', {
      message: `${DEPENDENCY}: no consistent write of the free allowance after ${FREE_ATTEMPTS} attempts (transient)`,
    });
  }
}

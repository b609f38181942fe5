/**
 * The free allowance of conditional requests (lib/limits/free-allowance.ts) on the rate limits
 * table: its window (`cw`, `cc`) lives in the key's item beside the counts, so that one write
 * takes from it and reads the key's standing. What to write is planned on the allowance's window
 * as last seen; a write that failed on a window it had not seen is planned again on the stored one.
 */
import { DependencyFailure, type CallOptions } from '../failures.ts';
import type { Caller } from '../keys/key-record.ts';
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
   * banned: nothing is taken from a banned key, nor once the allowance is used up. Reads and
   * returns the key's standing (ALL_NEW, or ALL_OLD when the condition failed), with nothing
   * counted against the plan. A store failure is thrown (a DependencyFailure).
   */
  async takeFree(
    caller: Caller,
    now: number,
    options: CallOptions = {},
  ): Promise<FreeAllowanceResult> {
    let known = this.items.knownAllowance(caller.keyId);
    for (let attempt = 0; attempt < FREE_ATTEMPTS; attempt++) {
      const write = planFreeTake(known, now, caller.limits);
      const found = await this.items.write(write, caller.keyId, now, options.signal);
      const result = freeTakeResult(
        found.written,
        found.state,
        found.allowance,
        now,
        caller.limits,
      );
      if (result) return result;
      known = found.allowance;
    }
    throw new DependencyFailure('transient', DEPENDENCY, 'contention', {
      message: `${DEPENDENCY}: no consistent write of the free allowance after ${FREE_ATTEMPTS} attempts (transient)`,
    });
  }
}

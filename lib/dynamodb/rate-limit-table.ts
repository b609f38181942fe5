/**
 * The rate limiter on DynamoDB: one item per key holding both windows, the refusal count, the
 * ban and the free allowance (./rate-limit-item.ts). This module reads and writes that state; what
 * to write for a request is decided on it by lib/limits/counter-plan.ts (and, for a free
 * conditional request, lib/limits/free-allowance.ts), and ./rate-limit-item.ts writes it as one
 * conditional UpdateItem whose conditions pin the state it was decided on.
 *
 * The last state seen per key is cached in the container: in the steady state a request costs
 * one round trip, and a banned key's none (./rate-limit-items.ts: its ban is read again every
 * BAN_RECHECK_MS). A stale cache only costs a failed condition, whose ALL_OLD item is the fresh
 * state for the next plan.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DependencyFailure, isTransient, type CallOptions } from '../failures.ts';
import type { CountedKey } from '../keys/key-record.ts';
import { planRequest } from '../limits/counter-plan.ts';
import type { FreeAllowance, FreeAllowanceResult } from '../limits/free-allowance.ts';
import {
  DEFAULT_LIMITER_SETTINGS,
  type LimiterSettings,
  type LimitResult,
  type RateLimiter,
} from '../limits/limiter.ts';
import { decide, type Decision } from '../limits/sliding-window.ts';
import { DynamoDbFreeAllowance } from './free-allowance.ts';
import { DEPENDENCY } from './rate-limit-item.ts';
import { RateLimitItems } from './rate-limit-items.ts';

/**
 * Writes per request before the store counts as failing. Each kind of conflict can hit a request
 * at most once, because the state only moves forward: a stale cache, a lost window-rollover
 * race, the limit reached meanwhile, a refusal meanwhile that makes this one early, a lost
 * refusal-window race, a ban set meanwhile (then final). Six conflicts and the final write:
 * seven; one more for margin.
 */
const MAX_ATTEMPTS = 8;
/**
 * The rate limiter on DynamoDB (see above): `consume` counts a request against its key's plan;
 * `takeFree` takes a conditional request from the key's free allowance without counting it.
 *
 * @example
 * ```typescript
 * import { createSingleAttemptClient } from './client.ts';
 * import { DynamoDbRateLimiter } from './rate-limit-table.ts';
 * import { PLAN_LIMITS } from '../limits/plans.ts';
 *
 * // One attempt a call: the SDK's retry after a timeout could count a request twice.
 * const client = createSingleAttemptClient();
 * const limiter = new DynamoDbRateLimiter(client, 'store-orders-dev-rate-limits');
 * const caller = { keyId: 'key_3f2a', plan: 'free', limits: PLAN_LIMITS.free } as const;
 * const signal = AbortSignal.timeout(2_000);
 * const { decision } = await limiter.consume(caller, Date.now(), { signal });
 * if (decision.outcome !== 'admitted') console.log(`refused: ${decision.outcome}`);
 * ```
 */
export class DynamoDbRateLimiter implements RateLimiter, FreeAllowance {
  private readonly items: RateLimitItems;
  private readonly settings: LimiterSettings;
  private readonly free: DynamoDbFreeAllowance;
  private readonly onStoreFailure: (error: unknown) => void;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { settings?: LimiterSettings; onStoreFailure?: (error: unknown) => void } = {},
  ) {
    this.items = new RateLimitItems(client, tableName);
    this.settings = options.settings ?? DEFAULT_LIMITER_SETTINGS;
    this.onStoreFailure = options.onStoreFailure ?? (() => undefined);
    this.free = new DynamoDbFreeAllowance(this.items);
  }

  /**
   * Counts the request, by `signal`'s deadline. A transient store failure is answered from the
   * last known state and the failure mode; a permanent one (missing table, access denied,
   * malformed item) is thrown: no failure mode hides a misconfiguration.
   */
  async consume(caller: CountedKey, now: number, options: CallOptions = {}): Promise<LimitResult> {
    try {
      return { decision: await this.count(caller, now, options.signal), degraded: false };
    } catch (error) {
      if (!isTransient(error)) throw error;
      this.onStoreFailure(error);
      // Counts only grow within a window, so a refusal read from the last known state holds.
      const decision = decide(this.items.known(caller.keyId), now, caller.limits);
      if (decision.outcome !== 'admitted') return { decision, degraded: true };
      // Admitted without being counted: the counts are not known.
      return {
        decision,
        degraded: true,
        ...(this.settings.failureMode === 'closed' ? { unavailable: error } : {}),
      };
    }
  }

  /** The free allowance of conditional requests: ./free-allowance.ts. */
  takeFree(
    caller: CountedKey,
    now: number,
    options: CallOptions = {},
  ): Promise<FreeAllowanceResult> {
    return this.free.takeFree(caller, now, options);
  }

  /** Plans on the key's known state, writes, and plans again on what a failed write found. */
  private async count(
    caller: CountedKey,
    now: number,
    signal: AbortSignal | undefined,
  ): Promise<Decision> {
    const { keyId } = caller;
    // A banned key's plan is its decision alone, no write (but a read every BAN_RECHECK_MS).
    let state = await this.items.stateToPlanOn(keyId, now, caller.limits, signal);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const plan = planRequest(state, now, caller.limits, this.settings);
      if (!plan.write) return plan.decision;
      const result = await this.items.write(plan.write, keyId, now, signal);
      if (result.written) return plan.answer(result.state);
      state = result.state;
    }
    throw new DependencyFailure('transient', DEPENDENCY, 'contention', {
      message: `${DEPENDENCY}: no consistent write after ${MAX_ATTEMPTS} attempts (transient)`,
    });
  }
}

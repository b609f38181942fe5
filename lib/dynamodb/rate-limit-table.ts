/**
 * The rate limiter on DynamoDB: one item per key holding both windows, the refusal count and the
 * ban. Admission and increment are ONE conditional UpdateItem: the condition pins the state the
 * decision was made on (window starts and the previous windows' counts, which are immutable once
 * closed) and folds the previous window's weighted share into a bound on the current count, so
 * any number of concurrent writers admit exactly up to the limit.
 *
 * The last state seen per key is cached in the container: in the steady state a request costs
 * one round trip. A stale cache only costs a failed condition, whose ALL_OLD item is the fresh
 * state for the retry.
 *
 * The item's attributes: ./rate-limit-item.ts; the free allowance of conditional requests, in
 * the same item: ./free-allowance.ts.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { DependencyFailure, isTransient, type CallOptions } from '../failures.ts';
import type { Caller } from '../keys/key-record.ts';
import { refusalsIn, refusalStep, type RefusalStep } from '../limits/ban.ts';
import type { FreeAllowance, FreeAllowanceResult } from '../limits/conditional.ts';
import {
  DEFAULT_LIMITER_SETTINGS,
  type LimiterSettings,
  type LimitResult,
  type RateLimiter,
} from '../limits/limiter.ts';
import {
  DAY_MS,
  decide,
  MINUTE_MS,
  previousShare,
  rollWindow,
  type CounterState,
  type Decision,
  type WindowCount,
  windowStart,
} from '../limits/sliding-window.ts';
import { wasNotDelivered } from './delivery.ts';
import { dynamoDbFailure, isConditionFailure, send } from './errors.ts';
import { DynamoDbFreeAllowance } from './free-allowance.ts';
import {
  counterKey,
  DEPENDENCY,
  expiry,
  itemOfConditionFailure,
  itemToState,
  notBanned,
  TTL,
  type ItemWrite,
  type RateLimitUpdate,
} from './rate-limit-item.ts';
import { UpdateBuilder } from './update-builder.ts';

/**
 * Writes per request before the store counts as failing. Each kind of conflict can hit a request
 * at most once, because the state only moves forward: a stale cache, a lost window-rollover
 * race, the limit reached meanwhile, a refusal meanwhile that makes this one early, a lost
 * refusal-window race, a ban set meanwhile (then final). Six conflicts and the final write:
 * seven; one more for margin.
 */
const MAX_ATTEMPTS = 8;
/**
 * How long a container answers a key's ban from its cache alone: after this, the next request
 * of the banned key looks at the stored item again, so a ban lifted by an operator
 * (`keys unban`) takes effect within it.
 */
export const BAN_RECHECK_MS = 1_000;

/** Keys whose state a container remembers. */
const CACHE_SIZE = 10_000;

/**
 * Attempts of a write that provably did not happen: DynamoDB throttled it, or it never reached
 * DynamoDB (a refused connection, a keep-alive socket reset before the write went out).
 */
const THROTTLING_ATTEMPTS = 3;

/**
 * Admission write for one window: in the same window, pin the previous count and bound the
 * current; in a new window, pin the old count exactly (it becomes `previous`) and start at 1.
 */
function admitWindow(
  b: RateLimitUpdate,
  prefix: 'm' | 'd',
  known: WindowCount | undefined,
  now: number,
  windowMs: number,
  limit: number,
): void {
  const [w, c, p] = [b.name(`${prefix}w`), b.name(`${prefix}c`), b.name(`${prefix}p`)];
  const rolled = rollWindow(known, now, windowMs);
  if (known && known.start === rolled.start) {
    b.condition(`${w} = ${b.value(known.start)}`);
    b.condition(`${p} = ${b.value(known.previous)}`);
    b.condition(`${c} < ${b.value(limit - previousShare(rolled, now, windowMs))}`);
    b.set(`${c} = ${c} + ${b.value(1)}`);
  } else {
    b.equalsOrAbsent(`${prefix}w`, known?.start);
    b.equalsOrAbsent(`${prefix}c`, known?.current);
    b.set(`${w} = ${b.value(rolled.start)}`);
    b.set(`${p} = ${b.value(rolled.previous)}`);
    b.set(`${c} = ${b.value(1)}`);
  }
}

export class DynamoDbRateLimiter implements RateLimiter, FreeAllowance {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly settings: LimiterSettings;
  private readonly cache = new Map<string, CounterState>();
  /** When each cached ban was last read from the store (request time). */
  private readonly banSeenAt = new Map<string, number>();
  private readonly free: DynamoDbFreeAllowance;
  private readonly onStoreFailure: (error: unknown) => void;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { settings?: LimiterSettings; onStoreFailure?: (error: unknown) => void } = {},
  ) {
    this.client = client;
    this.tableName = tableName;
    this.settings = options.settings ?? DEFAULT_LIMITER_SETTINGS;
    this.onStoreFailure = options.onStoreFailure ?? (() => undefined);
    this.free = new DynamoDbFreeAllowance(this.writeOnce, (keyId, state, now) =>
      this.remember(keyId, state, now),
    );
  }

  private remember(keyId: string, state: CounterState, now: number): void {
    this.cache.delete(keyId);
    if (this.cache.size >= CACHE_SIZE) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
      this.banSeenAt.delete(oldest);
    }
    this.cache.set(keyId, state);
    if (state.bannedUntil !== undefined && state.bannedUntil > now) this.banSeenAt.set(keyId, now);
    else this.banSeenAt.delete(keyId);
  }

  /**
   * The stored state of a key, read with the limiter's own permission (UpdateItem): a write
   * whose condition never holds on an item that exists, so it changes nothing and returns the
   * item (ALL_OLD); on a missing item it writes only the expiry an item of this table has.
   */
  private async reread(keyId: string, now: number, signal: AbortSignal | undefined) {
    const b: RateLimitUpdate = new UpdateBuilder();
    const ttl = b.name(TTL);
    b.condition(`attribute_not_exists(${b.name('pk')})`);
    b.set(
      `${ttl} = if_not_exists(${ttl}, ${b.value(expiry({ start: windowStart(now, DAY_MS), current: 0, previous: 0 }, undefined))})`,
    );
    return (await this.write(b, keyId, signal)).state;
  }

  /**
   * Counts the request, by `signal`'s deadline. A transient store failure is answered from the
   * last known state and the failure mode; a permanent one (missing table, access denied,
   * malformed item) is thrown: no failure mode hides a misconfiguration.
   */
  async consume(caller: Caller, now: number, options: CallOptions = {}): Promise<LimitResult> {
    const known = this.cache.get(caller.keyId) ?? {};
    try {
      return {
        decision: await this.consumeFrom(caller, now, known, options.signal),
        degraded: false,
      };
    } catch (error) {
      if (!isTransient(error)) throw error;
      this.onStoreFailure(error);
      // Counts only grow within a window, so a refusal read from the last known state holds.
      const decision = decide(known, now, caller.limits);
      if (decision.outcome !== 'admitted') return { decision, degraded: true };
      // Admitted without being counted: the counts are not known.
      return {
        decision,
        degraded: true,
        ...(this.settings.failureMode === 'closed' ? { unavailable: error } : {}),
      };
    }
  }

  /** See ./free-allowance.ts. */
  takeFree(caller: Caller, now: number, options: CallOptions = {}): Promise<FreeAllowanceResult> {
    return this.free.takeFree(caller, now, options);
  }

  private windowsAt(state: CounterState, at: number): { minute: WindowCount; day: WindowCount } {
    return {
      minute: rollWindow(state.minute, at, MINUTE_MS),
      day: rollWindow(state.day, at, DAY_MS),
    };
  }

  private async consumeFrom(
    caller: Caller,
    now: number,
    initial: CounterState,
    signal: AbortSignal | undefined,
  ): Promise<Decision> {
    let state = initial;
    const seen = this.banSeenAt.get(caller.keyId);
    if (
      seen !== undefined &&
      now - seen >= BAN_RECHECK_MS &&
      decide(state, now, caller.limits).outcome === 'banned'
    ) {
      // A ban from the cache, not read for a while: it may have been lifted (keys unban).
      state = await this.reread(caller.keyId, now, signal);
      this.remember(caller.keyId, state, now);
    }
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      // Decided (and written) at the request's counter time: never behind the stored windows.
      const decision = decide(state, now, caller.limits);
      if (decision.outcome === 'banned') return decision;
      if (decision.outcome === 'admitted') {
        const admitted = await this.admit(caller, decision.at, state, signal);
        state = admitted.state;
        this.remember(caller.keyId, state, now);
        if (admitted.written) return { ...decision, ...this.windowsAt(state, decision.at) };
        continue;
      }
      const step = refusalStep(state, now, decision.at, decision.retryAfterMs, this.settings);
      const refused = await this.refuse(caller, now, decision.at, state, step, signal);
      state = refused.state;
      this.remember(caller.keyId, state, now);
      if (!refused.written) continue;
      const windows = this.windowsAt(state, decision.at);
      // The refusal that starts a ban is answered as banned: the ban holds from this request on.
      if (step.kind === 'ban') {
        return {
          outcome: 'banned',
          at: decision.at,
          ...windows,
          retryAfterMs: step.bannedUntil - now,
        };
      }
      // Counts that moved meanwhile (another container rolled a window) can only lengthen the wait.
      const after = decide(state, now, caller.limits);
      const retryAfterMs = after.outcome === 'admitted' ? 0 : after.retryAfterMs;
      return {
        ...decision,
        ...windows,
        retryAfterMs: Math.max(decision.retryAfterMs, retryAfterMs),
      };
    }
    throw new DependencyFailure('transient', DEPENDENCY, 'contention', {
      message: `${DEPENDENCY}: no consistent write after ${MAX_ATTEMPTS} attempts (transient)`,
    });
  }

  private async admit(
    caller: Caller,
    at: number,
    known: CounterState,
    signal: AbortSignal | undefined,
  ) {
    const b: RateLimitUpdate = new UpdateBuilder();
    admitWindow(b, 'm', known.minute, at, MINUTE_MS, caller.limits.perMinute);
    admitWindow(b, 'd', known.day, at, DAY_MS, caller.limits.perDay);
    notBanned(b, at);
    const day = rollWindow(known.day, at, DAY_MS);
    b.set(`${b.name(TTL)} = ${b.value(expiry(day, known.bannedUntil))}`);
    return this.write(b, caller.keyId, signal);
  }

  /**
   * Records a refusal (429 RATE_LIMITED) in one conditional write that also bans (ban.ts decides
   * the step). The condition pins what the step was decided on: whether the request came before
   * the previous refusal's `retryAt` (which every refusal moves), and the refusal count it saw.
   * So under any concurrency exactly one refusal starts a ban, every request after it sees the
   * ban, and at most max + 1 refusals in a window say RATE_LIMITED (the first one of a burst
   * waited for nothing, so it does not count).
   */
  private async refuse(
    caller: Caller,
    now: number,
    at: number,
    known: CounterState,
    step: RefusalStep,
    signal: AbortSignal | undefined,
  ) {
    const b: RateLimitUpdate = new UpdateBuilder();
    const ra = b.name('ra');
    notBanned(b, at);
    if (step.kind === 'waited') {
      b.condition(`(attribute_not_exists(${ra}) OR ${ra} <= ${b.value(now)})`);
      b.set(`${ra} = ${b.value(step.retryAt)}`);
      return this.write(b, caller.keyId, signal);
    }
    b.condition(`${ra} > ${b.value(now)}`);
    const [rw, rc] = [b.name('rw'), b.name('rc')];
    const seen = refusalsIn(known, at);
    if (step.kind === 'ban') {
      b.condition(`${rw} = ${b.value(step.start)}`);
      b.condition(`${rc} = ${b.value(seen)}`);
      b.set(`${rc} = ${b.value(0)}`);
      b.set(`${b.name('bu')} = ${b.value(step.bannedUntil)}`);
      b.set(`${ra} = ${b.value(step.bannedUntil)}`);
      const day = rollWindow(known.day, at, DAY_MS);
      b.set(`${b.name(TTL)} = ${b.value(expiry(day, step.bannedUntil))}`);
    } else {
      if (seen > 0) {
        b.condition(`${rw} = ${b.value(step.start)}`);
        b.condition(`${rc} < ${b.value(this.settings.maxRefusalsPerMinute)}`);
        b.set(`${rc} = ${rc} + ${b.value(1)}`);
      } else {
        b.equalsOrAbsent('rw', known.refusals?.start);
        b.set(`${rw} = ${b.value(step.start)}`);
        b.set(`${rc} = ${b.value(1)}`);
      }
      b.set(`${ra} = ${b.value(step.retryAt)}`);
    }
    return this.write(b, caller.keyId, signal);
  }

  /**
   * One conditional write, by `signal`'s deadline. The client must not retry by itself
   * (createSingleAttemptClient): a retried `c = c + 1` whose first attempt landed would count
   * twice. Only what provably was not written is retried here — throttling, and a request that
   * never reached DynamoDB (./delivery.ts) — while the budget lasts; any other failure is the
   * store's.
   */
  private async write(
    b: RateLimitUpdate,
    keyId: string,
    signal: AbortSignal | undefined,
  ): Promise<{ written: boolean; state: CounterState }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { written, item } = await this.writeOnce(b, keyId, signal);
        return { written, state: itemToState(item) };
      } catch (error) {
        const failure = dynamoDbFailure(error, DEPENDENCY);
        const notWritten = failure.reason === 'throttled' || wasNotDelivered(error);
        if (!notWritten || attempt >= THROTTLING_ATTEMPTS) throw failure;
        try {
          await sleep(Math.random() * 25 * 2 ** attempt, undefined, { signal });
        } catch {
          throw failure;
        }
      }
    }
  }

  /** One attempt of a conditional write (see ItemWrite). */
  private readonly writeOnce: ItemWrite = async (b, keyId, signal) => {
    const command = b.command(this.tableName, { pk: counterKey(keyId) });
    try {
      const { Attributes } = await send(
        DEPENDENCY,
        (abortSignal) => this.client.send(command, { abortSignal }),
        signal,
      );
      return { written: true, item: Attributes };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { written: false, item: itemOfConditionFailure(error) };
    }
  };
}

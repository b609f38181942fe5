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
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Caller } from '../keys/key-record.ts';
import {
  DEFAULT_LIMITER_SETTINGS,
  type LimiterSettings,
  type LimitResult,
  type RateLimiter,
} from '../limits/limiter.ts';
import { refusalsIn, refusalStep, type RefusalStep } from '../limits/ban.ts';
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
} from '../limits/sliding-window.ts';
import { DependencyFailure, isTransient, type CallOptions } from '../failures.ts';
import { readOptionalNumber } from './attributes.ts';
import { dynamoDbFailure, isConditionFailure, send, wasNotDelivered } from './errors.ts';
import { TABLES } from './tables.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { standing, type FreeAllowance, type FreeAllowanceResult } from '../limits/conditional.ts';

/** How failures of this table are named in logs. */
const DEPENDENCY = 'rate limits table';

/**
 * Writes per request before the store counts as failing. Each kind of conflict can hit a request
 * at most once, because the state only moves forward: a stale cache, a lost window-rollover
 * race, the limit reached meanwhile, a refusal meanwhile that makes this one early, a lost
 * refusal-window race, a ban set meanwhile (then final). Six conflicts and the final write:
 * seven; one more for margin.
 */
const MAX_ATTEMPTS = 8;
/** Keys whose state a container remembers. */
const CACHE_SIZE = 10_000;

/**
 * How long a container answers a key's ban from its cache alone: after this, the next request
 * of the banned key looks at the stored item again, so a ban lifted by an operator
 * (`keys unban`) takes effect within it.
 */
export const BAN_RECHECK_MS = 1_000;

/**
 * Attempts of a write that provably did not happen: DynamoDB throttled it, or it never reached
 * DynamoDB (a refused connection, a keep-alive socket reset before the write went out).
 */
const THROTTLING_ATTEMPTS = 3;

const TTL = TABLES.rateLimits.timeToLiveAttribute;

type Item = Record<string, unknown>;

export function counterKey(keyId: string): string {
  return `key#${keyId}`;
}

export function itemToState(item: Item | undefined): CounterState {
  if (!item) return {};
  const n = (name: string) => readOptionalNumber(item[name], name, DEPENDENCY);
  const window = (prefix: 'm' | 'd'): WindowCount | undefined => {
    const start = n(`${prefix}w`);
    return start === undefined
      ? undefined
      : { start, current: n(`${prefix}c`) ?? 0, previous: n(`${prefix}p`) ?? 0 };
  };
  const rw = n('rw');
  const bu = n('bu');
  const ra = n('ra');
  return {
    ...(window('m') ? { minute: window('m') } : {}),
    ...(window('d') ? { day: window('d') } : {}),
    ...(rw !== undefined ? { refusals: { start: rw, count: n('rc') ?? 0 } } : {}),
    ...(bu !== undefined ? { bannedUntil: bu } : {}),
    ...(ra !== undefined ? { retryAt: ra } : {}),
  };
}

/** Builds one UpdateItem: conditions, SET clauses and values, with generated placeholders. */
class UpdateBuilder {
  private readonly conditions: string[] = [];
  private readonly sets: string[] = [];
  private readonly values: Record<string, unknown> = {};
  private readonly names: Record<string, string> = {};

  value(v: unknown): string {
    const placeholder = `:v${Object.keys(this.values).length}`;
    this.values[placeholder] = v;
    return placeholder;
  }

  name(attribute: string): string {
    this.names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  }

  condition(text: string): void {
    this.conditions.push(text);
  }

  set(text: string): void {
    this.sets.push(text);
  }

  equalsOrAbsent(attribute: string, expected: number | undefined): void {
    this.condition(
      expected === undefined
        ? `attribute_not_exists(${this.name(attribute)})`
        : `${this.name(attribute)} = ${this.value(expected)}`,
    );
  }

  notBanned(now: number): void {
    const bu = this.name('bu');
    this.condition(`(attribute_not_exists(${bu}) OR ${bu} <= ${this.value(now)})`);
  }

  command(tableName: string, pk: string) {
    return new UpdateCommand({
      TableName: tableName,
      Key: { pk },
      UpdateExpression: `SET ${this.sets.join(', ')}`,
      ConditionExpression: this.conditions.join(' AND '),
      ExpressionAttributeNames: this.names,
      ExpressionAttributeValues: this.values,
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  }
}

/** The item expires two days after its day window starts, and not before its ban ends. */
function expiry(day: WindowCount, bannedUntil: number | undefined): number {
  return Math.ceil(Math.max(day.start + 2 * DAY_MS, bannedUntil ?? 0) / 1000);
}

/**
 * Admission write for one window: in the same window, pin the previous count and bound the
 * current; in a new window, pin the old count exactly (it becomes `previous`) and start at 1.
 */
function admitWindow(
  b: UpdateBuilder,
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

/**
 * What an operator does to one key's counter item (`keys show`, `keys unban`), outside the
 * request path.
 */
export class RateLimitAdmin {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  /** The stored state of a key (a strongly consistent read); `{}` when it has none. */
  async read(keyId: string): Promise<CounterState> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: counterKey(keyId) },
        ConsistentRead: true,
      }),
    );
    return itemToState(Item);
  }

  /**
   * Lifts a key's ban in one conditional write, provided it is banned at `now`: removes the ban
   * and the moment its last refusal named (so the next refusal is not early), and restarts its
   * refusal count. Every write of the limiter pins what it decided on (the refusal count and
   * that moment), so a request decided on the state before the unban fails its condition and
   * decides again from the state after it: it cannot ban the key again from stale state.
   * `lifted: false` when the key was not banned (nothing changed); `before` is the state the
   * write found.
   */
  async unban(keyId: string, now: number): Promise<{ lifted: boolean; before: CounterState }> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: counterKey(keyId) },
          ConditionExpression: '#bu > :now',
          UpdateExpression: 'REMOVE #bu, #ra SET #rc = :zero',
          ExpressionAttributeNames: { '#bu': 'bu', '#ra': 'ra', '#rc': 'rc' },
          ExpressionAttributeValues: { ':now': now, ':zero': 0 },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { lifted: true, before: itemToState(Attributes) };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const item = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      return { lifted: false, before: itemToState(item ? unmarshall(item) : undefined) };
    }
  }
}

/** The free allowance's window of a key as stored (`cw`: its minute's start, `cc`: its count). */
interface AllowanceWindow {
  readonly start: number;
  readonly count: number;
}

function allowanceOf(item: Item | undefined): AllowanceWindow | undefined {
  const start = readOptionalNumber(item?.cw, 'cw', DEPENDENCY);
  return start === undefined
    ? undefined
    : { start, count: readOptionalNumber(item?.cc, 'cc', DEPENDENCY) ?? 0 };
}

/** Writes per free conditional request before the store counts as failing (stale cache, rollover). */
const FREE_ATTEMPTS = 4;

export class DynamoDbRateLimiter implements RateLimiter, FreeAllowance {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly settings: LimiterSettings;
  private readonly cache = new Map<string, CounterState>();
  /** When each cached ban was last read from the store (request time). */
  private readonly banSeenAt = new Map<string, number>();
  /** The free allowance's window last seen per key (lib/limits/conditional.ts). */
  private readonly allowances = new Map<string, AllowanceWindow>();
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
    const b = new UpdateBuilder();
    const ttl = b.name(TTL);
    b.condition(`attribute_not_exists(${b.name('pk')})`);
    b.set(
      `${ttl} = if_not_exists(${ttl}, ${b.value(Math.ceil((windowStart(now, DAY_MS) + 2 * DAY_MS) / 1000))})`,
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
      const b = new UpdateBuilder();
      const [cw, cc] = [b.name('cw'), b.name('cc')];
      b.notBanned(now);
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
      let item: Item | undefined;
      let written: boolean;
      try {
        const { Attributes } = await send(
          DEPENDENCY,
          (abortSignal) =>
            this.client.send(b.command(this.tableName, counterKey(caller.keyId)), {
              abortSignal,
            }),
          options.signal,
        );
        [item, written] = [Attributes, true];
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        const old = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
        [item, written] = [old ? unmarshall(old) : undefined, false];
      }
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
    const b = new UpdateBuilder();
    admitWindow(b, 'm', known.minute, at, MINUTE_MS, caller.limits.perMinute);
    admitWindow(b, 'd', known.day, at, DAY_MS, caller.limits.perDay);
    b.notBanned(at);
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
    const b = new UpdateBuilder();
    const ra = b.name('ra');
    b.notBanned(at);
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
    b: UpdateBuilder,
    keyId: string,
    signal: AbortSignal | undefined,
  ): Promise<{ written: boolean; state: CounterState }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { Attributes } = await send(
          DEPENDENCY,
          (abortSignal) =>
            this.client.send(b.command(this.tableName, counterKey(keyId)), { abortSignal }),
          signal,
        );
        return { written: true, state: itemToState(Attributes) };
      } catch (error) {
        if (isConditionFailure(error)) {
          const item = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
          return { written: false, state: itemToState(item ? unmarshall(item) : undefined) };
        }
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
}

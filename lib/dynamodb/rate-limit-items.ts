/**
 * The keys' items in the rate limits table (./rate-limit-item.ts), as the limiter and the free
 * allowance read and write them: one conditional write at a time, and the last state seen of each
 * key, for the next plan. A ban in that state is answered from it alone, for the count and the
 * free allowance alike, and read again every BAN_RECHECK_MS (stateToPlanOn).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { keepNewUntil } from '../limits/counter-plan.ts';
import type { AllowanceWindow } from '../limits/free-allowance.ts';
import type { Limits } from '../limits/plans.ts';
import { decide, type CounterState } from '../limits/sliding-window.ts';
import { dynamoDbFailure, isConditionFailure, send } from './errors.ts';
import {
  allowanceOf,
  counterKey,
  DEPENDENCY,
  itemOfConditionFailure,
  itemToState,
  updateOf,
  type RateLimitWrite,
} from './rate-limit-item.ts';
import { wasNotDelivered } from './undelivered.ts';

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

/** What a conditional write of a key's item found: whether it held, and the item after it (or as found). */
export interface ItemWritten {
  readonly written: boolean;
  readonly state: CounterState;
  readonly allowance: AllowanceWindow | undefined;
}

/**
 * The keys' items: one conditional write at a time, and the last state seen of each key (its
 * counters, its free allowance, when its ban was last read), for the next plan.
 */
export class RateLimitItems {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly states = new Map<string, CounterState>();
  private readonly allowances = new Map<string, AllowanceWindow>();
  /** When each cached ban was last read from the store (request time). */
  private readonly banSeenAt = new Map<string, number>();

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  /** The key's state as last seen (`{}` when none). */
  known(keyId: string): CounterState {
    return this.states.get(keyId) ?? {};
  }

  /** The key's free allowance as last seen. */
  knownAllowance(keyId: string): AllowanceWindow | undefined {
    return this.allowances.get(keyId);
  }

  /**
   * The key's state to plan a request at `now` on: as last seen, so that a ban it shows is
   * answered from it without a write (the count's plan and the free allowance's alike); but a
   * cached ban read BAN_RECHECK_MS or more ago is read again first (one conditional write that
   * changes nothing), since an operator may have lifted it (`keys unban`).
   */
  async stateToPlanOn(
    keyId: string,
    now: number,
    limits: Limits,
    signal: AbortSignal | undefined,
  ): Promise<CounterState> {
    const state = this.known(keyId);
    if (!this.banIsStale(keyId, now) || decide(state, now, limits).outcome !== 'banned') {
      return state;
    }
    const read = { kind: 'read', keepNewUntil: keepNewUntil(now) } as const;
    return (await this.write(read, keyId, now, signal)).state;
  }

  /** Whether the cached ban of a key was read long enough ago to be read again (BAN_RECHECK_MS). */
  private banIsStale(keyId: string, now: number): boolean {
    const seen = this.banSeenAt.get(keyId);
    return seen !== undefined && now - seen >= BAN_RECHECK_MS;
  }

  /**
   * One conditional write of a key's item, by `signal`'s deadline, remembered at `now`. The
   * client must not retry by itself (createSingleAttemptClient): a retried `c = c + 1` whose
   * first attempt landed would count twice. Only what provably was not written is retried here —
   * throttling, and a request that never reached DynamoDB (./undelivered.ts) — while the budget
   * lasts; any other failure is the store's.
   */
  async write(
    write: RateLimitWrite,
    keyId: string,
    now: number,
    signal: AbortSignal | undefined,
  ): Promise<ItemWritten> {
    const command = updateOf(write).command(this.tableName, { pk: counterKey(keyId) });
    for (let attempt = 1; ; attempt++) {
      try {
        const { Attributes } = await send(
          DEPENDENCY,
          (abortSignal) => this.client.send(command, { abortSignal }),
          signal,
        );
        return this.remember(keyId, true, Attributes, now);
      } catch (error) {
        if (isConditionFailure(error)) {
          return this.remember(keyId, false, itemOfConditionFailure(error), now);
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

  private remember(
    keyId: string,
    written: boolean,
    item: Record<string, unknown> | undefined,
    now: number,
  ): ItemWritten {
    const state = itemToState(item);
    const allowance = allowanceOf(item);
    if (!this.states.has(keyId) && this.states.size >= CACHE_SIZE) {
      const oldest = this.states.keys().next().value as string;
      this.states.delete(oldest);
      this.allowances.delete(oldest);
      this.banSeenAt.delete(oldest);
    }
    // Most recently seen last: the first key is the one seen longest ago.
    this.states.delete(keyId);
    this.states.set(keyId, state);
    if (allowance) this.allowances.set(keyId, allowance);
    if (state.bannedUntil !== undefined && state.bannedUntil > now) this.banSeenAt.set(keyId, now);
    else this.banSeenAt.delete(keyId);
    return { written, state, allowance };
  }
}

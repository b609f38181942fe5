/**
 * The item of one API key in the rate limits table: what each attribute holds, and how an item
 * reads as the key's counter state (lib/limits/sliding-window.ts). Times are Unix milliseconds
 * unless said; every attribute but `pk` may be absent (nothing of its kind happened yet).
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DAY_MS, type CounterState, type WindowCount } from '../limits/sliding-window.ts';
import { readOptionalNumber } from './attributes.ts';
import { TABLES } from './tables.ts';
import { UpdateBuilder } from './update-builder.ts';

/** How failures of this table are named in logs. */
export const DEPENDENCY = 'rate limits table';

/** The legend: every attribute of the item, and its meaning. */
export const RATE_LIMIT_ITEM = {
  pk: 'the key: `key#<keyId>` (counterKey)',
  mw: 'minute window: its start (aligned to the minute)',
  mc: 'minute window: requests admitted in it',
  mp: 'minute window: requests admitted in the window before it (fixed once that one closed)',
  dw: 'day window: its start (00:00 UTC)',
  dc: 'day window: requests admitted in it',
  dp: 'day window: requests admitted in the day before it',
  rw: 'refusal window: the start of the minute whose early refusals are counted (ban.ts)',
  rc: 'refusal window: refusals in it that came before the time the previous one gave',
  ra: "retry at: when the key's latest refusal told its client to come back",
  bu: 'banned until',
  cw: 'free allowance (conditional requests answered 304): the start of its minute',
  cc: 'free allowance: conditional requests taken from it in that minute',
  [TABLES.rateLimits.timeToLiveAttribute]:
    'expiry, Unix seconds (TTL): two days after the day window starts, never before a ban ends',
} as const;

export type RateLimitAttribute = keyof typeof RATE_LIMIT_ITEM;
export type RateLimitUpdate = UpdateBuilder<RateLimitAttribute>;

/** One conditional write of a key's item: the item after it, or as found when its condition failed. */
export type ItemWrite = (
  b: RateLimitUpdate,
  keyId: string,
  signal: AbortSignal | undefined,
) => Promise<{ written: boolean; item: Item | undefined }>;

export const TTL = TABLES.rateLimits.timeToLiveAttribute;

type Item = Record<string, unknown>;

export function counterKey(keyId: string): string {
  return `key#${keyId}`;
}

function numberOf(item: Item | undefined, name: RateLimitAttribute): number | undefined {
  return readOptionalNumber(item?.[name], name, DEPENDENCY);
}

export function itemToState(item: Item | undefined): CounterState {
  if (!item) return {};
  const window = (prefix: 'm' | 'd'): WindowCount | undefined => {
    const start = numberOf(item, `${prefix}w`);
    return start === undefined
      ? undefined
      : {
          start,
          current: numberOf(item, `${prefix}c`) ?? 0,
          previous: numberOf(item, `${prefix}p`) ?? 0,
        };
  };
  const rw = numberOf(item, 'rw');
  const bu = numberOf(item, 'bu');
  const ra = numberOf(item, 'ra');
  return {
    ...(window('m') ? { minute: window('m') } : {}),
    ...(window('d') ? { day: window('d') } : {}),
    ...(rw !== undefined ? { refusals: { start: rw, count: numberOf(item, 'rc') ?? 0 } } : {}),
    ...(bu !== undefined ? { bannedUntil: bu } : {}),
    ...(ra !== undefined ? { retryAt: ra } : {}),
  };
}

/** The free allowance's window of a key as stored (`cw`, `cc`). */
export interface AllowanceWindow {
  readonly start: number;
  readonly count: number;
}

export function allowanceOf(item: Item | undefined): AllowanceWindow | undefined {
  const start = numberOf(item, 'cw');
  return start === undefined ? undefined : { start, count: numberOf(item, 'cc') ?? 0 };
}

/** The item expires two days after its day window starts, and not before its ban ends. */
export function expiry(day: WindowCount, bannedUntil: number | undefined): number {
  return Math.ceil(Math.max(day.start + 2 * DAY_MS, bannedUntil ?? 0) / 1000);
}

/** The condition that the key is not banned at `now`. */
export function notBanned(b: RateLimitUpdate, now: number): void {
  const bu = b.name('bu');
  b.condition(`(attribute_not_exists(${bu}) OR ${bu} <= ${b.value(now)})`);
}

/** The item a failed condition returned (ALL_OLD, which lib-dynamodb leaves marshalled). */
export function itemOfConditionFailure(error: unknown): Item | undefined {
  const item = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
  return item ? unmarshall(item) : undefined;
}

/**
 * The item of one API key in the rate limits table: what each attribute holds, how an item reads
 * as the key's counter state (lib/limits/sliding-window.ts), and how a write the limiter planned
 * on that state (lib/limits/counter-plan.ts, lib/limits/free-allowance.ts) is written: one
 * conditional UpdateItem. Times are Unix milliseconds unless said; every attribute but `pk` may
 * be absent (nothing of its kind happened yet).
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { CounterWrite, WindowWrite } from '../limits/counter-plan.ts';
import type { AllowanceWindow, FreeTakeWrite } from '../limits/free-allowance.ts';
import type { CounterState, WindowCount } from '../limits/sliding-window.ts';
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
type RateLimitUpdate = UpdateBuilder<RateLimitAttribute>;

const TTL = TABLES.rateLimits.timeToLiveAttribute;

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
export function allowanceOf(item: Item | undefined): AllowanceWindow | undefined {
  const start = numberOf(item, 'cw');
  return start === undefined ? undefined : { start, count: numberOf(item, 'cc') ?? 0 };
}

/** A write the limiter planned, or one that only reads the item (`keepNewUntil`: see below). */
export type RateLimitWrite =
  CounterWrite | FreeTakeWrite | { readonly kind: 'read'; readonly keepNewUntil: number };

/** The expiry attribute's value (TTL: Unix seconds) for counters kept until `ms`. */
const ttlOf = (ms: number): number => Math.ceil(ms / 1000);

/** The condition that the key is not banned at `now`. */
function notBanned(b: RateLimitUpdate, now: number): void {
  const bu = b.name('bu');
  b.condition(`(attribute_not_exists(${bu}) OR ${bu} <= ${b.value(now)})`);
}

function windowClauses(b: RateLimitUpdate, prefix: 'm' | 'd', write: WindowWrite): void {
  const [w, c, p] = [b.name(`${prefix}w`), b.name(`${prefix}c`), b.name(`${prefix}p`)];
  if (write.kind === 'same') {
    b.condition(`${w} = ${b.value(write.start)}`);
    b.condition(`${p} = ${b.value(write.previous)}`);
    b.condition(`${c} < ${b.value(write.below)}`);
    b.set(`${c} = ${c} + ${b.value(1)}`);
    return;
  }
  b.equalsOrAbsent(`${prefix}w`, write.seenStart);
  b.equalsOrAbsent(`${prefix}c`, write.seenCurrent);
  b.set(`${w} = ${b.value(write.start)}`);
  b.set(`${p} = ${b.value(write.previous)}`);
  b.set(`${c} = ${b.value(1)}`);
}

function refusalClauses(b: RateLimitUpdate, write: Extract<CounterWrite, { kind: 'refuse' }>) {
  const { step } = write;
  const ra = b.name('ra');
  if (step.kind === 'waited') {
    b.condition(`(attribute_not_exists(${ra}) OR ${ra} <= ${b.value(write.now)})`);
    b.set(`${ra} = ${b.value(step.retryAt)}`);
    return;
  }
  b.condition(`${ra} > ${b.value(write.now)}`);
  const [rw, rc] = [b.name('rw'), b.name('rc')];
  if (step.kind === 'ban') {
    b.condition(`${rw} = ${b.value(step.start)}`);
    b.condition(`${rc} = ${b.value(write.seen)}`);
    b.set(`${rc} = ${b.value(0)}`);
    b.set(`${b.name('bu')} = ${b.value(step.bannedUntil)}`);
    b.set(`${ra} = ${b.value(step.bannedUntil)}`);
  } else if (write.seen > 0) {
    b.condition(`${rw} = ${b.value(step.start)}`);
    b.condition(`${rc} < ${b.value(write.maxRefusalsPerMinute)}`);
    b.set(`${rc} = ${rc} + ${b.value(1)}`);
    b.set(`${ra} = ${b.value(step.retryAt)}`);
  } else {
    b.equalsOrAbsent('rw', write.seenRefusalStart);
    b.set(`${rw} = ${b.value(step.start)}`);
    b.set(`${rc} = ${b.value(1)}`);
    b.set(`${ra} = ${b.value(step.retryAt)}`);
  }
}

/** The conditional UpdateItem of a write (conditions pin what it was decided on). */
export function updateOf(write: RateLimitWrite): RateLimitUpdate {
  const b: RateLimitUpdate = new UpdateBuilder();
  // Named only where used: DynamoDB refuses a name the expressions do not use.
  const ttl = () => b.name(TTL);
  switch (write.kind) {
    case 'admit':
      windowClauses(b, 'm', write.minute);
      windowClauses(b, 'd', write.day);
      notBanned(b, write.at);
      b.set(`${ttl()} = ${b.value(ttlOf(write.keepUntil))}`);
      break;
    case 'refuse':
      notBanned(b, write.at);
      refusalClauses(b, write);
      if (write.keepUntil !== undefined) b.set(`${ttl()} = ${b.value(ttlOf(write.keepUntil))}`);
      break;
    case 'free': {
      const [cw, cc] = [b.name('cw'), b.name('cc')];
      notBanned(b, write.now);
      if (write.seen.kind === 'same') {
        b.condition(`${cw} = ${b.value(write.start)}`);
        b.condition(`${cc} < ${b.value(write.seen.below)}`);
        b.set(`${cc} = ${cc} + ${b.value(1)}`);
      } else {
        b.equalsOrAbsent('cw', write.seen.seenStart);
        b.set(`${cw} = ${b.value(write.start)}`);
        b.set(`${cc} = ${b.value(1)}`);
      }
      b.set(`${ttl()} = if_not_exists(${ttl()}, ${b.value(ttlOf(write.keepNewUntil))})`);
      break;
    }
    case 'read':
      // A condition that never holds on an item that exists: it changes nothing and returns the
      // item (ALL_OLD); on a missing item it writes only the expiry an item of this table has.
      b.condition(`attribute_not_exists(${b.name('pk')})`);
      b.set(`${ttl()} = if_not_exists(${ttl()}, ${b.value(ttlOf(write.keepNewUntil))})`);
      break;
  }
  return b;
}

/** The item a failed condition returned (ALL_OLD, which lib-dynamodb leaves marshalled). */
export function itemOfConditionFailure(error: unknown): Item | undefined {
  const item = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
  return item ? unmarshall(item) : undefined;
}

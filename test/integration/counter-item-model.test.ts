/**
 * The model of the limiter's conditional UpdateItem (test/support/counter-item-model.ts), which
 * the planner's unit tests (test/unit/counter-plan.test.ts) run their writers against, checked
 * against the real expressions (lib/dynamodb/rate-limit-item.ts) on DynamoDB Local: seeded random
 * sequences of requests, planned by containers on the states they last saw (stale ones included),
 * are written both to the model and to a key's item, and after every write the two must agree on
 * whether its condition held and on the state stored.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConditionFailure } from '../../lib/dynamodb/errors.ts';
import {
  counterKey,
  itemOfConditionFailure,
  itemToState,
  updateOf,
} from '../../lib/dynamodb/rate-limit-item.ts';
import { planRequest, type CounterWrite } from '../../lib/limits/counter-plan.ts';
import { DAY_MS, type CounterState } from '../../lib/limits/sliding-window.ts';
import { applyCounterWrite } from '../support/counter-item-model.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

let t: TestTables;

/** Small numbers, so that a few hundred requests fill windows, refuse, ban and roll over. */
const LIMITS = { perMinute: 4, perDay: 15 };
const SETTINGS = { maxRefusalsPerMinute: 2, banMs: 20_000 };
/** Containers planning on their own caches: each one's state is as stale as its last write left it. */
const CONTAINERS = 3;
const STEPS = 250;
const SEEDS = [1, 2, 3, 4];
/**
 * Five minutes before tomorrow's UTC midnight, never a fixed date: the sequences cross a day
 * boundary, and items expire by TTL two days after their day window starts (DynamoDB Local
 * deletes expired items).
 */
const START = (Math.floor(Date.now() / DAY_MS) + 2) * DAY_MS - 5 * 60_000;

/** mulberry32: a small seeded generator, so that a failing sequence can be run again. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The real write: whether its condition held, and the item it returned (ALL_NEW or ALL_OLD). */
async function writeReal(
  keyId: string,
  write: CounterWrite,
): Promise<{ held: boolean; state: CounterState }> {
  const command = updateOf(write).command(t.tables.rateLimits, { pk: counterKey(keyId) });
  try {
    const { Attributes } = await t.client.send(command);
    return { held: true, state: itemToState(Attributes) };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    return { held: false, state: itemToState(itemOfConditionFailure(error)) };
  }
}

async function storedReal(keyId: string): Promise<CounterState> {
  const { Item } = await t.client.send(
    new GetCommand({
      TableName: t.tables.rateLimits,
      Key: { pk: counterKey(keyId) },
      ConsistentRead: true,
    }),
  );
  return itemToState(Item);
}

/** What a sequence wrote, by kind of write and whether it held: that it tried what it should. */
type Tally = Record<string, number>;

async function runSequence(seed: number): Promise<Tally> {
  const random = generator(seed);
  const keyId = `key_model${seed}_${Date.now()}`;
  const caches: CounterState[] = Array.from({ length: CONTAINERS }, () => ({}));
  const tally: Tally = {};
  let model: CounterState = {};
  let clock = START;
  for (let step = 0; step < STEPS; step++) {
    const roll = random();
    // Mostly bursts (refusals, bans), sometimes a wait (windows slide, bans end), rarely long.
    clock +=
      roll < 0.7 ? Math.floor(random() * 400) : roll < 0.95 ? 5_000 + random() * 30_000 : 90_000;
    clock = Math.floor(clock);
    // Some requests reach the store stamped a little earlier than others already written.
    const now = random() < 0.2 ? clock - Math.floor(random() * 3_000) : clock;
    const container = Math.floor(random() * CONTAINERS);
    const plan = planRequest(caches[container]!, now, LIMITS, SETTINGS);
    // A ban answered from the container's cache: no write; it reads the item again sometimes.
    if (!plan.write) {
      if (random() < 0.5) caches[container] = model;
      continue;
    }
    const where = `seed ${seed}, step ${step}, ${JSON.stringify(plan.write)} on ${JSON.stringify(model)}`;
    const expected = applyCounterWrite(model, plan.write);
    const real = await writeReal(keyId, plan.write);
    expect(real.held, `whether the condition held: ${where}`).toBe(expected !== undefined);
    if (expected) model = expected;
    expect(real.state, `the item the write returned: ${where}`).toEqual(model);
    expect(await storedReal(keyId), `the item stored: ${where}`).toEqual(model);
    caches[container] = real.state;
    const name = `${plan.write.kind}${plan.write.kind === 'refuse' ? `/${plan.write.step.kind}` : ''}`;
    const outcome = `${name} ${real.held ? 'held' : 'failed'}`;
    tally[outcome] = (tally[outcome] ?? 0) + 1;
  }
  return tally;
}

beforeAll(async () => {
  t = await createTestTables('model');
});
afterAll(() => t.drop());

describe('the model of the counter item’s UpdateItem agrees with DynamoDB', () => {
  it.each(SEEDS)(
    'on every write of a seeded random sequence of stale and fresh plans (seed %i)',
    async (seed) => {
      const tally = await runSequence(seed);
      // The sequence exercised the conditions both ways, not only the easy path.
      for (const outcome of [
        'admit held',
        'admit failed',
        'refuse/counted held',
        'refuse/ban held',
      ]) {
        expect(tally[outcome] ?? 0, `${outcome} in ${JSON.stringify(tally)}`).toBeGreaterThan(0);
      }
    },
    60_000,
  );
});

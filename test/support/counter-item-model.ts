/**
 * What DynamoDB does with a write the limiter planned (lib/limits/counter-plan.ts), as a model of
 * its conditional UpdateItem on one key's item: the write holds when every condition holds on the
 * stored state, and then stores what it sets; else nothing changes. The plan's unit tests run
 * writers against it, without DynamoDB; test/integration/counter-item-model.test.ts checks that it
 * agrees with the real expressions (lib/dynamodb/rate-limit-item.ts) on DynamoDB Local, write by
 * write: a condition added to or dropped from one of them must be in the other too.
 */
import type { CounterWrite, WindowWrite } from '../../lib/limits/counter-plan.ts';
import type { CounterState, WindowCount } from '../../lib/limits/sliding-window.ts';

function applyWindow(stored: WindowCount | undefined, write: WindowWrite): WindowCount | undefined {
  if (write.kind === 'same') {
    if (stored?.start !== write.start || stored.previous !== write.previous) return undefined;
    if (!(stored.current < write.below)) return undefined;
    return { ...stored, current: stored.current + 1 };
  }
  if (stored?.start !== write.seenStart || stored?.current !== write.seenCurrent) return undefined;
  return { start: write.start, previous: write.previous, current: 1 };
}

/** The state after `write`, or undefined when its conditions do not hold on `stored`. */
export function applyCounterWrite(
  stored: CounterState,
  write: CounterWrite,
): CounterState | undefined {
  if (stored.bannedUntil !== undefined && stored.bannedUntil > write.at) return undefined;
  if (write.kind === 'admit') {
    const minute = applyWindow(stored.minute, write.minute);
    const day = applyWindow(stored.day, write.day);
    return minute && day ? { ...stored, minute, day } : undefined;
  }
  const { step } = write;
  const early = stored.retryAt !== undefined && stored.retryAt > write.now;
  if (step.kind === 'waited') return early ? undefined : { ...stored, retryAt: step.retryAt };
  if (!early) return undefined;
  const refusals = stored.refusals;
  if (step.kind === 'ban') {
    if (refusals?.start !== step.start || refusals.count !== write.seen) return undefined;
    return {
      ...stored,
      refusals: { start: step.start, count: 0 },
      bannedUntil: step.bannedUntil,
      retryAt: step.bannedUntil,
    };
  }
  if (write.seen > 0) {
    if (refusals?.start !== step.start || !(refusals.count < write.maxRefusalsPerMinute)) {
      return undefined;
    }
    return {
      ...stored,
      refusals: { start: step.start, count: refusals.count + 1 },
      retryAt: step.retryAt,
    };
  }
  if (refusals?.start !== write.seenRefusalStart) return undefined;
  return { ...stored, refusals: { start: step.start, count: 1 }, retryAt: step.retryAt };
}

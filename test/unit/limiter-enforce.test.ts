/**
 * What a limiter's result means for the request (lib/limits/limiter.ts `enforce`): the domain
 * refusals and failures that functions/shared/http-errors.ts alone turns into HTTP.
 */
import { describe, expect, it } from 'vitest';
import { DependencyFailure } from '../../lib/failures.ts';
import { enforce, RateLimitRefusal, type LimitResult } from '../../lib/limits/limiter.ts';
import type { Decision } from '../../lib/limits/sliding-window.ts';

const window = { start: 0, current: 1, previous: 0 };
const admitted: Decision = { outcome: 'admitted', at: 0, minute: window, day: window };
const refused = (outcome: 'limited' | 'banned', retryAfterMs: number): Decision => ({
  ...admitted,
  outcome,
  retryAfterMs,
});
const result = (decision: Decision, failed: Partial<LimitResult> = {}): LimitResult => ({
  decision,
  degraded: false,
  unavailable: false,
  ...failed,
});

function thrown(run: () => void): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('enforce', () => {
  it('lets an admitted request through, counted or (failing open) not', () => {
    expect(thrown(() => enforce(result(admitted), 'key_a'))).toBeUndefined();
    expect(thrown(() => enforce(result(admitted, { degraded: true }), 'key_a'))).toBeUndefined();
  });

  it.each([
    ['limited', 2_001, 3],
    ['limited', 1, 1],
    ['banned', 900_000, 900],
  ] as const)('refuses a %s request, %i ms to wait → Retry-After %i s', (outcome, ms, seconds) => {
    const error = thrown(() => enforce(result(refused(outcome, ms)), 'key_a'));
    expect(error).toBeInstanceOf(RateLimitRefusal);
    expect(error).toMatchObject({ outcome, keyId: 'key_a', retryAfterSeconds: seconds });
  });

  it('fails transiently when the store failed and the mode is closed, even for a known refusal', () => {
    for (const decision of [admitted, refused('limited', 5_000)]) {
      const error = thrown(() => enforce(result(decision, { unavailable: true }), 'key_a'));
      expect(error).toBeInstanceOf(DependencyFailure);
      expect(error).toMatchObject({ kind: 'transient', dependency: 'rate limits table' });
    }
  });
});

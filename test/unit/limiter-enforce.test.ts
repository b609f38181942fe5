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

  it("throws the store's failure when the mode is closed, even for a known refusal", () => {
    const failure = new DependencyFailure('transient', 'rate limits table', 'timeout');
    for (const decision of [admitted, refused('limited', 5_000)]) {
      expect(thrown(() => enforce(result(decision, { unavailable: failure }), 'key_a'))).toBe(
        failure,
      );
    }
  });
});

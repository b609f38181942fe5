/**
 * API Gateway's stage throttle as the local API emulates it (./gateway.ts): a token bucket per
 * stage, resource and method — the stage's method settings (`/*`, `*`) apply to each method —
 * holding `burstLimit` tokens and refilled at `rateLimit` a second; a request that finds it empty
 * is refused THROTTLED (429) before its authorizer runs. A safety net above the per-key limits:
 * production's 2,000 a second is out of reach of one machine's clients, staging's 200 is not.
 */
export interface StageThrottle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/** Takes a token for a request to `key` at `now` (ms); false when the bucket is empty. */
export type ThrottleGate = (key: string, now: number) => boolean;

export function stageThrottle(throttle: StageThrottle): ThrottleGate {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (key, now) => {
    const bucket = buckets.get(key) ?? { tokens: throttle.burstLimit, at: now };
    const refilled = Math.min(
      throttle.burstLimit,
      bucket.tokens + ((now - bucket.at) / 1000) * throttle.rateLimit,
    );
    const admitted = refilled >= 1;
    buckets.set(key, { tokens: admitted ? refilled - 1 : refilled, at: now });
    return admitted;
  };
}

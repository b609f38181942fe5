/** The plans and their rate limits: the one place these numbers live. */
export const PLAN_NAMES = ['free', 'pro', 'business', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
}

/** Fixed limits per plan; enterprise keys carry their own numbers in their key record. */
export const PLAN_LIMITS: Readonly<Record<Exclude<PlanName, 'enterprise'>, Limits>> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};

/** Upper bound for any limit (a DynamoDB counter well inside exact integer range). */
export const MAX_LIMIT = 1_000_000_000;

export function isPlanName(value: unknown): value is PlanName {
  return typeof value === 'string' && (PLAN_NAMES as readonly string[]).includes(value);
}

function isLimit(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_LIMIT;
}

/** Custom limits whose minute limit exceeds their day limit: the minute limit could never bind. */
export class MinuteAboveDay extends Error {
  constructor(limits: Limits) {
    super(
      `limits.perMinute (${limits.perMinute}) cannot be above limits.perDay (${limits.perDay})`,
    );
    this.name = 'MinuteAboveDay';
  }
}

/**
 * The limits of a key: its plan's, or for enterprise the custom numbers it carries (a
 * per-minute limit no higher than the per-day one). Throws a readable Error when the
 * combination is invalid.
 */
export function resolveLimits(plan: PlanName, custom?: Partial<Limits>): Limits {
  if (plan !== 'enterprise') {
    if (custom && (custom.perMinute !== undefined || custom.perDay !== undefined)) {
      throw new Error(`custom limits are only for the enterprise plan, not ${plan}`);
    }
    return PLAN_LIMITS[plan];
  }
  if (!custom || !isLimit(custom.perMinute) || !isLimit(custom.perDay)) {
    throw new Error(
      `the enterprise plan needs limits.perMinute and limits.perDay as integers from 1 to ${MAX_LIMIT}`,
    );
  }
  const limits = { perMinute: custom.perMinute, perDay: custom.perDay };
  if (limits.perMinute > limits.perDay) throw new MinuteAboveDay(limits);
  return limits;
}

/** Whether a stored key's limits are usable as they are (both integers in range). */
export function isValidLimits(limits: Partial<Limits> | undefined): limits is Limits {
  return limits !== undefined && isLimit(limits.perMinute) && isLimit(limits.perDay);
}

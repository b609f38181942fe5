/**
 * The rate-limit headers of an answer as the client reads them: X-RateLimit-*, the IETF draft
 * fields RateLimit-Policy and RateLimit, and Retry-After.
 */

/** One window of `RateLimit-Policy`: quota `q` per `w` seconds. */
export interface RateLimitPolicyItem {
  readonly name: string;
  readonly quota: number;
  readonly windowSeconds: number;
}

/** One window of `RateLimit`: `r` requests remaining, `t` seconds until it resets. */
export interface RateLimitWindow {
  readonly name: string;
  readonly remaining: number;
  readonly resetSeconds: number;
}

/** The rate-limit headers of one answer. Fields the answer did not carry are undefined. */
export interface RateLimitInfo {
  /** HTTP status of the answer. */
  readonly status: number;
  /** `X-RateLimit-Limit`: the limit of the binding window. */
  readonly limit: number | undefined;
  /** `X-RateLimit-Remaining`: requests left in the binding window after this one. */
  readonly remaining: number | undefined;
  /** `X-RateLimit-Reset`: Unix time (seconds) at which the binding window's fixed window ends. */
  readonly reset: number | undefined;
  /** `RateLimit-Policy`, parsed (the only one present on a 503 whose counts are unknown). */
  readonly policy: readonly RateLimitPolicyItem[] | undefined;
  /** `RateLimit`, parsed: both windows, binding window first. */
  readonly windows: readonly RateLimitWindow[] | undefined;
  /** `Retry-After`, in seconds. */
  readonly retryAfterSeconds: number | undefined;
  /** Local time (ms since the epoch) at which the answer arrived. */
  readonly receivedAt: number;
}

const NON_NEGATIVE_INTEGER = /^[0-9]{1,15}$/;

function integerHeader(headers: Headers, name: string): number | undefined {
  const value = headers.get(name)?.trim();
  return value !== undefined && NON_NEGATIVE_INTEGER.test(value) ? Number(value) : undefined;
}

/** `Retry-After` in seconds: delay-seconds or an HTTP-date (RFC 9110). */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (NON_NEGATIVE_INTEGER.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/**
 * Items of an IETF RateLimit field: `"minute";q=60;w=60, "day";q=1000;w=86400`. Items that do
 * not parse are skipped.
 */
function parseItems(value: string | null): { name: string; params: Map<string, number> }[] {
  if (value === null) return [];
  const items = [];
  for (const item of value.split(',')) {
    const [rawName, ...rawParams] = item.split(';').map((part) => part.trim());
    if (!rawName) continue;
    const name = rawName.replace(/^"(.*)"$/, '$1');
    const params = new Map<string, number>();
    for (const param of rawParams) {
      const match = /^([a-z][a-z0-9_.*-]*)=([0-9]{1,15})$/.exec(param);
      if (match) params.set(match[1] as string, Number(match[2]));
    }
    items.push({ name, params });
  }
  return items;
}

export function parsePolicy(value: string | null): RateLimitPolicyItem[] | undefined {
  const items = parseItems(value).flatMap(({ name, params }) => {
    const quota = params.get('q');
    const windowSeconds = params.get('w');
    return quota === undefined || windowSeconds === undefined
      ? []
      : [{ name, quota, windowSeconds }];
  });
  return items.length > 0 ? items : undefined;
}

export function parseWindows(value: string | null): RateLimitWindow[] | undefined {
  const items = parseItems(value).flatMap(({ name, params }) => {
    const remaining = params.get('r');
    const resetSeconds = params.get('t');
    return remaining === undefined || resetSeconds === undefined
      ? []
      : [{ name, remaining, resetSeconds }];
  });
  return items.length > 0 ? items : undefined;
}

/** The rate-limit headers of an answer; undefined when it carries none of them. */
export function readRateLimit(
  headers: Headers,
  status: number,
  receivedAt: number,
): RateLimitInfo | undefined {
  const info: RateLimitInfo = {
    status,
    limit: integerHeader(headers, 'x-ratelimit-limit'),
    remaining: integerHeader(headers, 'x-ratelimit-remaining'),
    reset: integerHeader(headers, 'x-ratelimit-reset'),
    policy: parsePolicy(headers.get('ratelimit-policy')),
    windows: parseWindows(headers.get('ratelimit')),
    retryAfterSeconds: parseRetryAfter(headers.get('retry-after'), receivedAt),
    receivedAt,
  };
  const any =
    info.limit !== undefined ||
    info.remaining !== undefined ||
    info.reset !== undefined ||
    info.policy !== undefined ||
    info.windows !== undefined;
  return any ? info : undefined;
}

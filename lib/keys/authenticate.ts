import type { CallOptions } from '../failures.ts';
import { isPlanName } from '../limits/plans.ts';
import { hashApiKey, isWellFormedApiKey, parseBearerToken } from './api-key.ts';
import { isUsable, limitsOf, type Caller } from './key-record.ts';
import type { KeyStore } from './key-store.ts';

/**
 * The caller behind an Authorization header, or undefined when the header is not
 * `Bearer <token>` or the key is unknown, revoked or expired.
 */
export async function authenticate(
  store: KeyStore,
  authorization: string | undefined,
  now: Date,
  options: CallOptions = {},
): Promise<Caller | undefined> {
  const token = parseBearerToken(authorization);
  // Every stored key is in the service's format (the CLI and `--keys` accept no other): a token
  // that fails its checksum is refused without a lookup.
  if (token === undefined || !isWellFormedApiKey(token)) return undefined;
  const record = await store.findByHash(hashApiKey(token), options);
  if (!record || !isUsable(record, now)) return undefined;
  const limits = limitsOf(record);
  // The store vouches for enterprise limits (a record without them is malformed data).
  if (!limits) throw new Error(`Key ${record.keyId} has no limits`);
  return { keyId: record.keyId, plan: record.plan, limits };
}

/** The caller as the flat string map an API Gateway authorizer context can carry. */
export function callerToContext(caller: Caller): Record<string, string> {
  return {
    keyId: caller.keyId,
    plan: caller.plan,
    perMinute: String(caller.limits.perMinute),
    perDay: String(caller.limits.perDay),
  };
}

/** The caller from an authorizer context (values arrive as strings), or undefined. */
export function callerFromContext(
  context: Record<string, unknown> | null | undefined,
): Caller | undefined {
  if (!context) return undefined;
  const { keyId, plan } = context;
  const perMinute = Number(context.perMinute);
  const perDay = Number(context.perDay);
  if (typeof keyId !== 'string' || !isPlanName(plan)) return undefined;
  if (!Number.isInteger(perMinute) || !Number.isInteger(perDay)) return undefined;
  return { keyId, plan, limits: { perMinute, perDay } };
}

import type { CallOptions } from '../failures.ts';
import { isPlanName } from '../limits/plans.ts';
import { hashApiKey, isWellFormedApiKey, parseBearerToken } from './api-key.ts';
import { isUsable, limitsOf, permissionsOf, type Caller } from './key-record.ts';
import type { KeyStore } from './key-store.ts';
import { ALL_PERMISSIONS, formatPermissions, parsePermissions } from './permissions.ts';

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
  return { keyId: record.keyId, plan: record.plan, limits, permissions: permissionsOf(record) };
}

/** The caller as the flat string map an API Gateway authorizer context can carry. */
export function callerToContext(caller: Caller): Record<string, string> {
  return {
    keyId: caller.keyId,
    plan: caller.plan,
    perMinute: String(caller.limits.perMinute),
    perDay: String(caller.limits.perDay),
    permissions: formatPermissions(caller.permissions),
  };
}

/**
 * The caller from an authorizer context (values arrive as strings), or undefined. A context
 * without permissions is an answer of the authorizer from before permissions existed, which API
 * Gateway may still hold in its cache for the TTL after a deploy: its key may do everything, as
 * every key then could. Permissions that cannot be read make no caller (a bug: answered 500).
 */
export function callerFromContext(
  context: Record<string, unknown> | null | undefined,
): Caller | undefined {
  if (!context) return undefined;
  const { keyId, plan } = context;
  const perMinute = Number(context.perMinute);
  const perDay = Number(context.perDay);
  if (typeof keyId !== 'string' || !isPlanName(plan)) return undefined;
  if (!Number.isInteger(perMinute) || !Number.isInteger(perDay)) return undefined;
  const permissions =
    context.permissions === undefined
      ? ALL_PERMISSIONS
      : typeof context.permissions === 'string'
        ? parsePermissions(context.permissions)
        : undefined;
  if (!permissions) return undefined;
  return { keyId, plan, limits: { perMinute, perDay }, permissions };
}

/**
 * API Gateway's TOKEN authorizer as the local emulator (./gateway.ts) applies it: the answer the
 * authorizer must give (a principal, a policy, a flat context), whether that policy allows a
 * method ARN (an explicit Deny wins, then any Allow), and the answers — Allow and Deny alike —
 * cached per token for the TTL, in a cache of each stage's own (as API Gateway keeps one per
 * stage: a stage-wide policy of one stage never answers for another). `Unauthorized` is answered
 * 401; a failure, a timeout or an unusable answer is AUTHORIZER_CONFIGURATION_ERROR; neither is
 * cached.
 */
import type { GatewayResponseType } from '../lib/api/gateway-responses.ts';
import type { Invoker } from './invoker.ts';

export interface AuthorizerResult {
  readonly principalId: string;
  readonly policyDocument: {
    Statement: { Effect: string; Action: string | string[]; Resource: string | string[] }[];
  };
  readonly context?: Record<string, string | number | boolean>;
}

export type Authorization =
  | { ok: true; result: AuthorizerResult }
  | { ok: false; answer: GatewayResponseType; principalId?: string };

export function isAuthorizerResult(value: unknown): value is AuthorizerResult {
  const r = value as AuthorizerResult | undefined;
  return (
    typeof r?.principalId === 'string' &&
    Array.isArray(r.policyDocument?.Statement) &&
    (r.context === undefined ||
      Object.values(r.context).every((v) => ['string', 'number', 'boolean'].includes(typeof v)))
  );
}

function wildcardMatch(pattern: string, value: string): boolean {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`).test(value);
}

const INVOKE_ACTIONS = ['execute-api:Invoke', 'execute-api:*', '*'];

/** Whether a policy allows the method ARN: an explicit Deny wins, then any Allow. */
export function policyAllows(result: AuthorizerResult, methodArn: string): boolean {
  let allowed = false;
  for (const { Effect, Action, Resource } of result.policyDocument.Statement) {
    if (![Action].flat().some((action) => INVOKE_ACTIONS.includes(action))) continue;
    if (![Resource].flat().some((resource) => wildcardMatch(resource, methodArn))) continue;
    if (Effect === 'Deny') return false;
    if (Effect === 'Allow') allowed = true;
  }
  return allowed;
}

export interface TokenAuthorizerOptions {
  readonly invoker: Invoker;
  /** How long an answer is cached; 0 turns the cache off. */
  readonly ttlSeconds: number;
  /** How long the authorizer may run. */
  readonly timeoutMs: number;
  readonly now: () => number;
}

/**
 * The authorizer's verdict on a token for a method ARN of a stage: its cached answer, or a new
 * one.
 */
export function tokenAuthorizer(
  options: TokenAuthorizerOptions,
): (token: string, methodArn: string, stage: string) => Promise<Authorization> {
  const { invoker, ttlSeconds, timeoutMs, now } = options;
  const cache = new Map<string, { result: AuthorizerResult; expires: number }>();
  return async (token, methodArn, stage) => {
    const cacheKey = `${stage} ${token}`;
    const cached = ttlSeconds > 0 ? cache.get(cacheKey) : undefined;
    let result = cached && cached.expires > now() ? cached.result : undefined;
    if (!result) {
      const invocation = await invoker.invoke(
        'authorizer',
        { type: 'TOKEN', authorizationToken: token, methodArn },
        { timeoutMs },
      );
      if (invocation.kind === 'failed' && invocation.message === 'Unauthorized') {
        return { ok: false, answer: 'UNAUTHORIZED' };
      }
      // Any other failure, a timeout or an unusable answer: not cached.
      if (invocation.kind !== 'returned' || !isAuthorizerResult(invocation.result)) {
        return { ok: false, answer: 'AUTHORIZER_CONFIGURATION_ERROR' };
      }
      result = invocation.result;
      if (ttlSeconds > 0) cache.set(cacheKey, { result, expires: now() + ttlSeconds * 1000 });
    }
    return policyAllows(result, methodArn)
      ? { ok: true, result }
      : { ok: false, answer: 'ACCESS_DENIED', principalId: result.principalId };
  };
}

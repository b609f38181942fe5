/**
 * The deploy check: who the pre-traffic hook's probes are (functions/deploy-hooks/probes.ts), and
 * the order it cancels, facts the hooks, the functions and the stack share.
 *
 * - Its caller is an authorizer context no request through API Gateway can carry: API Gateway
 *   hands a function the context the authorizer returned, and the authorizer returns key ids of
 *   stored keys only, `key_` and letters and digits (lib/keys/lifecycle.ts); `deploy-check` is
 *   none. Only a direct invocation of a version (lambda:InvokeFunction, which the hooks' role has
 *   and callers have not) can present it.
 * - Its order stands in the deploy check's partition of the orders table
 *   (lib/dynamodb/tables.ts, DEPLOY_CHECK_PARTITIONS), which no list reads and no client's cancel
 *   reaches: a cancel from the deploy check's caller, and only from it, is a cancel there. The
 *   hook sets it back to pending through the store's own write of orders before each check.
 *
 * A function that sees this caller answers as it would any other, and marks what it logs and
 * counts as the deploy check's, not the callers' (functions/shared/invocation.ts).
 */

/** The deploy check's key id: not a key id any stored key can have. */
export const DEPLOY_CHECK_KEY_ID = 'deploy-check';

/**
 * The deploy check's caller as the authorizer's context carries one (strings): limits no check
 * reaches, counted by the rate limiter under its own key id.
 */
export const DEPLOY_CHECK_CALLER = {
  principalId: DEPLOY_CHECK_KEY_ID,
  keyId: DEPLOY_CHECK_KEY_ID,
  plan: 'enterprise',
  perMinute: '1000',
  perDay: '100000',
  // Both: the checks list and cancel (its own order). As the authorizer's context writes them.
  permissions: 'read,cancel',
} as const;

/** Whether a caller's key id is the deploy check's. */
export function isDeployCheck(keyId: unknown): boolean {
  return keyId === DEPLOY_CHECK_KEY_ID;
}

/**
 * The API id in the method ARN of the deploy check's authorizer events: API Gateway writes its
 * own API's id there (10 lower-case letters and digits), never this one.
 */
export const DEPLOY_CHECK_API_ID = 'deploy-check';

/**
 * Whether a function's event is the deploy check's: a proxy event from its caller, or a TOKEN
 * authorizer event for its API id.
 */
export function isDeployCheckEvent(event: unknown): boolean {
  const { requestContext, methodArn } = (event ?? {}) as {
    requestContext?: { authorizer?: { keyId?: unknown } | null };
    methodArn?: unknown;
  };
  if (isDeployCheck(requestContext?.authorizer?.keyId)) return true;
  return typeof methodArn === 'string' && methodArn.includes(`:${DEPLOY_CHECK_API_ID}/`);
}

/** The id of the deploy check's order, in its own partition (any int64 would do). */
export const DEPLOY_CHECK_ORDER_ID = 44n;

/** The deploy check's order as the hook sets it before each check: pending. */
export const DEPLOY_CHECK_ORDER = { id: DEPLOY_CHECK_ORDER_ID, status: 'pending' } as const;

/** The TOKEN authorizer's policy evaluation and answer cache, without a gateway around them. */
import { describe, expect, it } from 'vitest';
import type { Invocation, Invoker } from '../../local/invoker.ts';
import {
  isAuthorizerResult,
  policyAllows,
  tokenAuthorizer,
  type AuthorizerResult,
} from '../../local/token-authorizer.ts';

const ARN = 'arn:aws:execute-api:local:000000000000:local/v1/GET/store/orders';

type Statement = AuthorizerResult['policyDocument']['Statement'][number];
const policy = (...Statement: Statement[]): AuthorizerResult => ({
  principalId: 'key_1',
  policyDocument: { Statement },
});
const allow = (Resource: string | string[], Action: string | string[] = 'execute-api:Invoke') => ({
  Effect: 'Allow',
  Action,
  Resource,
});
const deny = (Resource: string) => ({ Effect: 'Deny', Action: 'execute-api:Invoke', Resource });

describe('a policy', () => {
  it.each([
    ['the exact method ARN', ARN],
    ['a wildcard over method and path', 'arn:aws:execute-api:local:000000000000:local/v1/*/*'],
    ['one of several resources', ['arn:aws:s3:::bucket', ARN]],
    ['every resource', '*'],
  ])('allows %s', (_, resource) => {
    expect(policyAllows(policy(allow(resource)), ARN)).toBe(true);
  });

  it.each(['execute-api:Invoke', 'execute-api:*', '*', ['s3:GetObject', 'execute-api:Invoke']])(
    'allows with the action %j',
    (action) => {
      expect(policyAllows(policy(allow(ARN, action)), ARN)).toBe(true);
    },
  );

  it('allows nothing without an Allow that covers the ARN', () => {
    expect(policyAllows(policy(), ARN)).toBe(false);
    expect(policyAllows(policy(allow(ARN, 's3:GetObject')), ARN)).toBe(false);
    expect(policyAllows(policy(allow(`${ARN}/1`)), ARN)).toBe(false);
  });

  it('lets an explicit Deny win over an Allow, in either order', () => {
    expect(policyAllows(policy(allow('*'), deny(ARN)), ARN)).toBe(false);
    expect(policyAllows(policy(deny(ARN), allow('*')), ARN)).toBe(false);
  });

  it('reads only `*` as a wildcard in a resource (dots and brackets are literal)', () => {
    const dotted = 'arn:aws:execute-api:local:000000000000:local/v1/GET/store.orders';
    expect(policyAllows(policy(allow(dotted)), ARN)).toBe(false);
    expect(policyAllows(policy(allow('arn:aws:execute-api:local:[0-9]*')), ARN)).toBe(false);
  });
});

describe('an authorizer answer', () => {
  it.each([
    ['a principal and a policy', { principalId: 'k', policyDocument: { Statement: [] } }, true],
    [
      'a flat context',
      { principalId: 'k', policyDocument: { Statement: [] }, context: { a: 'x', b: 1, c: true } },
      true,
    ],
    ['no principal', { policyDocument: { Statement: [] } }, false],
    ['no statements', { principalId: 'k', policyDocument: {} }, false],
    [
      'a nested context',
      { principalId: 'k', policyDocument: { Statement: [] }, context: { a: { b: 1 } } },
      false,
    ],
    ['nothing', undefined, false],
  ])('with %s is usable: %s', (_, value, usable) => {
    expect(isAuthorizerResult(value)).toBe(usable);
  });
});

describe('the answer cache', () => {
  /** An authorizer that allows every token, counting its invocations, on a clock of our own. */
  function counted(ttlSeconds: number) {
    const clock = { now: 0 };
    const calls: { token: string; timeoutMs: number }[] = [];
    const invoker: Invoker = {
      invoke: (_, event, options) => {
        calls.push({
          token: (event as { authorizationToken: string }).authorizationToken,
          timeoutMs: options.timeoutMs,
        });
        return Promise.resolve<Invocation>({ kind: 'returned', result: policy(allow('*')) });
      },
    };
    const authorize = tokenAuthorizer({
      invoker,
      ttlSeconds,
      timeoutMs: 3_000,
      now: () => clock.now,
    });
    return { authorize, calls, clock };
  }

  it('keeps an answer until the TTL has passed, not a millisecond longer', async () => {
    const { authorize, calls, clock } = counted(60);
    await authorize('a', ARN, 'v1');
    clock.now = 59_999;
    await authorize('a', ARN, 'v1');
    expect(calls).toHaveLength(1);
    clock.now = 60_000;
    expect(await authorize('a', ARN, 'v1')).toMatchObject({ ok: true });
    expect(calls).toEqual([
      { token: 'a', timeoutMs: 3_000 },
      { token: 'a', timeoutMs: 3_000 },
    ]);
  });

  it('asks every time with a TTL of 0', async () => {
    const { authorize, calls } = counted(0);
    await authorize('a', ARN, 'v1');
    await authorize('a', ARN, 'v1');
    expect(calls).toHaveLength(2);
  });

  it('keeps each stage’s answers apart, and a stage’s answer for all its routes', async () => {
    const { authorize, calls } = counted(60);
    await authorize('a', ARN, 'v1');
    await authorize(
      'a',
      'arn:aws:execute-api:local:000000000000:local/v1/DELETE/store/orders/1',
      'v1',
    );
    expect(calls).toHaveLength(1);
    await authorize('a', 'arn:aws:execute-api:local:000000000000:local/v2/GET/store/orders', 'v2');
    await authorize(
      'a',
      'arn:aws:execute-api:local:000000000000:local/v2/DELETE/store/orders/1',
      'v2',
    );
    expect(calls).toHaveLength(2);
  });
});

/** The time budgets' arithmetic (lib/config/budgets.ts). */
import { describe, expect, it } from 'vitest';
import { requestDeadline, TIME_BUDGETS } from '../../lib/config/budgets.ts';

const START = Date.UTC(2026, 10, 23, 12, 0, 0);

describe('a function’s deadline', () => {
  it('is requestMs after the request reached API Gateway', () => {
    expect(requestDeadline(START - 100, START)).toBe(START - 100 + TIME_BUDGETS.requestMs);
  });

  it.each([
    ['a slow key check', 2_400],
    ['an authorizer that used its whole budget', TIME_BUDGETS.authorizerMs],
    ['a cold start and a retried key read', 3_500],
  ])('leaves the function its floor after %s', (_, authorizerMs) => {
    expect(requestDeadline(START - authorizerMs, START)).toBe(START + TIME_BUDGETS.functionFloorMs);
  });

  it('counts from the function’s start when the event carries no request time', () => {
    expect(requestDeadline(undefined, START)).toBe(START + TIME_BUDGETS.requestMs);
    expect(requestDeadline(0, START)).toBe(START + TIME_BUDGETS.requestMs);
  });

  it('never counts from a request time in the future (a clock ahead)', () => {
    expect(requestDeadline(START + 60_000, START)).toBe(START + TIME_BUDGETS.requestMs);
  });
});

describe('the promise', () => {
  it('holds in the worst case: the authorizer’s whole budget, then the function’s floor', () => {
    const worstWork = Math.max(
      TIME_BUDGETS.requestMs,
      TIME_BUDGETS.authorizerMs + TIME_BUDGETS.functionFloorMs,
    );
    // What is left is for the invocations themselves and the answer.
    expect(TIME_BUDGETS.answerMs - worstWork).toBeGreaterThanOrEqual(500);
  });

  it('lets one attempt of a call that hangs end, and another start, within the floor', () => {
    expect(TIME_BUDGETS.functionFloorMs).toBeGreaterThan(TIME_BUDGETS.attemptMs);
    expect(TIME_BUDGETS.authorizerMs).toBeGreaterThan(TIME_BUDGETS.attemptMs);
  });
});

/**
 * One invocation's scope: all the functions keep for one request, made as the invocation starts
 * (`inInvocation`, before its middy chain) and read by every later step. It is carried by an
 * AsyncLocalStorage, never by module state: several invocations may run at once in one process
 * (Lambda Managed Instances), interleaved at every await, and each reads its own.
 *
 * Work a stream pulls on its reader's side (a list's later pages) runs outside the invocation's
 * chain of promises: it is bound back to it with `withinInvocation` (./list-body.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from 'aws-lambda';
import type { Caller } from '../../lib/keys/key-record.ts';
import type { CallRecord } from './dynamodb-calls.ts';
import type { Logger } from './logger.ts';

export interface Invocation {
  /** Its logger: each line carries the invocation's fields (./logger.ts). */
  readonly log: Logger;
  /** Its DynamoDB calls, for its line of calls (./dynamodb-calls.ts). */
  readonly calls: CallRecord;
}

/** What an HTTP function keeps for a request (./http-function.ts makes it). */
export interface HttpInvocation<Own = unknown> extends Invocation {
  /** The deadline of the request's DynamoDB work, shared by all its calls (lib/config/budgets.ts). */
  readonly signal: AbortSignal;
  /** Who calls, from the authorizer's context; none: a route without the authorizer (a bug). */
  readonly caller: Caller | undefined;
  /**
   * Set before the limiter counts when the function may answer without using the quota (a 304):
   * whether it will, once known (./rate-limit.ts).
   */
  freeAnswer?: Promise<boolean>;
  /** The rate-limit headers of the answer, once the limiter has decided (./rate-limit.ts). */
  rateLimitHeaders?: Readonly<Record<string, string>>;
  /** The function's own state: the list's request, a cancel started before the limiter. */
  own?: Own;
}

const invocations = new AsyncLocalStorage<Invocation>();

/** `handler`, each invocation run in the scope `start` makes for it. */
export function inInvocation<Event, Result>(
  start: (event: Event, context: Context) => Invocation,
  handler: (event: Event, context: Context) => Promise<Result>,
): (event: Event, context: Context) => Promise<Result> {
  return (event, context) => invocations.run(start(event, context), handler, event, context);
}

/** The invocation running now, if any. */
export function currentInvocation(): Invocation | undefined {
  return invocations.getStore();
}

/** The HTTP request running now; `Own` is the function's own state. */
export function httpInvocation<Own = unknown>(): HttpInvocation<Own> {
  const invocation = invocations.getStore();
  if (!invocation || !('signal' in invocation)) throw new Error('not in an HTTP invocation');
  return invocation as HttpInvocation<Own>;
}

/** The caller of a request; none is a bug (a route without the authorizer), answered 500. */
export function callerOf(invocation: HttpInvocation): Caller {
  if (invocation.caller) return invocation.caller;
  throw new Error('No caller in the authorizer context: is the function behind the authorizer?');
}

/**
 * `source`, run within the invocation running now whoever pulls it: a stream asks for its next
 * chunk from its reader's side, once the reader has taken the last.
 */
export function withinInvocation<T>(
  source: AsyncGenerator<T, void>,
): AsyncIterableIterator<T, void> {
  const invocation = invocations.getStore();
  const within = <R>(step: () => R): R => (invocation ? invocations.run(invocation, step) : step());
  return {
    next: () => within(() => source.next()),
    return: () => within(() => source.return()),
    throw: (error: unknown) => within(() => source.throw(error)),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

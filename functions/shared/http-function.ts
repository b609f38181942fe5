/**
 * An HTTP function: what it does, described once, run the same way for every function — decide,
 * then act:
 *
 *   1. the request (`HttpRequest`): the event, the caller the authorizer identified, the time it
 *      is served (`now`, read once) and the deadline of its DynamoDB work (`signal`), shared by
 *      every step below;
 *   2. parse: whether the caller's key may do what the operation does (its `permission`), then
 *      what the request asks, without any I/O. A request that cannot be served as asked (403 for
 *      a key without the permission, 400, 406, 503 for an index not deployed) is refused only
 *      after step 3: it counts like any other request, its answer carries the headers, and it
 *      is never answered free (a 304 would answer a key that may not read);
 *   3. decide: the rate limiter counts the request (./rate-limit.ts);
 *   4. act: the function's work and its answer, only once the request is admitted.
 *
 * A list's request may be conditional (`conditionalHttpFunction`): it is first admitted by the
 * key's free allowance and its check (the list's version) decides: a 304 is answered free; a
 * change is answered in full, counted like any other request. Where the version cannot decide (a
 * v2 page read from an index, tagged by its content) the page read within the allowance is the
 * check: a 304 is answered free, a change counted once read (a refused one is not sent). Without
 * the allowance (used up, or none) it is counted first, then checked.
 *
 * So a refused request (429) costs the store nothing but the limiter's own write: no order read,
 * no list version read, no version mark. Every answer to the identified caller carries the
 * decision's rate-limit headers, errors included.
 *
 * Around it, the middy chain every HTTP function shares, in the order middy runs it on an error:
 * the Error shaping and http-error-handler (./http-errors.ts), the time to the answer's first
 * byte (./first-byte.ts), then the line of the invocation's DynamoDB calls and its metrics
 * (./dynamodb-calls.ts); and each invocation in a scope of its own (./invocation.ts).
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { isConditional, type IfNoneMatch } from '../../lib/api/etag.ts';
import { withHeaders, type HttpResponse } from '../../lib/api/responses.ts';
import { requestDeadline, signalAt } from '../../lib/config/budgets.ts';
import { callerFromContext } from '../../lib/keys/authenticate.ts';
import type { Caller } from '../../lib/keys/key-record.ts';
import { refusalOf, type Permission } from '../../lib/keys/permissions.ts';
import { recordInvocation } from './dynamodb-calls.ts';
import { timeToFirstByte } from './first-byte.ts';
import { answeredWith, httpErrors } from './http-errors.ts';
import { perInvocation } from './invocation.ts';
import {
  countRequest,
  takeFreeRequest,
  type Admission,
  type RateLimitDependencies,
} from './rate-limit.ts';

/** What every step of a function gets of the request. */
export interface HttpRequest {
  readonly event: APIGatewayProxyEvent;
  /** The key that asks, as the authorizer identified it. */
  readonly caller: Caller;
  /** When the request is served (ms since the epoch): one reading of the clock for every step. */
  readonly now: number;
  /** The deadline of the request's DynamoDB work, shared by all its calls (lib/config/budgets.ts). */
  readonly signal: AbortSignal;
}

/** What an operation asks of every request: the permission its caller's key must hold. */
interface Permitted {
  /** What the caller's key must be allowed to do: a key without it is refused 403. */
  readonly permission: Permission;
}

/** An HTTP function: what it parses from a request, and what it does once admitted. */
export interface HttpOperation<Input, Answer> extends Permitted {
  /** What the request asks, parsed without I/O; throws the refusal of one that cannot be served. */
  readonly parse: (request: HttpRequest) => Input;
  /** The work, once the request is admitted, and its answer. */
  readonly act: (input: Input, request: HttpRequest) => Promise<Answer>;
}

/** The headers that validate an answer (ETag, Cache-Control, Vary). */
export type Validators = Readonly<Record<string, string>>;

/**
 * What a conditional request's check found: its 304, or the validators of its full answer (and
 * whatever else the check read that the answer needs: `Found`).
 */
export type Validated<Answer, Found extends object = object> =
  { readonly notModified: Answer } | Checked<Found>;

/**
 * What a check hands the full answer: the validators, and what else it found. `byContent`: the
 * check cannot tell whether the answer changed; the full answer, read, tells (its 304 is then the
 * full answer's: a v2 page read from an index).
 */
export type Checked<Found extends object = object> = {
  readonly validators: Validators;
  readonly byContent?: boolean;
} & Found;

/** A list's operation: its requests may be conditional (If-None-Match). */
export interface ConditionalOperation<
  Input extends { readonly condition: IfNoneMatch },
  Answer,
  Found extends object = object,
> extends Permitted {
  /** What the request asks, parsed without I/O; throws the refusal of one that cannot be served. */
  readonly parse: (request: HttpRequest) => Input;
  /** Once admitted: the answer's validators as the list stands now, or its 304. */
  readonly check: (input: Input, request: HttpRequest) => Promise<Validated<Answer, Found>>;
  /** The full answer, with what the check found. */
  readonly act: (input: Input, checked: Checked<Found>, request: HttpRequest) => Promise<Answer>;
}

type Asked<Input> =
  { readonly ok: true; readonly input: Input } | { readonly ok: false; readonly refusal: unknown };

/** What the request asks of an operation its key may use; else the refusal (403 first). */
function ask<Input>(
  operation: Permitted & { readonly parse: (request: HttpRequest) => Input },
  request: HttpRequest,
): Asked<Input> {
  const denied = refusalOf(request.caller, operation.permission);
  if (denied) return { ok: false, refusal: denied };
  try {
    return { ok: true, input: operation.parse(request) };
  } catch (refusal) {
    return { ok: false, refusal };
  }
}

/** What was asked, or the refusal thrown (once the request is counted). */
function given<Input>(asked: Asked<Input>): Input {
  if (!asked.ok) throw asked.refusal;
  return asked.input;
}

function requestOf(event: APIGatewayProxyEvent, deps: RateLimitDependencies): HttpRequest {
  const caller = callerFromContext(event.requestContext?.authorizer);
  // No caller: a route without the authorizer, a misconfiguration answered 500 and paged.
  if (!caller) {
    throw new Error('No caller in the authorizer context: is the function behind the authorizer?');
  }
  const now = deps.now?.() ?? Date.now();
  // The request's deadline, fixed before any work: every DynamoDB call of the request shares it.
  const deadline = requestDeadline(
    event.requestContext?.requestTimeEpoch,
    now,
    deps.requestBudgetMs,
  );
  return { event, caller, now, signal: signalAt(deadline, now) };
}

/** `answer`, once the rate limiter has counted and admitted the request, with its headers. */
async function counted<Body>(
  deps: RateLimitDependencies,
  request: HttpRequest,
  answer: () => Promise<HttpResponse<Body>>,
): Promise<HttpResponse<Body>> {
  const admission = await countRequest(deps.limiter(), request.caller, request.now, request.signal);
  return answeredWith(admission.headers, async () => {
    admission.admit();
    return withHeaders(await answer(), admission.headers);
  });
}

/** `serve` for every request, behind the chain every HTTP function shares (see the header). */
function served<Body>(
  deps: RateLimitDependencies,
  serve: (request: HttpRequest) => Promise<HttpResponse<Body>>,
): (event: APIGatewayProxyEvent, context: Context) => Promise<HttpResponse<Body>> {
  const chain = middy<APIGatewayProxyEvent, HttpResponse<Body>>()
    .use([recordInvocation(), timeToFirstByte(), ...httpErrors()])
    .handler((event) => serve(requestOf(event, deps)));
  return perInvocation(chain, (event) => event.requestContext?.requestId);
}

/**
 * The Lambda handler of an operation: its request parsed (the caller's permission, then what it
 * asks, without I/O), counted by the rate limiter, and, once admitted, the operation's work. Every
 * answer carries the limiter's rate-limit headers; every error is answered by the one HTTP error
 * mapping (./http-errors.ts), a refusal of the parse only once the request is counted.
 *
 * @example
 * ```typescript
 * // functions/cancel-order.ts, in short: DELETE /store/orders/{orderId}
 * import { noContent } from '../lib/api/responses.ts';
 * import { cancelOrder, parseOrderId } from '../lib/orders/operations.ts';
 * import { httpFunction } from './shared/http-function.ts';
 * import { httpStoresFromEnv } from './shared/stores.ts';
 *
 * const stores = httpStoresFromEnv();
 * export const handler = httpFunction(stores, {
 *   permission: 'cancel',
 *   // A malformed id is answered 400 INVALID_ORDER_ID, once the request is counted.
 *   parse: ({ event }) => parseOrderId(event.pathParameters?.orderId),
 *   act: async (id, { event, caller, now, signal }) => {
 *     const { requestId } = event.requestContext;
 *     const cancellation = { at: now, keyId: caller.keyId, requestId };
 *     await cancelOrder(stores.orders(), id, cancellation, { signal });
 *     return noContent();
 *   },
 * });
 * ```
 */
export function httpFunction<Input, Body>(
  deps: RateLimitDependencies,
  operation: HttpOperation<Input, HttpResponse<Body>>,
) {
  return served(deps, (request) => {
    const asked = ask(operation, request);
    return counted(deps, request, () => operation.act(given(asked), request));
  });
}

/**
 * The Lambda handler of a list's operation, whose requests may be conditional (If-None-Match):
 * parsed as `httpFunction`'s; a conditional request first within the key's free allowance, its
 * check deciding (a 304 is answered free, a change in full and counted); any other counted,
 * then checked, then answered.
 *
 * @example
 * ```typescript
 * // A list tagged by the list's version, as functions/list-orders.ts, in short.
 * import { parseIfNoneMatch } from '../lib/api/etag.ts';
 * import { conditionalHttpFunction } from './shared/http-function.ts';
 * import { httpStoresFromEnv } from './shared/stores.ts';
 * import { requestHeader, versionCheck, type ConditionalRequest } from './shared/validators.ts';
 *
 * const stores = httpStoresFromEnv();
 * export const handler = conditionalHttpFunction(
 *   { ...stores, freeAllowance: stores.limiter },
 *   {
 *     permission: 'read',
 *     parse: ({ event }) => ({
 *       condition: parseIfNoneMatch(requestHeader(event, 'if-none-match')),
 *     }),
 *     // Once admitted: the version read, and the 304 when If-None-Match has its tag.
 *     check: versionCheck<ConditionalRequest>(
 *       (options) => stores.orders().readListVersion(options),
 *       (_, version) => version.tag,
 *     ),
 *     act: async (_, { validators }) => ({ statusCode: 200, headers: validators, body: '[]' }),
 *   },
 * );
 * ```
 */
export function conditionalHttpFunction<
  Input extends { readonly condition: IfNoneMatch },
  Body,
  Found extends object = object,
>(deps: RateLimitDependencies, operation: ConditionalOperation<Input, HttpResponse<Body>, Found>) {
  const checkThenAct = async (input: Input, request: HttpRequest) => {
    const checked = await operation.check(input, request);
    if ('notModified' in checked) return checked.notModified;
    return operation.act(input, checked, request);
  };

  /**
   * Admitted free: a 304 is the free answer; a change is answered in full, counted. An answer
   * decided by its content is read within the allowance: its 304 free, a change counted.
   */
  const answerFree = async (input: Input, free: Admission, request: HttpRequest) => {
    const checked = await answeredWith(free.headers, () => {
      free.admit();
      return operation.check(input, request);
    });
    if ('notModified' in checked) return withHeaders(checked.notModified, free.headers);
    if (checked.byContent) {
      const answer = await answeredWith(free.headers, () => operation.act(input, checked, request));
      if (answer.statusCode === 304) return withHeaders(answer, free.headers);
      return counted(deps, request, () => Promise.resolve(answer));
    }
    return counted(deps, request, () => operation.act(input, checked, request));
  };

  return served(deps, async (request) => {
    const asked = ask(operation, request);
    if (asked.ok && isConditional(asked.input.condition) && deps.freeAllowance) {
      const { caller, now, signal } = request;
      const free = await takeFreeRequest(deps.freeAllowance(), caller, now, signal);
      if (free) return answerFree(asked.input, free, request);
    }
    return counted(deps, request, () => checkThenAct(given(asked), request));
  });
}

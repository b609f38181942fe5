/**
 * An HTTP function: what it does, described once (`HttpOperation`), run the same way for every
 * function — decide, then act:
 *
 *   1. read: what the request asks, without any I/O. A malformed request's refusal (400, 406)
 *      waits for step 2: it counts like any other request, and its answer carries the headers.
 *   2. decide: the rate limiter counts the request (./rate-limit.ts). A request that may be
 *      answered without using the plan's quota (a conditional list: 304) is first admitted by
 *      the key's free allowance, then checked (`free.answer`); when the check finds it must be
 *      answered in full, it is counted like any other.
 *   3. act: the function's work and its answer, only once the request is admitted.
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
import { withHeaders, type HttpResponse } from '../../lib/api/responses.ts';
import { requestDeadline, signalAt } from '../../lib/config/budgets.ts';
import { callerFromContext } from '../../lib/keys/authenticate.ts';
import { recordInvocation } from './dynamodb-calls.ts';
import { timeToFirstByte } from './first-byte.ts';
import { answeredWith, httpErrors } from './http-errors.ts';
import { perInvocation } from './invocation.ts';
import { countRequest, takeFreeRequest, type RateLimitDependencies } from './rate-limit.ts';

/** What the steps of a function get of the request besides what it asks. */
export interface HttpRequest {
  readonly event: APIGatewayProxyEvent;
  /** The deadline of the request's DynamoDB work, shared by all its calls (lib/config/budgets.ts). */
  readonly signal: AbortSignal;
}

/** What a request that may be answered free (a conditional request) does before it is counted. */
export interface FreeAnswer<Input, Answer> {
  /** Whether this request may be answered free. */
  readonly applies: (input: Input) => boolean;
  /**
   * Once the key's free allowance admitted it: the free answer, or what `act` goes on from when
   * the answer is not the free one (the check found a change: the request is counted).
   */
  readonly answer: (
    input: Input,
    request: HttpRequest,
  ) => Promise<{ readonly free: Answer } | { readonly counted: Input }>;
}

/** An HTTP function: what it reads from a request, what it does once admitted, how it answers. */
export interface HttpOperation<Input, Answer> {
  /** What the request asks, without I/O; throws the refusal of a malformed request. */
  readonly read: (event: APIGatewayProxyEvent) => Input;
  /** For requests that may be answered without using the plan's quota. */
  readonly free?: FreeAnswer<Input, Answer>;
  /** The work, once the request is admitted, and its answer. */
  readonly act: (input: Input, request: HttpRequest) => Promise<Answer>;
}

type Asked<Input> =
  { readonly ok: true; readonly input: Input } | { readonly ok: false; readonly refusal: unknown };

function ask<Input>(
  operation: HttpOperation<Input, unknown>,
  event: APIGatewayProxyEvent,
): Asked<Input> {
  try {
    return { ok: true, input: operation.read(event) };
  } catch (refusal) {
    return { ok: false, refusal };
  }
}

export function httpFunction<Input, Body>(
  deps: RateLimitDependencies,
  operation: HttpOperation<Input, HttpResponse<Body>>,
): (event: APIGatewayProxyEvent, context: Context) => Promise<HttpResponse<Body>> {
  const serve = async (event: APIGatewayProxyEvent): Promise<HttpResponse<Body>> => {
    const now = deps.now?.() ?? Date.now();
    // The request's deadline, fixed before any work: every DynamoDB call of the request shares it.
    const deadline = requestDeadline(
      event.requestContext?.requestTimeEpoch,
      now,
      deps.requestBudgetMs,
    );
    const request: HttpRequest = { event, signal: signalAt(deadline, now) };
    const caller = callerFromContext(event.requestContext?.authorizer);
    // No caller: a route without the authorizer, a misconfiguration answered 500 and paged.
    if (!caller) {
      throw new Error(
        'No caller in the authorizer context: is the function behind the authorizer?',
      );
    }
    const asked = ask(operation, event);

    // A request that may be answered free: admitted by the key's free allowance, then checked.
    let continued: { readonly input: Input } | undefined;
    const { free } = operation;
    if (asked.ok && free?.applies(asked.input) && deps.freeAllowance) {
      const allowed = await takeFreeRequest(deps.freeAllowance(), caller, now, request.signal);
      if (allowed) {
        const checked = await answeredWith(allowed.headers, () => {
          allowed.admit();
          return free.answer(asked.input, request);
        });
        if ('free' in checked) return withHeaders(checked.free, allowed.headers);
        continued = { input: checked.counted };
      }
    }

    const counted = await countRequest(deps.limiter(), caller, now, request.signal);
    return answeredWith(counted.headers, async () => {
      counted.admit();
      if (!asked.ok) throw asked.refusal;
      const input = continued ? continued.input : asked.input;
      return withHeaders(await operation.act(input, request), counted.headers);
    });
  };
  const chain = middy<APIGatewayProxyEvent, HttpResponse<Body>>()
    .use([recordInvocation(), timeToFirstByte(), ...httpErrors()])
    .handler(serve);
  return perInvocation(chain, (event) => event.requestContext?.requestId);
}

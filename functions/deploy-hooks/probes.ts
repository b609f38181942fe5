/**
 * The probes: what each function's new version is asked before any traffic moves, and which
 * answers pass — its real work, on data no client sees (lib/deploy-check.ts):
 *
 * - cancelOrder: the deploy check's order, set back to pending through the store's own write of
 *   orders, is cancelled (204: a status read, the list version's mark, the conditional write, the
 *   release), cancelled again (204: the idempotent path), then an id no order has (404
 *   ORDER_NOT_FOUND). All in the deploy check's partition of the orders table: no client's order
 *   is read or changed, and no list shows it. What is judged is the function's HTTP answers, not
 *   how a cancel is stored.
 * - listOrders: the whole list, read to its end (200, a JSON array; a list longer than the
 *   probe's budget passes if it was still flowing without error), then asked again with its ETag:
 *   304 with that ETag, or 200 with another one (the list changed meanwhile) and the whole list.
 *   A body that stalls (no byte for BODY_IDLE_MS) or that the call's budget cuts fails.
 * - listOrderPages: a first page of 100 (200, `{"orders": [...]}`), then `If-None-Match: *`
 *   (304, or 200 and a page while a write's lease runs).
 * - authorizer: a well-formed key no one holds (a Deny), then a key of the deploy check's own,
 *   stored for the probe, expiring in minutes and revoked after it (an Allow naming its key id):
 *   an authorizer that denies every key fails. Its plaintext lives in the hook's memory only. A
 *   repeated probe (the watch's, ./bake.ts) asks only the Deny: no key stored at every read.
 *
 * The HTTP probes are proxy events as API Gateway sends them, from the deploy check's caller
 * (whose RateLimits counter the rate limiter writes). Every call has its time budget (at most
 * CALL_BUDGET_MS, and no later than the probe's deadline, which the hook sets before its own
 * timeout).
 */
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { randomBytes } from 'node:crypto';
import { API_STAGE, API_STAGES, STAGE_ROUTES, type OperationId } from '../../lib/api/routes.ts';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import {
  DEPLOY_CHECK_API_ID,
  DEPLOY_CHECK_CALLER,
  DEPLOY_CHECK_ORDER,
  DEPLOY_CHECK_ORDER_ID,
} from '../../lib/deploy-check.ts';
import type { FunctionName } from '../../lib/functions.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import type { ApiKeyRecord } from '../../lib/keys/key-record.ts';
import { newKeyRecord } from '../../lib/keys/plaintext-keys.ts';
import type { Order } from '../../lib/orders/order.ts';
import { restProxyEvent } from '../shared/rest-event.ts';
import { callVersion, OutOfBudget, within, type StreamedBody } from './call-version.ts';

/** What a probe got back: its calls' answers in order, and whether they all passed. */
export interface ProbeAnswer {
  readonly ok: boolean;
  readonly got: string;
  /** The calls of the version it made. */
  readonly calls: number;
  /** Whether the answer it did not expect was a 503 (a DynamoDB call of the version's failed). */
  readonly unavailable: boolean;
}

/** The longest a probe's call may take (a cold start and the function's own 10 s timeout). */
export const CALL_BUDGET_MS = 30_000;
/** How long the list's body is read after its first byte, at most. */
export const LIST_BODY_BUDGET_MS = 45_000;
/**
 * The longest wait for a streamed body's next byte: a list page's own budget (it ends a stream
 * that stalls longer, lib/config/budgets.ts) and 2 s for the page to reach the probe.
 */
export const BODY_IDLE_MS = TIME_BUDGETS.listPageMs + 2_000;
/** How long the authorizer's probe key works, at the longest (it is revoked after the probe). */
export const PROBE_KEY_LIFETIME_MS = 10 * 60_000;

/** What the probes need besides the version: the stores of the deploy check's data. */
export interface ProbeDependencies {
  readonly lambda: LambdaClient;
  /** The deploy check's partition of the orders table (lib/deploy-check.ts). */
  readonly deployCheckOrders: () => { putOrders(orders: readonly Order[]): Promise<void> };
  /** The API keys, where the authorizer's probe key is stored for the probe. */
  readonly keys: () => {
    create(record: ApiKeyRecord): Promise<boolean>;
    revoke(record: ApiKeyRecord, revokedAt: string): Promise<boolean>;
  };
  readonly now: () => number;
}

/** The version a probe calls, and by when it must be done. */
export interface ProbeTarget {
  readonly functionName: string;
  readonly version: string;
  readonly requestId: string;
  /** Epoch ms by which every call has answered (before the hook's own timeout). */
  readonly deadline: number;
}

/** A call's answer that its probe did not expect (its status, if it had one): the probe stops there. */
class Unexpected extends Error {
  readonly status: number | undefined;

  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** One probe's run: its calls, one after another, each judged; what each got, in words. */
class ProbeRun {
  readonly got: string[] = [];
  private calls = 0;
  readonly deps: ProbeDependencies;
  readonly target: ProbeTarget;
  /** A probe repeated while the new version is watched (./bake.ts), not its first. */
  readonly repeat: boolean;

  constructor(deps: ProbeDependencies, target: ProbeTarget, repeat: boolean) {
    this.deps = deps;
    this.target = target;
    this.repeat = repeat;
  }

  /** A call of the deploy check's stores, done before the deadline, or Unexpected. */
  async store<T>(what: string, work: () => Promise<T>): Promise<T> {
    const left = this.target.deadline - this.deps.now();
    if (left <= 0) throw new Unexpected(`out of time before ${what}`);
    try {
      return await within(AbortSignal.timeout(Math.min(CALL_BUDGET_MS, left)), work());
    } catch (error) {
      if (error instanceof OutOfBudget) throw new Unexpected(`${what}: no answer in time`);
      throw error;
    }
  }

  /** The calls of the version made so far. */
  get made(): number {
    return this.calls;
  }

  /** Calls the version, and judges its answer: a word for the line, or Unexpected. */
  async call(
    options: { event: unknown; streaming: boolean; bodyBudgetMs?: number },
    judge: (answer: Record<string, unknown>, body: StreamedBody | undefined) => string,
  ): Promise<Record<string, unknown>> {
    const left = this.target.deadline - this.deps.now();
    if (left <= 0) throw new Unexpected('out of time before its next call');
    const answered = await callVersion(this.deps.lambda, {
      functionName: this.target.functionName,
      version: this.target.version,
      event: options.event,
      streaming: options.streaming,
      budgetMs: Math.min(CALL_BUDGET_MS + (options.bodyBudgetMs ?? 0), left),
      ...(options.bodyBudgetMs !== undefined ? { bodyBudgetMs: options.bodyBudgetMs } : {}),
      ...(options.streaming ? { idleMs: BODY_IDLE_MS } : {}),
    });
    this.calls++;
    if ('failed' in answered) throw new Unexpected(answered.failed);
    this.got.push(judge(answered.answer, answered.body));
    return answered.answer;
  }

  /** A proxy event of an HTTP operation, from the deploy check's caller. */
  httpEvent(
    operationId: OperationId,
    options: {
      pathParameters?: Record<string, string>;
      headers?: Record<string, string>;
      query?: Record<string, string>;
    },
  ) {
    const stage = API_STAGES.find((s) =>
      STAGE_ROUTES[s].some((r) => r.operationId === operationId),
    )!;
    const route = STAGE_ROUTES[stage].find((r) => r.operationId === operationId)!;
    const pathParameters = options.pathParameters ?? null;
    return {
      streaming: route.streaming,
      event: restProxyEvent({
        stage,
        method: route.method,
        resource: route.path,
        path: route.path.replace(/\{(\w+)\}/g, (_, name: string) => pathParameters![name]!),
        pathParameters,
        headers: options.headers ?? {},
        query: options.query ?? null,
        authorizer: DEPLOY_CHECK_CALLER,
        requestId: `${this.target.requestId}-${this.calls + 1}`,
        requestTimeEpoch: this.deps.now(),
      }),
    };
  }
}

/** An order id no order of the deploy check's partition has, to all odds: a random int64. */
function unknownOrderId(): string {
  return BigInt.asIntN(64, randomBytes(8).readBigUInt64BE()).toString();
}

/** The HTTP status of a proxy result or prelude, and its error code when it has one. */
function statusOf(answer: Record<string, unknown>): { status: number; word: string } {
  const status = Number(answer.statusCode);
  const body = typeof answer.body === 'string' ? answer.body : '';
  const code = /"code":"(\w+)"/.exec(body)?.[1];
  return { status, word: `${status}${code ? ` ${code}` : ''}` };
}

const statusIs =
  (...expected: number[]) =>
  (answer: Record<string, unknown>): string => {
    const { status, word } = statusOf(answer);
    if (!expected.includes(status)) throw new Unexpected(word, status);
    return word;
  };

/** A header of a proxy result or prelude (API Gateway's case-insensitive lookup). */
function header(answer: Record<string, unknown>, name: string): string | undefined {
  const headers = (answer.headers ?? {}) as Record<string, string>;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : headers[key];
}

/** The effect of an authorizer's policy, and whose it is. */
function policyOf(answer: Record<string, unknown>): { effect: string; principal: unknown } {
  const statement = (answer.policyDocument as { Statement?: { Effect?: string }[] } | undefined)
    ?.Statement?.[0];
  return { effect: statement?.Effect ?? 'none', principal: answer.principalId };
}

/** A TOKEN authorizer event for the deploy check's API id (lib/deploy-check.ts). */
function tokenEvent(key: string) {
  return {
    type: 'TOKEN',
    authorizationToken: `Bearer ${key}`,
    methodArn: `arn:aws:execute-api:${process.env.AWS_REGION ?? 'local'}:000000000000:${DEPLOY_CHECK_API_ID}/${API_STAGE}/GET/store/orders`,
  };
}

/** A list's body as a probe reads it: a JSON array, whole, or still flowing at its budget's end. */
function wholeList(word: string, body: StreamedBody | undefined): string {
  if (!body || body.error) throw new Unexpected(`${word}, body failed: ${body?.error}`);
  if (!body.head.trimStart().startsWith('[')) {
    throw new Unexpected(`${word}, not a JSON array: ${body.head.slice(0, 40)}`);
  }
  if (body.cut) {
    return `${word} (${body.bytes} bytes read in ${LIST_BODY_BUDGET_MS} ms, still flowing)`;
  }
  if (!body.tail.trimEnd().endsWith(']')) {
    throw new Unexpected(`${word}, an unfinished array: …${body.tail}`);
  }
  return `${word} (${body.bytes} bytes, whole)`;
}

/** The probe of each function: its calls, in order. */
const PROBES: Readonly<Record<FunctionName, (run: ProbeRun) => Promise<void>>> = {
  cancelOrder: async (run) => {
    await run.store("the deploy check's order set pending", () =>
      run.deps.deployCheckOrders().putOrders([DEPLOY_CHECK_ORDER]),
    );
    run.got.push('deploy-check order pending');
    const cancel = (orderId: string) =>
      run.httpEvent('cancelOrder', { pathParameters: { orderId } });
    // Pending → cancelled, then cancelled again: 204 both times.
    await run.call(cancel(String(DEPLOY_CHECK_ORDER_ID)), statusIs(204));
    await run.call(cancel(String(DEPLOY_CHECK_ORDER_ID)), statusIs(204));
    await run.call(cancel(unknownOrderId()), statusIs(404));
  },

  listOrders: async (run) => {
    const list = run.httpEvent('listOrders', { headers: { 'Accept-Encoding': 'identity' } });
    const first = await run.call({ ...list, bodyBudgetMs: LIST_BODY_BUDGET_MS }, (answer, body) =>
      wholeList(statusIs(200)(answer), body),
    );
    const tag = header(first, 'etag');
    if (tag === undefined) throw new Unexpected('200 without an ETag');
    // The answer it asked for: a 304 of that tag, or the list changed: another tag, the whole list.
    await run.call(
      {
        ...run.httpEvent('listOrders', {
          headers: { 'Accept-Encoding': 'identity', 'If-None-Match': tag },
        }),
        bodyBudgetMs: LIST_BODY_BUDGET_MS,
      },
      (answer, body) => {
        const word = statusIs(304, 200)(answer);
        const answered = header(answer, 'etag');
        if (word === '304') {
          if (answered !== tag) {
            throw new Unexpected(`304 with ETag ${answered ?? 'none'}, not the ${tag} asked about`);
          }
          if (body?.error || (body?.bytes ?? 0) > 0) {
            throw new Unexpected(`304 with a body: ${body?.error ?? `${body?.bytes} bytes`}`);
          }
          return word;
        }
        if (answered === tag) {
          throw new Unexpected(
            `200 with the ETag ${tag} it was asked about: If-None-Match ignored`,
          );
        }
        return wholeList(word, body);
      },
    );
  },

  listOrderPages: async (run) => {
    await run.call(
      run.httpEvent('listOrderPages', {
        headers: { 'Accept-Encoding': 'identity' },
        query: { pageSize: '100' },
      }),
      (answer, body) => {
        const word = statusIs(200)(answer);
        if (!body?.complete || !body.head.includes('"orders":[')) {
          throw new Unexpected(`${word}, not a page: ${body?.error ?? body?.head.slice(0, 40)}`);
        }
        return `${word} (a page of ${body.bytes} bytes)`;
      },
    );
    await run.call(
      run.httpEvent('listOrderPages', {
        headers: { 'Accept-Encoding': 'identity', 'If-None-Match': '*' },
        query: { pageSize: '1' },
      }),
      (answer, body) => {
        const word = statusIs(304, 200)(answer);
        if (word === '304') {
          if (body?.error || (body?.bytes ?? 0) > 0) {
            throw new Unexpected(`304 with a body: ${body?.error ?? `${body?.bytes} bytes`}`);
          }
          return word;
        }
        if (!body?.complete || !body.head.includes('"orders":[')) {
          throw new Unexpected(`${word}, not a page: ${body?.error ?? body?.head.slice(0, 40)}`);
        }
        return `${word} (a page of ${body.bytes} bytes)`;
      },
    );
  },

  authorizer: async (run) => {
    const deny = (answer: Record<string, unknown>) => {
      const { effect } = policyOf(answer);
      if (effect !== 'Deny') throw new Unexpected(`policy ${effect} for a key no one holds`);
      return 'Deny for a key no one holds';
    };
    await run.call({ event: tokenEvent(generateApiKey()), streaming: false }, deny);
    // A repeated probe (the watch's): no key stored each time.
    if (run.repeat) return;
    // A key of the deploy check's own, for this probe only.
    const now = new Date(run.deps.now());
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      // It may only read: the probe needs the authorizer's Allow, never a cancel.
      ...newKeyRecord(
        { key, plan: 'free', label: 'deploy check (pre-traffic probe)', permissions: ['read'] },
        now,
      ),
      expiresAt: new Date(now.getTime() + PROBE_KEY_LIFETIME_MS).toISOString(),
    };
    if (!(await run.store('the probe key stored', () => run.deps.keys().create(record)))) {
      throw new Unexpected('probe key not stored');
    }
    try {
      await run.call({ event: tokenEvent(key), streaming: false }, (answer) => {
        const { effect, principal } = policyOf(answer);
        if (effect !== 'Allow' || principal !== record.keyId) {
          throw new Unexpected(`policy ${effect} for a stored key`);
        }
        return 'Allow for a stored key';
      });
    } finally {
      // Revoked at once; if not, it stops working at its expiry all the same.
      const revokedAt = new Date(run.deps.now()).toISOString();
      const revoked = await run
        .store('the probe key revoked', () => run.deps.keys().revoke(record, revokedAt))
        .catch(() => false);
      if (!revoked) run.got.push(`probe key not revoked: it expires at ${record.expiresAt}`);
    }
  },
};

/**
 * Calls the new version of a group's function with its probe, and judges the answers.
 * `repeat`: a probe of the watch after the shift (./bake.ts), not the first.
 */
export async function probe(
  deps: ProbeDependencies,
  group: FunctionName,
  target: ProbeTarget,
  options: { readonly repeat?: boolean } = {},
): Promise<ProbeAnswer> {
  const run = new ProbeRun(deps, target, options.repeat ?? false);
  try {
    await PROBES[group](run);
    return { ok: true, got: run.got.join('; '), calls: run.made, unavailable: false };
  } catch (error) {
    if (!(error instanceof Unexpected)) throw error;
    return {
      ok: false,
      got: [...run.got, error.message].join('; '),
      calls: run.made,
      unavailable: error.status === 503,
    };
  }
}

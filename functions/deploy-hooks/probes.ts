/**
 * The probes: what each function's new version is asked before any traffic moves, and which
 * answers pass. Each reads its tables and changes no order: the authorizer gets a key no one
 * holds (a Deny), cancelOrder an order id no order has (404), the lists `If-None-Match: *` (304,
 * or 200). The HTTP probes are proxy events as API Gateway sends them, from PROBE_CALLER, whose
 * RateLimits counter the rate limiter writes.
 */
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { randomBytes } from 'node:crypto';
import { API_STAGE, API_STAGES, STAGE_ROUTES, type OperationId } from '../../lib/api/routes.ts';
import type { FunctionName } from '../../lib/functions.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { restProxyEvent } from '../shared/rest-event.ts';
import { callVersion } from './call-version.ts';
import type { DeployTarget } from './settings.ts';

/** What a probe got back: the HTTP status (or the authorizer's effect), or why it failed. */
export interface ProbeAnswer {
  readonly ok: boolean;
  readonly got: string;
}

interface Probe {
  /** Whether the function streams its answer (the lists): read as API Gateway reads it. */
  readonly streaming: boolean;
  readonly event: (requestId: string, now: number) => unknown;
  /** Judges a returned answer (a proxy result, a prelude, a policy). */
  readonly judge: (answer: Record<string, unknown>) => ProbeAnswer;
}

/** The caller the probes act as: no key of the store, limits no probe reaches. */
const PROBE_CALLER = {
  principalId: 'key_deployCheck',
  keyId: 'key_deployCheck',
  plan: 'enterprise',
  perMinute: '1000',
  perDay: '100000',
} as const;

/**
 * The probe of an HTTP operation: its proxy event in the first version that serves it, from
 * PROBE_CALLER, streamed as its route streams.
 */
function httpProbe(
  operationId: OperationId,
  options: {
    pathParameters?: () => Record<string, string>;
    headers?: Record<string, string>;
    query?: Record<string, string>;
  },
  judge: Probe['judge'],
): Probe {
  const stage = API_STAGES.find((s) => STAGE_ROUTES[s].some((r) => r.operationId === operationId))!;
  const route = STAGE_ROUTES[stage].find((r) => r.operationId === operationId)!;
  return {
    streaming: route.streaming,
    judge,
    event: (requestId, now) => {
      const pathParameters = options.pathParameters?.() ?? null;
      return restProxyEvent({
        stage,
        method: route.method,
        resource: route.path,
        path: route.path.replace(/\{(\w+)\}/g, (_, name: string) => pathParameters![name]!),
        pathParameters,
        headers: options.headers ?? {},
        query: options.query ?? null,
        authorizer: PROBE_CALLER,
        requestId,
        requestTimeEpoch: now,
      });
    },
  };
}

/** An order id no order has, to all odds: a random int64 (one in 2^63 per stored order). */
function probeOrderId(): string {
  return BigInt.asIntN(64, randomBytes(8).readBigUInt64BE()).toString();
}

const statusIs =
  (...expected: number[]) =>
  (answer: Record<string, unknown>): ProbeAnswer => {
    const status = Number(answer.statusCode);
    const body = typeof answer.body === 'string' ? answer.body : '';
    const code = /"code":"(\w+)"/.exec(body)?.[1];
    return { ok: expected.includes(status), got: `status ${status}${code ? ` ${code}` : ''}` };
  };

/** The call each function gets before any traffic moves. */
const PROBES: Readonly<Record<FunctionName, Probe>> = {
  authorizer: {
    streaming: false,
    // A well-formed key no one holds: the key store is read, and the answer is a Deny.
    event: () => ({
      type: 'TOKEN',
      authorizationToken: `Bearer ${generateApiKey()}`,
      methodArn: `arn:aws:execute-api:${process.env.AWS_REGION ?? 'local'}:000000000000:deploycheck/${API_STAGE}/GET/store/orders`,
    }),
    judge: (answer) => {
      const statement = (answer.policyDocument as { Statement?: { Effect?: string }[] } | undefined)
        ?.Statement?.[0];
      return { ok: statement?.Effect === 'Deny', got: `policy ${statement?.Effect ?? 'none'}` };
    },
  },
  // The rate limiter counts it, the orders table is asked, no order changes: 404.
  cancelOrder: httpProbe(
    'cancelOrder',
    { pathParameters: () => ({ orderId: probeOrderId() }) },
    statusIs(404),
  ),
  // The list's version is read and matches `*`: 304, no order read (200 while a write's lease runs).
  listOrders: httpProbe('listOrders', { headers: { 'If-None-Match': '*' } }, statusIs(304, 200)),
  // One order's page of the table (no index needed): the version is read and matches `*`, 304.
  listOrderPages: httpProbe(
    'listOrderPages',
    { headers: { 'If-None-Match': '*' }, query: { pageSize: '1' } },
    statusIs(304, 200),
  ),
};

/** Calls the new version of a group's function with its probe, and judges the answer. */
export async function probe(
  lambda: LambdaClient,
  group: FunctionName,
  target: DeployTarget,
  requestId: string,
  now: number,
): Promise<ProbeAnswer> {
  const { streaming, event, judge } = PROBES[group];
  const called = await callVersion(lambda, {
    functionName: target.functionName,
    version: target.version,
    event: event(requestId, now),
    streaming,
  });
  return 'failed' in called ? { ok: false, got: called.failed } : judge(called.answer);
}

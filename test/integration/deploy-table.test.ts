/**
 * The table of docs/deploy.md ("What each kind of broken version meets"), computed: four
 * versions of cancelOrder — every answer a 500, 3% of answers 500s, 5 times slower, a crash at
 * init — deployed against staging's and production's settings, at two rates of traffic.
 *
 * What is real: the versions (the real handler on DynamoDB Local behind the stand-in Lambda, a
 * version's failures counted as CloudWatch would — failed invocations, and its log lines that
 * the synthesized metric filter pattern matches — and its duration measured); the pre-traffic
 * hook's probe of each; the synthesized deployment alarms' expressions (evaluated minute by
 * minute on the figures the versions give at that traffic); the post-traffic hook's bake and
 * judgement (its own code, GetMetricData stubbed with the same figures as time passes on its
 * clock). What is a model: the traffic (steady, that many requests a minute; 10% of it on the
 * new version during production's canary, as CodeDeploy routes it), and CloudWatch having each
 * minute's figures at once (its delay, which AWS does not document, adds to every time here).
 */
import {
  DescribeAlarmsCommand,
  GetMetricDataCommand,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import {
  CreateAliasCommand,
  DeleteFunctionCommand,
  InvokeCommand,
  LambdaClient,
  ListAliasesCommand,
  ListVersionsByFunctionCommand,
  UpdateAliasCommand,
} from '@aws-sdk/client-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.LOG_LEVEL = 'INFO';
});
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { createDeployHooks } from '../../functions/deploy-hooks/hooks.ts';
import type { HookSettings } from '../../functions/deploy-hooks/settings.ts';
import { INTERNAL_ERROR_ANSWER_PATTERN } from '../../infra/alarms.ts';
import { stageConfig } from '../../infra/config.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { DEPLOY_CHECK_PARTITIONS } from '../../lib/dynamodb/tables.ts';
import { STAGES, type StageName } from '../../lib/deployment.ts';
import { FUNCTION_NAMES } from '../../lib/functions.ts';
import type { Order } from '../../lib/orders/order.ts';
import {
  answerHookCalls,
  capturedLines,
  matchesFilter,
  standInLambda,
  stubHookClients,
  verdictsOf,
  hookClients,
  type Invocation,
  type StandInDeployment,
} from '../support/deploy-stand-ins.ts';
import { alarmValue, type AlarmQuery } from '../support/metric-math.ts';
import { markdownTable } from '../support/runbook.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';
import { templates, testApp } from '../infra/support.ts';

const stubs = stubHookClients();
const { lambda, codeDeploy, autoScaling, cloudWatch } = stubs;

const FN = 'store-orders-table-cancelOrder';
const OLD = '6';
const NEW = '7';
const MINUTE = 60_000;
/** Requests a minute to cancelOrder, the two rates of the table. */
const RATES = [60, 1_200] as const;
/** The share of a canary's traffic on the new version (CANARY_10PERCENT_5MINUTES). */
const CANARY = { share: 0.1, minutes: 5 };
/** How long before the deployment the old version's figures are read (functions/deploy-hooks/judge.ts). */
const BASELINE_MINUTES = 60;

type Kind = 'all 500' | '3% 500' | '5× slower' | 'crash at init';
const KINDS: readonly Kind[] = ['all 500', '3% 500', '5× slower', 'crash at init'];

let t: TestTables;
let invocations: Invocation[] = [];
let deployed: { old: unknown; new: unknown } = { old: undefined, new: undefined };

/** The orders clients cancel: a few each of pending, cancelled and shipped. */
const ORDERS: Order[] = Array.from({ length: 30 }, (_, i) => ({
  id: BigInt(i + 1),
  status: (['pending', 'cancelled', 'shipped'] as const)[i % 3],
}));

function handlers() {
  const orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  const deployCheckOrders = new DynamoDbOrderStore(t.client, t.tables.orders, {
    partitions: DEPLOY_CHECK_PARTITIONS,
  });
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  const healthy = createCancelOrderHandler({
    orders: () => orders,
    deployCheckOrders: () => deployCheckOrders,
    limiter: () => limiter,
  });
  const missing = new DynamoDbOrderStore(t.client, `${t.prefix}-missing`);
  const broken = createCancelOrderHandler({
    orders: () => missing,
    deployCheckOrders: () => missing,
    limiter: () => limiter,
  });
  type Handler = (event: unknown, context: unknown) => Promise<unknown>;
  let calls = 0;
  const slowdown = { healthyMedianMs: 0 };
  const versions: Record<Kind, Handler> = {
    'all 500': broken as Handler,
    // Every 33rd call answers as the broken one does: a 500 (3%); the probe's few pass.
    '3% 500': (event, context) =>
      (++calls % 33 === 0 ? broken : healthy)(event as never, context as never),
    // The healthy one, then four times as long again as the healthy one's median (measured first).
    '5× slower': async (event, context) => {
      const answer = await healthy(event as never, context as never);
      await new Promise((r) => setTimeout(r, 4 * slowdown.healthyMedianMs));
      return answer;
    },
    'crash at init': () => {
      throw new Error('Cannot find module ./shared/stores.ts (a bundle that fails to load)');
    },
  };
  return { healthy, versions, slowdown };
}

/** A client's cancel, as API Gateway sends it through live. */
function clientCancel(i: number) {
  return {
    httpMethod: 'DELETE',
    resource: '/store/orders/{orderId}',
    path: `/store/orders/${(i % 40) + 1}`,
    pathParameters: { orderId: String((i % 40) + 1) },
    headers: {},
    requestContext: {
      requestId: `client-${i}`,
      authorizer: {
        keyId: 'key_tableClient1',
        plan: 'enterprise',
        perMinute: '100000',
        perDay: '10000000',
      },
    },
  };
}

/** What a version does to callers, measured on real invocations: its failure share, its median. */
interface Behaviour {
  readonly failureShare: number;
  readonly medianMs: number;
}

async function measure(handler: unknown, version: string, calls: number): Promise<Behaviour> {
  deployed = { ...deployed, [version === OLD ? 'old' : 'new']: handler };
  invocations.length = 0;
  const lines = await capturedLines(async () => {
    const client = new LambdaClient({});
    for (let i = 0; i < calls; i++) {
      await client.send(
        new InvokeCommand({
          FunctionName: FN,
          Qualifier: version,
          Payload: Buffer.from(JSON.stringify(clientCancel(i))),
        }),
      );
    }
  });
  // As CloudWatch counts them: failed invocations, and the 500 lines of this version.
  const failedInvocations = invocations.filter((call) => call.failed).length;
  const answers500 = lines.filter(
    (l) =>
      l.function_version === version &&
      matchesFilter(INTERNAL_ERROR_ANSWER_PATTERN.logPatternString, l),
  ).length;
  const durations = invocations.map((call) => call.durationMs).sort((a, b) => a - b);
  return {
    failureShare: (failedInvocations + answers500) / calls,
    medianMs: durations[Math.floor(durations.length / 2)]!,
  };
}

/** The figures of a deployment at a moment: the model of its traffic, from the versions' behaviour. */
function figuresAt(
  stage: StageName,
  rate: number,
  newer: Behaviour,
  older: Behaviour,
  msSinceShift: number,
) {
  const canaryMs = stage === 'production' ? CANARY.minutes * MINUTE : 0;
  const newRequests =
    (rate / MINUTE) *
    (Math.min(msSinceShift, canaryMs) * CANARY.share + Math.max(0, msSinceShift - canaryMs));
  const oldRequests =
    rate * BASELINE_MINUTES +
    (rate / MINUTE) * Math.min(msSinceShift, canaryMs) * (1 - CANARY.share);
  const n = Math.floor(newRequests);
  return {
    new: {
      requests: n,
      failures: Math.floor(newer.failureShare * n + 1e-9),
      latencyMs: newer.medianMs,
    },
    old: {
      requests: Math.floor(oldRequests),
      failures: Math.floor(older.failureShare * oldRequests),
      latencyMs: older.medianMs,
    },
  };
}

/** When (ms from the first shift) a deployment alarm fires during production's canary, if it does. */
function alarmDuringCanary(
  stage: StageName,
  rate: number,
  newer: Behaviour,
  older: Behaviour,
  alarms: Record<string, AlarmQuery[]>,
): number | undefined {
  if (stage !== 'production') return undefined;
  for (let minute = 1; minute <= CANARY.minutes; minute++) {
    const n = Math.floor(rate * CANARY.share);
    const all = rate;
    const failed = (m: number) =>
      Math.floor(newer.failureShare * Math.floor(rate * CANARY.share * m) + 1e-9);
    const k = failed(minute) - failed(minute - 1);
    const figures: Record<string, number> = {
      'new Invocations Sum': n,
      'all Invocations Sum': all,
      'new Errors Sum': 0,
      'all Errors Sum': 0,
      'new InternalErrorAnswers Sum': k,
      'all InternalErrorAnswers Sum': k + Math.floor(older.failureShare * (all - n)),
      'new Duration p50': newer.medianMs,
      // All versions' median, 90% of them the old one's: the old one's, nearly.
      'all Duration p50': older.medianMs,
    };
    for (const [name, queries] of Object.entries(alarms)) {
      const value = alarmValue(queries, ({ Metric, Stat }) => {
        const versioned = (Metric.Dimensions ?? []).some(
          (d) => d.Name === 'ExecutedVersion' || d.Name === 'FunctionVersion',
        );
        return figures[`${versioned ? 'new' : 'all'} ${Metric.MetricName} ${Stat}`];
      });
      const threshold = name.endsWith('Failures') ? 'failures' : 'latency';
      if (value !== undefined && value >= thresholds[threshold]) return minute * MINUTE;
    }
  }
  return undefined;
}

let thresholds: { failures: number; latency: number };

/** What the table says of one version in one stage at one rate. */
interface Outcome {
  readonly caughtBy: 'the probe' | 'an alarm' | 'the post-traffic hook' | 'nothing';
  /** When callers were safe again, ms after the first shift (undefined: never, or no shift). */
  readonly safeAfterMs?: number;
}

/** A time after the first shift, as the table writes it: `2 min`, `6 min 20 s`, `20 s`. */
function duration(ms: number): string {
  const [minutes, seconds] = [Math.floor(ms / MINUTE), (ms % MINUTE) / 1000];
  return [minutes > 0 ? `${minutes} min` : '', seconds > 0 ? `${seconds} s` : '']
    .filter(Boolean)
    .join(' ');
}

/** An outcome as the table words it: who caught it, when, and which callers met it till then. */
function words(stage: StageName, outcome: Outcome): string {
  if (outcome.caughtBy === 'the probe') return 'the probe: no caller';
  const bake = stageConfig(stage, () => undefined, {}).deployment.bakeMinutes;
  if (outcome.caughtBy === 'nothing') return `nothing, after a ${bake} minutes' watch: all callers`;
  const ms = outcome.safeAfterMs!;
  const canaryMs = CANARY.minutes * MINUTE;
  const exposure =
    stage === 'staging'
      ? 'all callers'
      : ms <= canaryMs
        ? '10% of callers'
        : `10% of callers for ${CANARY.minutes} min, then all for ${duration(ms - canaryMs)}`;
  return `${outcome.caughtBy} at ${duration(ms)}: ${exposure}`;
}

beforeAll(async () => {
  t = await createTestTables('table');
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders(ORDERS);
  invocations = standInLambda(lambda, (name, version) =>
    name !== FN
      ? undefined
      : version === OLD
        ? deployed.old
        : version === NEW
          ? deployed.new
          : undefined,
  );
  const { stages } = testApp();
  const queries = (stage: StageName) => {
    const alarmsOf = Object.values(
      templates(stages[stage]).api.findResources('AWS::CloudWatch::Alarm'),
    ) as { Properties: { AlarmName: string; Metrics: AlarmQuery[]; Threshold: number } }[];
    return alarmsOf.filter((a) => /CancelOrderNewVersion/.test(a.Properties.AlarmName));
  };
  const production = queries('production');
  thresholds = {
    failures: production.find((a) => a.Properties.AlarmName.endsWith('Failures'))!.Properties
      .Threshold,
    latency: production.find((a) => a.Properties.AlarmName.endsWith('Latency'))!.Properties
      .Threshold,
  };
  canaryAlarms = Object.fromEntries(
    production.map((a) => [a.Properties.AlarmName, a.Properties.Metrics]),
  );
}, 120_000);
afterAll(() => t.drop());
afterEach(() => vi.restoreAllMocks());

let canaryAlarms: Record<string, AlarmQuery[]> = {};

/** One version deployed to one stage at one rate: the hooks' verdicts on the model's figures. */
async function deployAndWatch(
  stage: StageName,
  rate: number,
  kind: Kind,
  newer: Behaviour,
  older: Behaviour,
  handler: unknown,
): Promise<Outcome> {
  codeDeploy.reset();
  autoScaling.reset();
  cloudWatch.reset();
  const deployments = new Map<string, StandInDeployment>();
  answerHookCalls(stubs, deployments);
  cloudWatch.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [] });
  lambda.on(ListVersionsByFunctionCommand).resolves({ Versions: [] });
  lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
  lambda.on(UpdateAliasCommand).resolves({});
  lambda.on(CreateAliasCommand).resolves({});
  lambda.on(DeleteFunctionCommand).resolves({});
  const config = stageConfig(stage, () => undefined, {});
  const shiftAt = 1_800_000_000_000;
  let now = shiftAt;
  const settings: HookSettings = {
    targets: Object.fromEntries(
      FUNCTION_NAMES.map((name) => [name, { functionName: FN, alarms: [], provisioned: false }]),
    ) as unknown as HookSettings['targets'],
    bakeSeconds: config.deployment.bakeMinutes * 60,
    versionsKept: config.deployment.versionsKept,
    ignoreAlarms: false,
    ordersTable: t.tables.orders,
    apiKeysTable: t.tables.apiKeys,
    metricsNamespace: `StoreOrders/${stage}`,
  };
  const hooks = createDeployHooks({
    ...hookClients(),
    dynamodb: t.client,
    settings,
    now: () => now,
    sleep: (ms) => Promise.resolve(void (now += ms)),
  });
  deployed = { ...deployed, new: handler };
  deployments.set('d-table', {
    group: 'cancelOrder',
    createdAt: shiftAt,
    currentVersion: OLD,
    targetVersion: NEW,
    hooks: { BeforeAllowTraffic: 'InProgress', AfterAllowTraffic: 'Pending' },
  });
  const event = { DeploymentId: 'd-table', LifecycleEventHookExecutionId: 'h-table' };
  const quiet = [
    vi.spyOn(process.stdout, 'write').mockReturnValue(true),
    vi.spyOn(process.stderr, 'write').mockReturnValue(true),
  ];
  try {
    if ((await hooks.preTraffic(event)) === 'Failed') return { caughtBy: 'the probe' };
    const alarmAt = alarmDuringCanary(stage, rate, newer, older, canaryAlarms);
    if (alarmAt !== undefined) return { caughtBy: 'an alarm', safeAfterMs: alarmAt };
    // After the last shift: the post-traffic hook, its clock from the shift on.
    now = shiftAt + (stage === 'production' ? CANARY.minutes * MINUTE : 0);
    cloudWatch
      .on(GetMetricDataCommand)
      .callsFake((input: { MetricDataQueries: MetricDataQuery[] }) => {
        const figures = figuresAt(stage, rate, newer, older, now - shiftAt);
        return {
          MetricDataResults: input.MetricDataQueries.map((q) => {
            const side = q.Id!.startsWith('new') ? figures.new : figures.old;
            const metric = q.MetricStat!.Metric!.MetricName;
            const value =
              metric === 'Invocations'
                ? side.requests
                : metric === 'InternalErrorAnswers'
                  ? side.failures
                  : metric === 'Duration'
                    ? side.latencyMs
                    : 0;
            return { Id: q.Id, Values: [value] };
          }),
        };
      });
    const deployment = deployments.get('d-table')!;
    deployment.hooks.BeforeAllowTraffic = 'Succeeded';
    deployment.hooks.AfterAllowTraffic = 'InProgress';
    const verdict = await hooks.postTraffic(event);
    expect(verdictsOf(codeDeploy).at(-1)).toBe(verdict);
    if (verdict === 'Failed')
      return { caughtBy: 'the post-traffic hook', safeAfterMs: now - shiftAt };
    return { caughtBy: 'nothing' };
  } finally {
    for (const spy of quiet) spy.mockRestore();
  }
}

describe("what each kind of broken version of cancelOrder meets (docs/deploy.md's table)", () => {
  it('is what the hooks, the alarms and the judgement do with it, in each stage and at each rate', async () => {
    const { healthy, versions, slowdown } = handlers();
    // Warm first (the first calls open connections): the medians compare warm containers.
    await measure(healthy, OLD, 20);
    const older = await measure(healthy, OLD, 40);
    expect(older.failureShare).toBe(0);
    slowdown.healthyMedianMs = older.medianMs;
    const computed: string[][] = [];
    for (const kind of KINDS) {
      const newer = await measure(versions[kind], NEW, 99);
      if (kind === 'all 500' || kind === 'crash at init') expect(newer.failureShare).toBe(1);
      if (kind === '3% 500') expect(newer.failureShare).toBeCloseTo(3 / 99, 6);
      if (kind === '5× slower') expect(newer.medianMs / older.medianMs).toBeGreaterThan(3);
      for (const stage of STAGES as readonly StageName[]) {
        const row: string[] = [kind, stage];
        for (const rate of RATES) {
          const outcome = await deployAndWatch(stage, rate, kind, newer, older, versions[kind]);
          row.push(words(stage, outcome));
        }
        computed.push(row);
      }
    }
    const documented = markdownTable('deploy.md', 'version', 'stage');
    expect(documented, 'the table of what each kind of broken version meets').toBeDefined();
    expect(documented).toEqual(computed);
  }, 240_000);
});

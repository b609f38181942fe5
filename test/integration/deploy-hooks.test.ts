/**
 * CodeDeploy's hooks (functions/deploy-hooks.ts and its rooms, functions/deploy-hooks/) against
 * the local stack: the real handlers on DynamoDB Local stand behind a stubbed Lambda
 * (aws-sdk-client-mock, test/support/deploy-stand-ins.ts), CodeDeploy, Application Auto Scaling
 * and CloudWatch are stubbed; never AWS. The probes do each function's real work on the deploy
 * check's data and change nothing a client sees; a broken version (its table missing, a crash, a
 * hang) gets no traffic; every hook gives one verdict on every path and does nothing the second
 * time; the post-traffic hook judges the new version, records the version to roll back to and
 * prunes, and fails closed (no pass without the new version's own figures); a version marked
 * do-not-ship gets no traffic; a rolled-back stack update publishes each function's rolled-back
 * code again, and nothing else. The lines a broken version writes are the ones the deploy
 * alarms' metric filters count.
 */
import { RegisterScalableTargetCommand } from '@aws-sdk/client-application-auto-scaling';
import {
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type StackStatus,
} from '@aws-sdk/client-cloudformation';
import {
  DescribeAlarmsCommand,
  GetMetricDataCommand,
  type StateValue,
} from '@aws-sdk/client-cloudwatch';
import {
  GetDeploymentCommand,
  LifecycleEventAlreadyCompletedException,
  PutLifecycleEventHookExecutionStatusCommand,
} from '@aws-sdk/client-codedeploy';
import {
  CreateAliasCommand,
  DeleteFunctionCommand,
  GetAliasCommand,
  GetFunctionConfigurationCommand,
  InvalidParameterValueException,
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  ListAliasesCommand,
  ListVersionsByFunctionCommand,
  PublishVersionCommand,
  ResourceNotFoundException,
  UpdateAliasCommand,
  type FunctionConfiguration,
} from '@aws-sdk/client-lambda';
import { BatchWriteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

// The functions' logger reads its level at load (the test setup silences it): the metric filter
// test reads the lines a broken version writes.
vi.hoisted(() => {
  process.env.LOG_LEVEL = 'INFO';
});
import { createAuthorizerHandler } from '../../functions/authorizer.ts';
import { createCancelOrderHandler } from '../../functions/cancel-order.ts';
import { hookHandlers, postTraffic, preTraffic } from '../../functions/deploy-hooks.ts';
import { ALARM_POLL_MS } from '../../functions/deploy-hooks/bake.ts';
import {
  createDeployHooks,
  settledAt,
  VERDICT_RESERVE_MS,
  WATCH_RESERVE_MS,
} from '../../functions/deploy-hooks/hooks.ts';
import { BODY_IDLE_MS } from '../../functions/deploy-hooks/probes.ts';
import { settingsFromEnv, type HookSettings } from '../../functions/deploy-hooks/settings.ts';
import { VERDICT_ATTEMPTS } from '../../functions/deploy-hooks/verdict.ts';
import { createListOrderPagesHandler } from '../../functions/list-order-pages.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import {
  INTERNAL_ERROR_ANSWER_PATTERN,
  KEY_CHECK_TRANSIENT_PATTERN,
  UNAVAILABLE_ANSWER_PATTERN,
  VERSION_FILTER_DIMENSIONS,
} from '../../infra/alarms.ts';
import { DEPLOY_CHECK_LEADING_KEYS } from '../../infra/deploy-hooks.ts';
import { DEPLOY_CHECK_ORDER_ID, DEPLOY_CHECK_KEY_ID } from '../../lib/deploy-check.ts';
import { METRICS_DELAY_MS, MIN_OWN_REQUESTS } from '../../lib/deploy-judgement.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import {
  DEPLOY_CHECK_PARTITIONS,
  DEPLOY_CHECK_SHARD,
  ORDER_INDEX_NAMES,
} from '../../lib/dynamodb/tables.ts';
import { DO_NOT_SHIP_ALIAS, HOOK_ENV, ROLLBACK_ALIAS } from '../../lib/deployment.ts';
import { DEPLOY_HOOKS, FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import type { Order } from '../../lib/orders/order.ts';
import { createContext, invokeBuffered } from '../../local/lambda-runtime.ts';
import { scanAll } from '../admin/support.ts';
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
import { createTestTables, type TestTables } from '../support/tables.ts';

const stubs = stubHookClients();
const { lambda, codeDeploy, autoScaling, cloudWatch, cloudFormation } = stubs;

let t: TestTables;
/** The handler behind each function name the stubbed Lambda is asked for (every version). */
let deployed: Record<string, unknown> = {};
let invocations: Invocation[] = [];
const deployments = new Map<string, StandInDeployment>();

const ORDERS: Order[] = [
  { id: 1n, petId: 10n, quantity: 1, status: 'pending' },
  { id: 2n, status: 'shipped', complete: true },
];

const fnName = (name: FunctionName) => `store-orders-test-${name}`;
const OLD_VERSION = '6';
const VERSION = '7';

function settings(overrides: Partial<HookSettings> = {}): HookSettings {
  return {
    targets: Object.fromEntries(
      FUNCTION_NAMES.map((name) => [
        name,
        {
          functionName: fnName(name),
          alarms: [`store-orders-test-${name}NewVersionFailures`],
          provisioned: name !== 'listOrders',
        },
      ]),
    ) as unknown as HookSettings['targets'],
    bakeSeconds: 60,
    watchProbe: false,
    versionsKept: 3,
    ignoreAlarms: false,
    // (The tables of the file, once they exist: the cases of `it.each` are read before.)
    ordersTable: t?.tables.orders ?? 'orders',
    apiKeysTable: t?.tables.apiKeys ?? 'api-keys',
    metricsNamespace: 'StoreOrders/test',
    ...overrides,
  };
}

/** A clock the bake's waits move (no real waiting). */
function fakeClock() {
  let now = 1_800_000_000_000;
  return { now: () => now, sleep: (ms: number) => Promise.resolve(void (now += ms)) };
}

function hooks(overrides: Partial<HookSettings> = {}) {
  return createDeployHooks({
    ...hookClients(),
    dynamodb: t.client,
    settings: settings(overrides),
    ...fakeClock(),
  });
}

/** The v2 list's pages on a table, with every index (as the local tables have them). */
const pages = (table: string) =>
  new DynamoDbOrderPages(t.client, table, { indexes: new Set(ORDER_INDEX_NAMES) });

function healthy(): Record<FunctionName, unknown> {
  const orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  const deployCheckOrders = new DynamoDbOrderStore(t.client, t.tables.orders, {
    partitions: DEPLOY_CHECK_PARTITIONS,
  });
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  return {
    listOrders: createListOrdersHandler({ orders: () => orders, limiter: () => limiter }),
    listOrderPages: createListOrderPagesHandler({
      orders: () => orders,
      pages: () => pages(t.tables.orders),
      limiter: () => limiter,
    }),
    cancelOrder: createCancelOrderHandler({
      orders: () => orders,
      deployCheckOrders: () => deployCheckOrders,
      limiter: () => limiter,
    }),
    authorizer: createAuthorizerHandler({
      keys: () => new DynamoDbKeyStore(t.client, t.tables.apiKeys),
    }),
  };
}

/** Each function with the table it reads missing: what a deploy with a wrong table name ships. */
function broken(): Record<FunctionName, unknown> {
  const missing = `${t.prefix}-missing`;
  const orders = new DynamoDbOrderStore(t.client, missing);
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  return {
    listOrders: createListOrdersHandler({ orders: () => orders, limiter: () => limiter }),
    listOrderPages: createListOrderPagesHandler({
      orders: () => orders,
      pages: () => pages(missing),
      limiter: () => limiter,
    }),
    cancelOrder: createCancelOrderHandler({
      orders: () => orders,
      deployCheckOrders: () =>
        new DynamoDbOrderStore(t.client, missing, { partitions: DEPLOY_CHECK_PARTITIONS }),
      limiter: () => limiter,
    }),
    authorizer: createAuthorizerHandler({ keys: () => new DynamoDbKeyStore(t.client, missing) }),
  };
}

const deploy = (handlers: Record<FunctionName, unknown>) => {
  deployed = Object.fromEntries(
    Object.entries(handlers).map(([name, h]) => [fnName(name as FunctionName), h]),
  );
};

/** The suspensions (true) and resumptions (false) of the scaling of provisioned concurrency. */
function scaling(): [string, boolean][] {
  return autoScaling.commandCalls(RegisterScalableTargetCommand).map((call) => {
    const { ResourceId, SuspendedState } = call.args[0].input;
    return [ResourceId!, SuspendedState!.DynamicScalingOutSuspended!];
  });
}

const verdicts = () => verdictsOf(codeDeploy);

/** A deployment of a group's new version, its hooks waiting for a verdict. */
function deployment(group: FunctionName, changes: Partial<StandInDeployment> = {}) {
  const id = `d-${group}`;
  deployments.set(id, {
    group,
    createdAt: 1_800_000_000_000 - 6 * 60_000,
    currentVersion: OLD_VERSION,
    targetVersion: VERSION,
    hooks: { BeforeAllowTraffic: 'InProgress', AfterAllowTraffic: 'Pending' },
    ...changes,
  });
  return { DeploymentId: id, LifecycleEventHookExecutionId: `hook-${group}` };
}

interface ProbeEvent {
  resource: string;
  path: string;
  headers: Record<string, string> | null;
  multiValueHeaders: Record<string, string[]> | null;
  queryStringParameters: Record<string, string> | null;
  multiValueQueryStringParameters: Record<string, string[]> | null;
  requestContext: { path: string; resourcePath: string; stage: string };
}

function expectGatewayShaped(event: ProbeEvent): void {
  const lastValues = (multi: Record<string, string[]> | null) =>
    multi &&
    Object.fromEntries(Object.entries(multi).map(([name, values]) => [name, values.at(-1)]));
  expect(lastValues(event.multiValueHeaders) ?? {}).toEqual(event.headers ?? {});
  expect(lastValues(event.multiValueQueryStringParameters)).toEqual(event.queryStringParameters);
  expect(event.requestContext.resourcePath).toBe(event.resource);
  expect(event.requestContext.path).toBe(`/${event.requestContext.stage}${event.path}`);
}

beforeAll(async () => {
  t = await createTestTables('hooks');
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders(ORDERS);
});
afterAll(() => t.drop());
beforeEach(() => {
  // The hooks' and the functions' lines (tests that read them capture them).
  vi.spyOn(process.stdout, 'write').mockReturnValue(true);
  vi.spyOn(process.stderr, 'write').mockReturnValue(true);
  invocations = standInLambda(lambda, (name, version) =>
    version === VERSION || version === OLD_VERSION ? deployed[name] : undefined,
  );
  answerHookCalls(stubs, deployments);
  cloudWatch.on(GetMetricDataCommand).resolves({ MetricDataResults: [] });
});
afterEach(() => {
  vi.restoreAllMocks();
  lambda.reset();
  codeDeploy.reset();
  autoScaling.reset();
  cloudWatch.reset();
  cloudFormation.reset();
  deployments.clear();
});

describe('the pre-traffic hook, against the local stack', () => {
  it.each(FUNCTION_NAMES)(
    "passes a healthy %s after probing its new version's real work as API Gateway would call it, changing nothing a client sees",
    async (group) => {
      deploy(healthy());
      const before = await scanAll(t.client, t.tables.orders);
      expect(await hooks().preTraffic(deployment(group))).toBe('Succeeded');
      expect(verdicts()).toEqual(['Succeeded']);
      expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
      // Only the version CodeDeploy moves live to was called, every call answered.
      expect(invocations.length).toBeGreaterThanOrEqual(2);
      for (const call of invocations) {
        expect(call).toMatchObject({
          functionName: fnName(group),
          version: VERSION,
          failed: false,
        });
      }
      if (group !== 'authorizer') {
        for (const call of invocations) expectGatewayShaped(call.event as ProbeEvent);
      }
      // Scaling is suspended for the shift (the post-traffic hook resumes it).
      expect(scaling()).toEqual(
        group === 'listOrders' ? [] : [[`function:${fnName(group)}:live`, true]],
      );
    },
  );

  it("cancels the deploy check's order for real (pending, 204, 204 again), then an unknown one (404), all in its own partition", async () => {
    deploy(healthy());
    expect(await hooks().preTraffic(deployment('cancelOrder'))).toBe('Succeeded');
    expect(invocations.map((call) => call.status)).toEqual([204, 204, 404]);
    const { Item } = await t.client.send(
      new GetCommand({
        TableName: t.tables.orders,
        Key: { shard: DEPLOY_CHECK_SHARD, id: DEPLOY_CHECK_ORDER_ID },
      }),
    );
    // Cancelled as every cancel is: its trail, and the cancelled status's `s` in its partition.
    expect(Item).toMatchObject({ s: 'c-200', cancelledBy: 'deploy-check' });
    // The next check sets it back to pending and cancels it again: the write path each time.
    expect(await hooks().preTraffic(deployment('cancelOrder'))).toBe('Succeeded');
    expect(invocations.map((call) => call.status)).toEqual([204, 204, 404, 204, 204, 404]);
  });

  it('reads the whole list to its end, then asks again with its ETag', async () => {
    deploy(healthy());
    const lines = await capturedLines(() => hooks().preTraffic(deployment('listOrders')));
    expect(invocations.map((call) => call.status)).toEqual([200, 304]);
    const passed = lines.find((l) => l.message === 'Pre-traffic check passed');
    expect(passed?.answer).toMatch(/^200 \(\d+ bytes, whole\); 304$/);
  });

  /** A handler that streams as Lambda's runtime marks one (awslambda.streamifyResponse). */
  type Streaming = (
    event: unknown,
    stream: NodeJS.WritableStream,
    context: unknown,
  ) => Promise<unknown>;
  const runtime = (
    globalThis as unknown as {
      awslambda: {
        streamifyResponse: (handler: Streaming) => unknown;
        HttpResponseStream: {
          from: (stream: NodeJS.WritableStream, prelude: unknown) => NodeJS.WritableStream;
        };
      };
    }
  ).awslambda;
  /** The healthy list, with what a conditional request of it does replaced by `conditional`. */
  const listAnswering = (conditional: Streaming) =>
    runtime.streamifyResponse((event, stream, context) =>
      JSON.stringify((event as { headers?: object }).headers ?? {}).includes('If-None-Match')
        ? conditional(event, stream, context)
        : (healthy().listOrders as Streaming)(event, stream, context),
    );

  it('fails a list that sends its status line and `[` and then stalls: a body idle for its bound is a failure, with its reason', async () => {
    deploy({
      ...healthy(),
      listOrders: runtime.streamifyResponse(async (_event, stream) => {
        const body = runtime.HttpResponseStream.from(stream, {
          statusCode: 200,
          headers: { 'Content-Type': 'application/json', ETag: 'W/"v1"' },
        });
        body.write('[');
        await new Promise(() => undefined);
      }),
    });
    const started = Date.now();
    const lines = await capturedLines(() => hooks().preTraffic(deployment('listOrders')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.answer).toBe(
      `200, body failed: stalled: no byte for ${BODY_IDLE_MS} ms after 1 bytes`,
    );
    // At the stall, not at the end of the call's budget (30 s and the body's 45 s).
    expect(Date.now() - started).toBeLessThan(BODY_IDLE_MS + 15_000);
  });

  it('checks the answer to the ETag it asked about: a 200 with that same ETag (If-None-Match ignored) fails, as does a 304 of another tag', async () => {
    // The healthy list, deaf to If-None-Match: the list unchanged, a 200 with the same tag.
    deploy({
      ...healthy(),
      listOrders: listAnswering((event, stream, context) => {
        const { headers, multiValueHeaders, ...rest } = event as Record<string, unknown>;
        const deaf = (h: object | undefined) =>
          h && Object.fromEntries(Object.entries(h).filter(([name]) => name !== 'If-None-Match'));
        return (healthy().listOrders as Streaming)(
          {
            ...rest,
            headers: deaf(headers as object | undefined),
            multiValueHeaders: deaf(multiValueHeaders as object | undefined),
          },
          stream,
          context,
        );
      }),
    });
    let lines = await capturedLines(() => hooks().preTraffic(deployment('listOrders')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.answer).toMatch(
      /; 200 with the ETag W\/"[^"]+" it was asked about: If-None-Match ignored$/,
    );
    codeDeploy.resetHistory();
    deploy({
      ...healthy(),
      listOrders: listAnswering(async (_event, stream) => {
        runtime.HttpResponseStream.from(stream, {
          statusCode: 304,
          headers: { ETag: 'W/"another"' },
        }).end();
        return Promise.resolve();
      }),
    });
    lines = await capturedLines(() => hooks().preTraffic(deployment('listOrders')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.answer).toMatch(
      /; 304 with ETag W\/"another", not the W\/"[^"]+" asked about$/,
    );
  });

  it('refuses a version marked do-not-ship before anything else (no probe, no scaling), and lets any other version be probed', async () => {
    deploy(healthy());
    lambda.on(GetAliasCommand, { Name: DO_NOT_SHIP_ALIAS }).resolves({
      Name: DO_NOT_SHIP_ALIAS,
      FunctionVersion: VERSION,
      Description: 'rolled back: cancels lost their trail',
    });
    const lines = await capturedLines(() => hooks().preTraffic(deployment('cancelOrder')));
    expect(verdicts()).toEqual(['Failed']);
    expect(invocations).toEqual([]);
    expect(scaling()).toEqual([]);
    expect(lines.find((l) => l.level === 'ERROR')).toMatchObject({
      message: 'Pre-traffic check failed: the new version is marked do-not-ship',
      version: VERSION,
      mark: 'rolled back: cancels lost their trail',
    });
    expect(lambda.commandCalls(GetAliasCommand)[0]!.args[0].input).toEqual({
      FunctionName: fnName('cancelOrder'),
      Name: DO_NOT_SHIP_ALIAS,
    });
    // A mark on another version (the one rolled back from; the fix is a new one) is in no one's way.
    lambda.on(GetAliasCommand, { Name: DO_NOT_SHIP_ALIAS }).resolves({
      FunctionVersion: OLD_VERSION,
    });
    expect(await hooks().preTraffic(deployment('cancelOrder'))).toBe('Succeeded');
  });

  it("writes the orders table only in the deploy check's partitions: the ones its role's dynamodb:LeadingKeys allow", async () => {
    deploy(healthy());
    const written: unknown[] = [];
    const send = t.client.send.bind(t.client);
    // The hooks' own client, recording the partition of each write to the orders table.
    const recording = {
      send: (command: { input: Record<string, unknown> }) => {
        if (command instanceof BatchWriteCommand) {
          const requests = command.input.RequestItems?.[t.tables.orders] ?? [];
          for (const r of requests)
            written.push((r.PutRequest?.Item ?? r.DeleteRequest?.Key)?.shard);
        } else if (
          command instanceof UpdateCommand &&
          command.input.TableName === t.tables.orders
        ) {
          written.push(command.input.Key?.shard);
        } else if (command.input.TableName === t.tables.orders) {
          throw new Error(`a write the role does not allow: ${command.constructor.name}`);
        }
        return send(command as never);
      },
    } as unknown as typeof t.client;
    const withRecording = createDeployHooks({
      ...hookClients(),
      dynamodb: recording,
      settings: settings(),
      ...fakeClock(),
    });
    expect(await withRecording.preTraffic(deployment('cancelOrder'))).toBe('Succeeded');
    expect(written.length).toBeGreaterThan(0);
    for (const shard of written) expect(DEPLOY_CHECK_LEADING_KEYS).toContain(String(shard));
  });

  it("denies a key no one holds and allows a key of the deploy check's own, revoked after the probe", async () => {
    deploy(healthy());
    const keys = new DynamoDbKeyStore(t.client, t.tables.apiKeys);
    const before = (await keys.list()).length;
    expect(await hooks().preTraffic(deployment('authorizer'))).toBe('Succeeded');
    const stored = await keys.list();
    expect(stored).toHaveLength(before + 1);
    const probeKey = stored.find((k) => k.label?.startsWith('deploy check'))!;
    expect(probeKey).toMatchObject({ status: 'revoked', plan: 'free', permissions: ['read'] });
    expect(Date.parse(probeKey.expiresAt!) - Date.parse(probeKey.createdAt)).toBe(10 * 60_000);
  });

  it('fails an authorizer that denies every key: the key it must allow is denied', async () => {
    deploy({
      ...healthy(),
      authorizer: createAuthorizerHandler({
        keys: () => ({
          findByHash: () => Promise.resolve(undefined),
          create: () => Promise.resolve(true),
        }),
      }),
    });
    const lines = await capturedLines(() => hooks().preTraffic(deployment('authorizer')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.answer).toMatch(/policy Deny for a stored key/);
  });

  it.each(FUNCTION_NAMES)(
    'fails a %s version whose table is missing (a 500, or a failed invocation): no traffic moves to it',
    async (group) => {
      deploy(broken());
      expect(await hooks().preTraffic(deployment(group))).toBe('Failed');
      expect(verdicts()).toEqual(['Failed']);
      // Suspended, then resumed: the deployment ends here.
      expect(scaling()).toEqual(
        group === 'listOrders'
          ? []
          : [
              [`function:${fnName(group)}:live`, true],
              [`function:${fnName(group)}:live`, false],
            ],
      );
    },
  );

  it('fails a version that never answers within the time the hook has, and still gives its verdict in time', async () => {
    deploy({ ...healthy(), cancelOrder: () => new Promise(() => undefined) });
    const started = Date.now();
    const verdict = await hooks().preTraffic(deployment('cancelOrder'), {
      // The hook's timeout leaves 1.5 s for the probes after the verdict's reserve.
      getRemainingTimeInMillis: () => VERDICT_RESERVE_MS + 1_500,
    });
    expect(verdict).toBe('Failed');
    expect(verdicts()).toEqual(['Failed']);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("fails in time when the deploy check's own data does not answer (its store's calls have the probe's budget too)", async () => {
    deploy(healthy());
    const stalled = createDeployHooks({
      ...hookClients(),
      // A DynamoDB that never answers.
      dynamodb: { send: () => new Promise(() => undefined) } as unknown as typeof t.client,
      settings: settings(),
    });
    const started = Date.now();
    const lines = await capturedLines(async () =>
      expect(
        await stalled.preTraffic(deployment('cancelOrder'), {
          getRemainingTimeInMillis: () => VERDICT_RESERVE_MS + 1_000,
        }),
      ).toBe('Failed'),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.answer).toMatch(/no answer in time/);
  });

  it('gives CodeDeploy a verdict even when it cannot tell which deployment it is in (else CodeDeploy waits an hour)', async () => {
    codeDeploy.on(GetDeploymentCommand).rejects(new Error('AccessDeniedException'));
    expect(await hooks().preTraffic(deployment('cancelOrder'))).toBe('Failed');
    expect(verdicts()).toEqual(['Failed']);
  });
});

describe('a verdict on every path, once', () => {
  it('sends it again when sending fails, and stops at the first that lands', async () => {
    deploy(healthy());
    codeDeploy
      .on(PutLifecycleEventHookExecutionStatusCommand)
      .rejectsOnce(new Error('ThrottlingException'))
      .resolves({});
    expect(await hooks().preTraffic(deployment('listOrderPages'))).toBe('Succeeded');
    expect(verdicts()).toEqual(['Succeeded', 'Succeeded']);
  });

  it("takes CodeDeploy's 'already completed' as the verdict landed (an earlier answer was lost)", async () => {
    deploy(healthy());
    codeDeploy
      .on(PutLifecycleEventHookExecutionStatusCommand)
      .rejects(
        new LifecycleEventAlreadyCompletedException({ message: 'completed', $metadata: {} }),
      );
    expect(await hooks().preTraffic(deployment('listOrderPages'))).toBe('Succeeded');
    expect(verdicts()).toHaveLength(1);
  });

  it('never throws when the verdict cannot be sent: Lambda would run the hook again (scaling suspended again, a second bake)', async () => {
    deploy(healthy());
    codeDeploy.on(PutLifecycleEventHookExecutionStatusCommand).rejects(new Error('down'));
    const lines = await capturedLines(() => hooks().preTraffic(deployment('cancelOrder')));
    expect(verdicts()).toHaveLength(VERDICT_ATTEMPTS);
    expect(lines.find((l) => l.level === 'ERROR')?.message).toMatch(/^Verdict not sent/);
  });

  it.each(['preTraffic', 'postTraffic'] as const)(
    '%s run a second time for the same event does nothing once its lifecycle event has its verdict, or the deployment ended',
    async (which) => {
      deploy(healthy());
      const event = deployment('cancelOrder', {
        hooks: { BeforeAllowTraffic: 'Succeeded', AfterAllowTraffic: 'Failed' },
      });
      expect(await hooks()[which](event)).toBeUndefined();
      deployments.get(event.DeploymentId)!.hooks.BeforeAllowTraffic = 'InProgress';
      deployments.get(event.DeploymentId)!.hooks.AfterAllowTraffic = 'InProgress';
      deployments.get(event.DeploymentId)!.status = 'Failed';
      expect(await hooks()[which](event)).toBeUndefined();
      expect(verdicts()).toEqual([]);
      expect(scaling()).toEqual([]);
      expect(invocations).toEqual([]);
      expect(cloudWatch.calls()).toEqual([]);
    },
  );
});

describe('a hook whose environment is missing or malformed', () => {
  /** The environment infra/deploy-hooks.ts sets, as the hooks' settings() would have it. */
  const goodEnv = (): Record<string, string> => {
    const {
      targets,
      bakeSeconds,
      watchProbe,
      versionsKept,
      ignoreAlarms,
      ordersTable,
      apiKeysTable,
      metricsNamespace,
    } = settings();
    return {
      [HOOK_ENV.targets]: JSON.stringify(targets),
      [HOOK_ENV.bakeSeconds]: String(bakeSeconds),
      [HOOK_ENV.watchProbe]: String(watchProbe),
      [HOOK_ENV.versionsKept]: String(versionsKept),
      [HOOK_ENV.ignoreAlarms]: String(ignoreAlarms),
      [HOOK_ENV.ordersTable]: ordersTable,
      [HOOK_ENV.apiKeysTable]: apiKeysTable,
      [HOOK_ENV.metricsNamespace]: metricsNamespace,
    };
  };

  it('reads back the settings the stack writes', () => {
    expect(settingsFromEnv(goodEnv())).toEqual(settings());
  });

  it.each([
    ['unset', HOOK_ENV.targets, undefined, /DEPLOY_TARGETS is not set/],
    ['not JSON', HOOK_ENV.targets, '{"listOrders":', /DEPLOY_TARGETS must be JSON/],
    ['a function missing', HOOK_ENV.targets, '{}', /DEPLOY_TARGETS must be .* for listOrders/],
    [
      'a target without its name',
      HOOK_ENV.targets,
      JSON.stringify({
        ...JSON.parse(JSON.stringify(settings().targets)),
        cancelOrder: { ...settings().targets.cancelOrder, functionName: '' },
      }),
      /DEPLOY_TARGETS must be .* for cancelOrder .*\(functionName: a non-empty text\), got ""/,
    ],
    ['not JSON of an object', HOOK_ENV.targets, 'null', /DEPLOY_TARGETS must be .*, got null/],
    ['not a number', HOOK_ENV.bakeSeconds, 'ten', /BAKE_SECONDS must be a whole number/],
    ['empty', HOOK_ENV.versionsKept, '', /VERSIONS_KEPT is not set/],
    ['not a flag', HOOK_ENV.ignoreAlarms, 'yes', /IGNORE_ALARMS must be true or false/],
    ['not a flag', HOOK_ENV.watchProbe, '1', /WATCH_PROBE must be true or false/],
    ['unset', HOOK_ENV.ordersTable, undefined, /ORDERS_TABLE is not set/],
  ])('refuses %s (%s), naming the variable', (_, name, value, message) => {
    const env = { ...goodEnv(), [name]: value };
    expect(() => settingsFromEnv(env)).toThrow(message);
  });

  it.each(['preTraffic', 'postTraffic'] as const)(
    'fails the deployment in %s, with the reason in its log, instead of leaving CodeDeploy waiting an hour',
    async (which) => {
      // The handlers Lambda calls, with the environment of a hook deployed without its targets.
      for (const [name, value] of Object.entries(goodEnv())) vi.stubEnv(name, value);
      vi.stubEnv(HOOK_ENV.targets, '');
      const event = deployment('cancelOrder', {
        hooks: { BeforeAllowTraffic: 'InProgress', AfterAllowTraffic: 'InProgress' },
      });
      let lines: Record<string, unknown>[];
      try {
        const handler = which === 'preTraffic' ? preTraffic : postTraffic;
        lines = await capturedLines(async () =>
          expect(await handler(event, createContext('hooks') as never)).toBe('Failed'),
        );
      } finally {
        vi.unstubAllEnvs();
      }
      expect(verdicts()).toEqual(['Failed']);
      expect(lambda.commandCalls(InvokeCommand)).toHaveLength(0);
      expect(JSON.stringify(lines)).toMatch(/failing the deployment.*DEPLOY_TARGETS is not set/s);
    },
  );

  it('tries the settings again at the next hook once they are fixed (a failed read is not kept)', async () => {
    let env: Record<string, string | undefined> = { ...goodEnv(), [HOOK_ENV.targets]: undefined };
    deploy(healthy());
    const hooksOf = createDeployHooks({
      ...hookClients(),
      dynamodb: t.client,
      settings: () => settingsFromEnv(env),
      ...fakeClock(),
    });
    expect(await hooksOf.preTraffic(deployment('cancelOrder'))).toBe('Failed');
    env = goodEnv();
    expect(await hooksOf.preTraffic(deployment('cancelOrder'))).toBe('Succeeded');
    expect(verdicts()).toEqual(['Failed', 'Succeeded']);
  });
});

describe('the metric filters of the deploy judges, on what versions write', () => {
  const cancelEvent = (keyId: string) => ({
    httpMethod: 'DELETE',
    resource: '/store/orders/{orderId}',
    path: '/store/orders/5',
    pathParameters: { orderId: '5' },
    headers: {},
    requestContext: {
      requestId: 'r-1',
      authorizer: { keyId, plan: 'pro', perMinute: '300', perDay: '10000' },
    },
  });
  const context = () => ({
    ...createContext(fnName('cancelOrder'), 10_000),
    functionVersion: VERSION,
  });

  it("counts the broken cancelOrder's 500 to a caller once, under its function name and the version that ran; not the deploy check's", async () => {
    let status = 0;
    const lines = await capturedLines(async () => {
      const result = (await invokeBuffered(
        broken().cancelOrder,
        cancelEvent('key_x'),
        context(),
      )) as {
        statusCode: number;
      };
      status = result.statusCode;
      // The same failure met by the deploy check.
      await invokeBuffered(broken().cancelOrder, cancelEvent(DEPLOY_CHECK_KEY_ID), context());
    });
    // Lambda's Errors would count nothing: the invocation succeeded, with a 500.
    expect(status).toBe(500);
    const counted = lines.filter((l) =>
      matchesFilter(INTERNAL_ERROR_ANSWER_PATTERN.logPatternString, l),
    );
    expect(counted).toHaveLength(1);
    const dimension = (path: string) => counted[0]![path.replace(/^\$\./, '')];
    expect(dimension(VERSION_FILTER_DIMENSIONS.FunctionName)).toBe(fnName('cancelOrder'));
    expect(dimension(VERSION_FILTER_DIMENSIONS.FunctionVersion)).toBe(VERSION);
    // The deploy check's lines say so.
    expect(lines.filter((l) => l.deploy_check === true && l.status === 500)).toHaveLength(1);
  });

  it('counts a 503 (a DynamoDB call that failed or ran out of time) apart from the 500s, once, and not as one', async () => {
    const throttled = createCancelOrderHandler({
      orders: () =>
        ({
          cancel: async () => {
            const { DependencyFailure } = await import('../../lib/failures.ts');
            throw new DependencyFailure('transient', 'orders table', 'throttled');
          },
        }) as never,
      limiter: () => new DynamoDbRateLimiter(t.client, t.tables.rateLimits),
    });
    const lines = await capturedLines(() =>
      invokeBuffered(throttled, cancelEvent('key_y'), context()),
    );
    expect(lines.filter((l) => l.status === 503)).toHaveLength(1);
    expect(
      lines.filter((l) => matchesFilter(INTERNAL_ERROR_ANSWER_PATTERN.logPatternString, l)),
    ).toEqual([]);
    const unavailable = lines.filter((l) =>
      matchesFilter(UNAVAILABLE_ANSWER_PATTERN.logPatternString, l),
    );
    expect(unavailable).toHaveLength(1);
    expect(unavailable[0]).toMatchObject({ function_version: VERSION });
  });

  it("counts the authorizer's transient failures (what its failed invocations less these are bugs)", async () => {
    const failing = createAuthorizerHandler({
      keys: () => ({
        findByHash: async () => {
          const { DependencyFailure } = await import('../../lib/failures.ts');
          throw new DependencyFailure('transient', 'api keys table', 'throttled');
        },
        create: () => Promise.resolve(true),
      }),
    });
    const { generateApiKey } = await import('../../lib/keys/api-key.ts');
    const lines = await capturedLines(() =>
      invokeBuffered(
        failing,
        {
          type: 'TOKEN',
          authorizationToken: `Bearer ${generateApiKey()}`,
          methodArn: 'arn:aws:execute-api:local:000000000000:abc123/v1/GET/store/orders',
        },
        { ...createContext(fnName('authorizer'), 10_000), functionVersion: VERSION },
      ).catch(() => undefined),
    );
    expect(
      lines.filter((l) => matchesFilter(KEY_CHECK_TRANSIENT_PATTERN.logPatternString, l)),
    ).toHaveLength(1);
  });
});

describe('the post-traffic hook', () => {
  const alarmState = (state: StateValue) =>
    cloudWatch.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        { AlarmName: 'store-orders-test-cancelOrderNewVersionFailures', StateValue: state },
      ],
    });
  const versions = (...numbers: string[]) =>
    lambda.on(ListVersionsByFunctionCommand).resolves({
      Versions: ['$LATEST', ...numbers].map((Version) => ({ Version })),
    });
  const afterShift = (group: FunctionName, changes: Partial<StandInDeployment> = {}) =>
    deployment(group, {
      hooks: { BeforeAllowTraffic: 'Succeeded', AfterAllowTraffic: 'InProgress' },
      ...changes,
    });
  const MINUTE = 60_000;
  type Query = { Id: string };
  type Read = { MetricDataQueries: Query[]; StartTime: Date; EndTime: Date };
  /**
   * CloudWatch answering the judgement's queries with one datapoint each, by query id (lower
   * case; none for the rest), stamped in a minute `at(read)` gives (default: the minute before
   * the read's end).
   */
  const answerFigures = (
    values: (read: Read) => Record<string, number>,
    at: (read: Read) => number = (read) =>
      Math.floor((read.EndTime.getTime() - 1) / MINUTE) * MINUTE,
  ) =>
    cloudWatch.on(GetMetricDataCommand).callsFake((input: Read) => {
      const figures = values(input);
      return {
        MetricDataResults: input.MetricDataQueries.map((q) => {
          const value = figures[q.Id.toLowerCase()];
          return value === undefined
            ? { Id: q.Id, Timestamps: [], Values: [] }
            : { Id: q.Id, Timestamps: [new Date(at(input))], Values: [value] };
        }),
      };
    });
  /** A minute's traffic of a healthy deployment after the last shift: every invocation the new version's. */
  const HEALTHY = { newrequests: 100, liverequests: 100, oldrequests: 2_000 };
  /**
   * cancelOrder's first invocations after a shift on the minute are in CloudWatch this long
   * after it: its first whole minute, and CloudWatch's delay.
   */
  const SETTLE_MS = settledAt('cancelOrder', 1_800_000_000_000) - 1_800_000_000_000;

  beforeEach(() => {
    lambda.on(UpdateAliasCommand).resolves({});
    lambda.on(CreateAliasCommand).resolves({});
  });

  it('resumes the scaling, watches and judges for the bake and until the first figures after the shift are in, records the version to roll back to, then deletes the versions beyond the newest 3 that no alias uses', async () => {
    alarmState('OK');
    answerFigures(() => HEALTHY);
    versions('1', '2', '3', '4', '5', '6', '7');
    // `live` points at 7; `rollback` at 6; an old alias still routes to 2.
    lambda.on(ListAliasesCommand).resolves({
      Aliases: [
        { Name: 'live', FunctionVersion: '7' },
        { Name: ROLLBACK_ALIAS, FunctionVersion: '6' },
        {
          Name: 'old',
          FunctionVersion: '4',
          RoutingConfig: { AdditionalVersionWeights: { '2': 0.5 } },
        },
      ],
    });
    lambda.on(DeleteFunctionCommand).resolves({});
    const lines = await capturedLines(async () =>
      expect(await hooks().postTraffic(afterShift('cancelOrder'))).toBe('Succeeded'),
    );
    expect(scaling()).toEqual([[`function:${fnName('cancelOrder')}:live`, false]]);
    // The bake's reads at its start and every ALARM_POLL_MS to its end (60 s: 0, 20, 40, 60),
    // then on until the first whole minute after the shift is in CloudWatch (80, 100, 120 s).
    expect(SETTLE_MS).toBe(60_000 + METRICS_DELAY_MS);
    const reads = SETTLE_MS / ALARM_POLL_MS + 1;
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(reads);
    expect(cloudWatch.commandCalls(GetMetricDataCommand)).toHaveLength(reads);
    expect(lines.find((l) => l.message === 'Watch passed')).toMatchObject({
      notSeen: `CloudWatch's figures of its last ${METRICS_DELAY_MS / 1000} s`,
    });
    expect(lambda.commandCalls(UpdateAliasCommand).map((c) => c.args[0].input)).toEqual([
      expect.objectContaining({
        FunctionName: fnName('cancelOrder'),
        Name: ROLLBACK_ALIAS,
        FunctionVersion: OLD_VERSION,
      }),
    ]);
    const deleted = lambda
      .commandCalls(DeleteFunctionCommand)
      .map((call) => [call.args[0].input.FunctionName, call.args[0].input.Qualifier]);
    expect(deleted).toEqual([
      [fnName('cancelOrder'), '3'],
      [fnName('cancelOrder'), '1'],
    ]);
    expect(verdicts()).toEqual(['Succeeded']);
  });

  it('creates the rollback alias the first time, and leaves it where it was after a deployment that moved live back (a rollback through CloudFormation), which it passes without figures of its own: that version served before', async () => {
    alarmState('OK');
    answerFigures(() => HEALTHY);
    versions('6', '7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [{ Name: 'live', FunctionVersion: '7' }] });
    lambda
      .on(UpdateAliasCommand)
      .rejects(new ResourceNotFoundException({ message: 'Alias not found', $metadata: {} }));
    expect(await hooks().postTraffic(afterShift('cancelOrder'))).toBe('Succeeded');
    expect(lambda.commandCalls(CreateAliasCommand).map((c) => c.args[0].input)).toEqual([
      expect.objectContaining({ Name: ROLLBACK_ALIAS, FunctionVersion: OLD_VERSION }),
    ]);
    lambda.resetHistory();
    answerFigures(() => ({}));
    expect(
      await hooks().postTraffic(
        afterShift('cancelOrder', { currentVersion: '9', targetVersion: '5' }),
      ),
    ).toBe('Succeeded');
    expect(lambda.commandCalls(UpdateAliasCommand)).toEqual([]);
    expect(lambda.commandCalls(CreateAliasCommand)).toEqual([]);
  });

  it("judges the new version against the old one over the deployment: reads both versions' figures from an hour before it started to now, minute by minute", async () => {
    alarmState('OK');
    versions('6', '7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
    // The new version failed 4 of its 40 requests; the old one 0 of 2,000.
    answerFigures(() => ({
      newrequests: 40,
      liverequests: 40,
      oldrequests: 2000,
      newfailures1: 4,
    }));
    const event = afterShift('cancelOrder');
    const lines = await capturedLines(() => hooks().postTraffic(event));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.alarms).toEqual([
      expect.stringMatching(/^4 failures in 40 requests/),
    ]);
    const [call] = cloudWatch.commandCalls(GetMetricDataCommand);
    const { StartTime, EndTime, MetricDataQueries } = call!.args[0].input;
    const { createdAt } = deployments.get(event.DeploymentId)!;
    expect(createdAt - StartTime!.getTime()).toBeGreaterThanOrEqual(60 * 60_000);
    expect(EndTime!.getTime()).toBe(1_800_000_000_000);
    const query = (id: string) => MetricDataQueries!.find((q) => q.Id === id)!.MetricStat!;
    expect(query('newrequests').Metric!.Dimensions).toContainEqual({
      Name: 'ExecutedVersion',
      Value: VERSION,
    });
    expect(query('oldrequests').Metric!.Dimensions).toContainEqual({
      Name: 'ExecutedVersion',
      Value: OLD_VERSION,
    });
    // live's: through the alias, every version.
    expect(query('liverequests').Metric!.Dimensions!.map((d) => d.Name)).toEqual([
      'FunctionName',
      'Resource',
    ]);
    // Counts minute by minute; the medians over the whole window.
    expect(query('newrequests').Period).toBe(60);
    expect(query('newlatency').Period! % 60).toBe(0);
    expect(query('newlatency').Period!).toBeGreaterThan(60 * 60);
    // Nothing pruned, no rollback version recorded: the deploy rolls back.
    expect(lambda.commandCalls(DeleteFunctionCommand)).toHaveLength(0);
    expect(lambda.commandCalls(UpdateAliasCommand)).toHaveLength(0);
  });

  it("fails closed: without invocations of the new version in its figures it watches on past the bake, up to the hook's own time less what it needs after, then fails saying which figures it lacked", async () => {
    alarmState('OK');
    answerFigures(() => ({ ...HEALTHY, newrequests: MIN_OWN_REQUESTS - 1, liverequests: 19 }));
    const clock = fakeClock();
    const started = clock.now();
    const lines = await capturedLines(() =>
      createDeployHooks({
        ...hookClients(),
        dynamodb: t.client,
        settings: settings(),
        ...clock,
      }).postTraffic(afterShift('cancelOrder')),
    );
    expect(verdicts()).toEqual(['Failed']);
    // Lambda's 15 minutes (the hook's timeout), less the 2 it keeps to record, prune and report.
    expect(clock.now() - started).toBe(
      DEPLOY_HOOKS.postTraffic.timeoutSeconds * 1000 - WATCH_RESERVE_MS,
    );
    const missing = `${MIN_OWN_REQUESTS - 1} invocations of the new version in its figures, ${MIN_OWN_REQUESTS} needed`;
    expect(lines.find((l) => String(l.message).startsWith('Watch extended'))).toMatchObject({
      missing,
    });
    expect(lines.find((l) => l.level === 'ERROR')?.alarms).toEqual([
      `no verdict without the new version's figures: ${missing}`,
    ]);
    expect(lambda.commandCalls(DeleteFunctionCommand)).toHaveLength(0);
  });

  it('passes once the figures come in during the extension (CloudWatch late by minutes)', async () => {
    alarmState('OK');
    versions('7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
    const clock = fakeClock();
    const shift = clock.now();
    // Nothing of the new version until 3 minutes after the shift.
    answerFigures((read) =>
      read.EndTime.getTime() < shift + 3 * MINUTE ? { oldrequests: 2000 } : HEALTHY,
    );
    expect(
      await createDeployHooks({
        ...hookClients(),
        dynamodb: t.client,
        settings: settings(),
        ...clock,
      }).postTraffic(afterShift('cancelOrder')),
    ).toBe('Succeeded');
    expect(clock.now() - shift).toBe(3 * MINUTE);
  });

  it("fails closed on figures that are not what live serves: the new version with 10% of live's invocations since the last shift", async () => {
    alarmState('OK');
    answerFigures(() => ({ newrequests: 100, liverequests: 1000, oldrequests: 2000 }));
    const lines = await capturedLines(() => hooks().postTraffic(afterShift('cancelOrder')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.alarms).toEqual([
      expect.stringMatching(
        /the new version has 100 of the 1000 invocations through live since the last shift/,
      ),
    ]);
  });

  it("judges its 503s against the old version's in the same minutes: a version answering 503 where the old one did not fails; a DynamoDB incident both see does not", async () => {
    alarmState('OK');
    versions('7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
    // A minute of production's canary (after the deployment started): both versions served.
    const canaryMinute = 1_800_000_000_000 - 3 * MINUTE;
    const during = (values: Record<string, number>) =>
      answerFigures(
        () => ({ ...values, liverequests: 0 }),
        () => canaryMinute,
      );
    during({ newrequests: 100, newunavailable: 20, oldrequests: 900, oldunavailable: 0 });
    let lines = await capturedLines(() => hooks().postTraffic(afterShift('cancelOrder')));
    expect(verdicts()).toEqual(['Failed']);
    expect(lines.find((l) => l.level === 'ERROR')?.alarms).toEqual([
      expect.stringMatching(
        /^20 answers 503 in 100 requests, a chance of .* at the old version's rate of 0.001 over the same minutes$/,
      ),
    ]);
    codeDeploy.resetHistory();
    // The same minute, DynamoDB slow for both: the old version answered 20% 503s too.
    during({ newrequests: 100, newunavailable: 20, oldrequests: 900, oldunavailable: 180 });
    lines = await capturedLines(() => hooks().postTraffic(afterShift('cancelOrder')));
    expect(verdicts()).toEqual(['Succeeded']);
    expect(lines.find((l) => l.message === 'Judgement of the new version')).toMatchObject({
      unavailableChance: expect.any(Number),
    });
  });

  it("probes the new version at each read where the stage says so (watchProbe): a stage without callers passes on the probes' calls, a broken version fails on them", async () => {
    alarmState('OK');
    versions('7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
    answerFigures(() => ({}));
    deploy(healthy());
    let lines = await capturedLines(async () =>
      expect(await hooks({ watchProbe: true }).postTraffic(afterShift('cancelOrder'))).toBe(
        'Succeeded',
      ),
    );
    // 3 calls a read (cancel, cancel again, an unknown id): 7 reads to 20 of its own.
    const passed = lines.find((l) => l.message === 'Watch passed');
    expect(passed?.probes).toEqual({ requests: 21, failures: 0, unavailable: 0 });
    expect(invocations.map((call) => call.status)).toEqual(
      Array.from({ length: 7 }, () => [204, 204, 404]).flat(),
    );
    codeDeploy.resetHistory();
    invocations.length = 0;
    deploy(broken());
    lines = await capturedLines(() =>
      hooks({ watchProbe: true }).postTraffic(afterShift('cancelOrder')),
    );
    expect(verdicts()).toEqual(['Failed']);
    // Each probe stops at its first call, a 500: 2 failures of 2 at the first reads.
    expect(invocations).toHaveLength(2);
    const failed = lines.find((l) => String(l.message).startsWith('The new version failed'));
    expect(failed?.alarms).toEqual([expect.stringMatching(/^2 failures in 2 requests/)]);
  });

  it('fails the deployment (a rollback) at the first read that finds a deployment alarm in ALARM after the last shift, and deletes nothing', async () => {
    alarmState('ALARM');
    answerFigures(() => HEALTHY);
    expect(await hooks().postTraffic(afterShift('cancelOrder'))).toBe('Failed');
    // The watch stops at once: no waiting out the rest of the bake.
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(1);
    expect(lambda.commandCalls(ListVersionsByFunctionCommand)).toHaveLength(0);
    expect(lambda.commandCalls(DeleteFunctionCommand)).toHaveLength(0);
    expect(verdicts()).toEqual(['Failed']);
  });

  it('lets a hotfix through (deployIgnoringAlarms): the alarm in ALARM and the missing figures are logged, not obeyed, and the old versions are pruned', async () => {
    alarmState('ALARM');
    answerFigures(() => ({}));
    versions('4', '5', '6', '7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [{ Name: 'live', FunctionVersion: '7' }] });
    lambda.on(DeleteFunctionCommand).resolves({});
    const lines = await capturedLines(async () =>
      expect(await hooks({ ignoreAlarms: true }).postTraffic(afterShift('cancelOrder'))).toBe(
        'Succeeded',
      ),
    );
    // Each read of the watch found the alarm, and said so; the watch ran to its end (the bake,
    // then cancelOrder's first figures after the shift).
    const reads = SETTLE_MS / ALARM_POLL_MS + 1;
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(reads);
    const ignored = lines.filter(
      (l) => l.message === 'Alarm in ALARM ignored (deployIgnoringAlarms)',
    );
    expect(ignored).toHaveLength(reads);
    expect(ignored[0]).toMatchObject({
      level: 'WARN',
      alarms: ['store-orders-test-cancelOrderNewVersionFailures'],
    });
    expect(lines.find((l) => l.message === 'Judgement of the new version')?.missing).toMatch(
      /invocations of the new version/,
    );
    // Then the pruning: the versions beyond the newest 3.
    expect(
      lambda.commandCalls(DeleteFunctionCommand).map((call) => call.args[0].input.Qualifier),
    ).toEqual(['4']);
    expect(verdicts()).toEqual(['Succeeded']);
  });

  it('resumes the scaling after a failed or stopped deployment (EventBridge, to the post-traffic function), and gives no verdict', async () => {
    const deployed = hooks();
    const answer = await hookHandlers(() => deployed).postTraffic(
      {
        'detail-type': 'CodeDeploy Deployment State-change Notification',
        detail: { deploymentGroup: 'authorizer', state: 'FAILURE' },
      },
      {},
    );
    expect(answer).toBeUndefined();
    expect(scaling()).toEqual([[`function:${fnName('authorizer')}:live`, false]]);
    expect(verdicts()).toEqual([]);
  });

  it('streams nothing through the stubs it does not use (no Lambda invocation after the shift)', async () => {
    alarmState('OK');
    answerFigures(() => HEALTHY);
    versions('7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [] });
    await hooks().postTraffic(afterShift('listOrders'));
    expect(lambda.commandCalls(InvokeWithResponseStreamCommand)).toHaveLength(0);
  });
});

describe('after a rolled-back stack update (EventBridge, to the post-traffic function)', () => {
  const STACK = 'arn:aws:cloudformation:local:000000000000:stack/Staging-Api/1';
  /** A function's code and configuration as Lambda keeps them ($LATEST, or a version). */
  interface Content {
    readonly code: string;
    readonly table: string;
  }
  /**
   * A stand-in of Lambda's versions with PublishVersion's documented rules: a version of
   * `$LATEST` as it is; the last version again when nothing changed since it; nothing when
   * CodeSha256 or RevisionId is not `$LATEST`'s. `retryAt`: a deploy that changes `$LATEST`
   * just as the hook publishes (a retry started before its event landed).
   */
  class Functions {
    readonly latest = new Map<string, Content & { revision: number }>();
    readonly versions = new Map<string, Content[]>();
    retryAt: ((name: string) => void) | undefined;

    constructor(old: Content) {
      for (const name of FUNCTION_NAMES.map(fnName)) {
        this.versions.set(
          name,
          Array.from({ length: 7 }, () => old),
        );
        this.latest.set(name, { ...old, revision: 1 });
      }
    }

    update(name: string, content: Content): void {
      this.latest.set(name, { ...content, revision: this.latest.get(name)!.revision + 1 });
    }

    /** A publication, as PublishVersion answers it: the version, and whether it is a new one. */
    publish(name: string, input: { CodeSha256?: string; RevisionId?: string } = {}) {
      const latest = this.latest.get(name)!;
      if (input.CodeSha256 !== undefined && input.CodeSha256 !== latest.code) {
        throw new InvalidParameterValueException({
          message: `CodeSHA256 (${input.CodeSha256}) is different from current CodeSHA256 in $LATEST (${latest.code}). Please try again with the CodeSHA256 in $LATEST.`,
          $metadata: {},
        });
      }
      if (input.RevisionId !== undefined && input.RevisionId !== String(latest.revision)) {
        throw Object.assign(
          new Error('The Revision Id provided does not match the latest Revision Id'),
          {
            name: 'PreconditionFailedException',
          },
        );
      }
      const versions = this.versions.get(name)!;
      const last = versions.at(-1)!;
      if (last.code === latest.code && last.table === latest.table) {
        return { version: String(versions.length), created: false };
      }
      versions.push({ code: latest.code, table: latest.table });
      return { version: String(versions.length), created: true };
    }

    /** A deploy's publication through CloudFormation: a version that exists fails it. */
    deploy(content: Content): boolean {
      return FUNCTION_NAMES.map(fnName).every((name) => {
        this.update(name, content);
        return this.publish(name).created;
      });
    }

    configuration(name: string, qualifier: string | undefined): FunctionConfiguration {
      const content =
        qualifier === undefined
          ? this.latest.get(name)!
          : this.versions.get(name)![Number(qualifier) - 1]!;
      return {
        FunctionName: name,
        CodeSha256: content.code,
        Environment: { Variables: { ORDERS_TABLE: content.table } },
        ...('revision' in content ? { RevisionId: String(content.revision) } : {}),
      };
    }

    answer(): void {
      lambda
        .on(GetFunctionConfigurationCommand)
        .callsFake((input: { FunctionName: string; Qualifier?: string }) =>
          this.configuration(input.FunctionName, input.Qualifier),
        );
      lambda
        .on(PublishVersionCommand)
        .callsFake((input: { FunctionName: string; CodeSha256?: string; RevisionId?: string }) => {
          this.retryAt?.(input.FunctionName);
          return { Version: this.publish(input.FunctionName, input).version };
        });
    }
  }

  const A = { code: 'sha-A', table: 'orders' };
  const B = { code: 'sha-B', table: 'orders' };
  /** The stack, its status, and the version of each function its template names. */
  const stack = (status: StackStatus, version = '7') => {
    cloudFormation.on(DescribeStacksCommand).resolves({
      Stacks: [{ StackName: 'Staging-Api', StackStatus: status, CreationTime: new Date() }],
    });
    cloudFormation.on(ListStackResourcesCommand).resolves({
      StackResourceSummaries: FUNCTION_NAMES.map((name) => ({
        LogicalResourceId: `${name}CurrentVersion`,
        PhysicalResourceId: `arn:aws:lambda:local:000000000000:function:${fnName(name)}:${version}`,
        ResourceType: 'AWS::Lambda::Version',
        ResourceStatus: 'UPDATE_COMPLETE',
        LastUpdatedTimestamp: new Date(),
      })),
    });
  };
  const rolledBack = (deployed = hooks()) =>
    hookHandlers(() => deployed).postTraffic(
      {
        'detail-type': 'CloudFormation Stack Status Change',
        detail: { 'stack-id': STACK, 'status-details': { status: 'UPDATE_ROLLBACK_COMPLETE' } },
      },
      {},
    );
  /** A deploy of B over A that one function's failure rolled back: each function published B (8), then got A back. */
  const failedDeploy = () => {
    const functions = new Functions(A);
    functions.answer();
    expect(functions.deploy(B)).toBe(true);
    for (const name of FUNCTION_NAMES.map(fnName)) functions.update(name, A);
    return functions;
  };

  it("publishes each function's rolled-back code (the version the stack names), so that a retry of the same deploy publishes its own: once, however often the notice comes", async () => {
    const functions = failedDeploy();
    stack('UPDATE_ROLLBACK_COMPLETE');
    // Without it, the retry's publication of B finds B the last version: CloudFormation fails.
    const withoutRepublish = new Functions(A);
    withoutRepublish.deploy(B);
    for (const name of FUNCTION_NAMES.map(fnName)) withoutRepublish.update(name, A);
    expect(withoutRepublish.deploy(B)).toBe(false);

    await rolledBack();
    for (const name of FUNCTION_NAMES.map(fnName)) {
      expect(functions.versions.get(name)!.map((v) => v.code)).toEqual([
        ...Array(7).fill('sha-A'),
        'sha-B',
        'sha-A',
      ]);
    }
    expect(
      lambda
        .commandCalls(PublishVersionCommand)
        .map(({ args: [{ input }] }) => [input.FunctionName, input.CodeSha256, input.RevisionId]),
    ).toEqual(FUNCTION_NAMES.map((name) => [fnName(name), 'sha-A', '3']));
    // The notice again (EventBridge delivers at least once): nothing more.
    await rolledBack();
    expect(functions.versions.get(fnName('cancelOrder'))).toHaveLength(9);
    // The retry, right after: every function publishes B as a new version.
    expect(functions.deploy(B)).toBe(true);
    expect(verdicts()).toEqual([]);
    expect(scaling()).toEqual([]);
  });

  it('publishes nothing but the rolled-back code: not once the stack updates again, not when a retry changes the function as it publishes', async () => {
    let functions = failedDeploy();
    // A retry already under way: the stack is no longer rolled back.
    stack('UPDATE_IN_PROGRESS');
    functions.update(fnName('cancelOrder'), B);
    await rolledBack();
    expect(lambda.commandCalls(PublishVersionCommand)).toEqual([]);
    expect(lambda.commandCalls(ListStackResourcesCommand)).toEqual([]);

    // The retry's code lands between the hook's read and its publication: Lambda refuses.
    lambda.reset();
    functions = failedDeploy();
    stack('UPDATE_ROLLBACK_COMPLETE');
    functions.retryAt = (name) => functions.update(name, B);
    const lines = await capturedLines(() => rolledBack());
    for (const name of FUNCTION_NAMES.map(fnName)) {
      // No version of B published by the hook (8 is the failed deploy's).
      expect(
        functions.versions
          .get(name)!
          .map((v) => v.code)
          .slice(8),
      ).toEqual([]);
    }
    expect(
      lines.filter((l) => l.message === 'Nothing published after the rolled-back stack update'),
    ).toHaveLength(4);
    expect(lines.filter((l) => l.level === 'ERROR')).toEqual([]);

    // A retry that changed only the configuration ($LATEST is not the version the stack names).
    lambda.reset();
    functions = failedDeploy();
    stack('UPDATE_ROLLBACK_COMPLETE');
    functions.update(fnName('authorizer'), { ...A, table: 'orders-2' });
    await rolledBack();
    expect(
      lambda.commandCalls(PublishVersionCommand).map((c) => c.args[0].input.FunctionName),
    ).toEqual(FUNCTION_NAMES.filter((n) => n !== 'authorizer').map(fnName));
  });

  it('publishes each function on its own: one that cannot be read keeps none of the others from it, and the notice is tried again (it throws, naming it)', async () => {
    const functions = failedDeploy();
    stack('UPDATE_ROLLBACK_COMPLETE');
    lambda
      .on(GetFunctionConfigurationCommand, { FunctionName: fnName('listOrders') })
      .rejects(new Error('TooManyRequestsException'));
    await expect(rolledBack()).rejects.toThrow('not published: listOrders');
    for (const name of FUNCTION_NAMES.filter((n) => n !== 'listOrders').map(fnName)) {
      expect(functions.versions.get(name)).toHaveLength(9);
    }
    expect(functions.versions.get(fnName('listOrders'))).toHaveLength(8);
  });
});

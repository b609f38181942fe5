/**
 * CodeDeploy's hooks (functions/deploy-hooks.ts and its rooms, functions/deploy-hooks/) against the local stack: the real handlers on
 * DynamoDB Local stand behind a stubbed Lambda (aws-sdk-client-mock), CodeDeploy, Application
 * Auto Scaling and CloudWatch are stubbed; never AWS. A deliberately broken version (its table
 * missing: it answers 500, or its invocation fails) gets no traffic; a healthy one passes, and
 * no order changes. The lines a broken version writes are the ones the deploy alarms' metric
 * filter counts, by the version that wrote them.
 */
import {
  ApplicationAutoScalingClient,
  RegisterScalableTargetCommand,
} from '@aws-sdk/client-application-auto-scaling';
import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  type StateValue,
} from '@aws-sdk/client-cloudwatch';
import {
  CodeDeployClient,
  GetDeploymentCommand,
  PutLifecycleEventHookExecutionStatusCommand,
} from '@aws-sdk/client-codedeploy';
import {
  DeleteFunctionCommand,
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  LambdaClient,
  ListAliasesCommand,
  ListVersionsByFunctionCommand,
  type InvokeWithResponseStreamResponseEvent,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
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
import { createDeployHooks } from '../../functions/deploy-hooks/hooks.ts';
import { settingsFromEnv, type HookSettings } from '../../functions/deploy-hooks/settings.ts';
import type { HookVerdict } from '../../functions/deploy-hooks/verdict.ts';
import { createListOrderPagesHandler } from '../../functions/list-order-pages.ts';
import { createListOrdersHandler } from '../../functions/list-orders.ts';
import { SERVER_ERROR_ANSWER_DIMENSIONS, SERVER_ERROR_ANSWER_PATTERN } from '../../infra/alarms.ts';
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { DynamoDbOrderPages } from '../../lib/dynamodb/order-pages.ts';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { DynamoDbRateLimiter } from '../../lib/dynamodb/rate-limit-table.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import { HOOK_ENV } from '../../lib/deployment.ts';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';
import type { Order } from '../../lib/orders/order.ts';
import {
  createContext,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
  type LambdaContext,
} from '../../local/lambda-runtime.ts';
import { scanAll } from '../admin/support.ts';
import { createTestTables, type TestTables } from '../support/tables.ts';

const lambda = mockClient(LambdaClient);
const codeDeploy = mockClient(CodeDeployClient);
const autoScaling = mockClient(ApplicationAutoScalingClient);
const cloudWatch = mockClient(CloudWatchClient);

let t: TestTables;
/** The handler behind each function name the stubbed Lambda is asked for. */
let deployed: Record<string, unknown> = {};

const ORDERS: Order[] = [
  { id: 1n, petId: 10n, quantity: 1, status: 'pending' },
  { id: 2n, status: 'shipped', complete: true },
];

const fnName = (name: FunctionName) => `store-orders-test-${name}`;
const VERSION = '7';

function settings(overrides: Partial<HookSettings> = {}): HookSettings {
  return {
    targets: Object.fromEntries(
      FUNCTION_NAMES.map((name) => [
        name,
        {
          functionName: fnName(name),
          version: VERSION,
          alarms: [`store-orders-test-${name}NewVersionFailureRate`],
          provisioned: name !== 'listOrders',
        },
      ]),
    ) as unknown as HookSettings['targets'],
    bakeSeconds: 60,
    versionsKept: 3,
    ignoreAlarms: false,
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
    codeDeploy: new CodeDeployClient({}),
    lambda: new LambdaClient({}),
    autoScaling: new ApplicationAutoScalingClient({}),
    cloudWatch: new CloudWatchClient({}),
    settings: settings(overrides),
    ...fakeClock(),
  });
}

/** The v2 list's pages on a table, with every index (as the local tables have them). */
const pages = (table: string) =>
  new DynamoDbOrderPages(t.client, table, { indexes: new Set(ORDER_INDEX_NAMES) });

function healthy(): Record<FunctionName, unknown> {
  const orders = new DynamoDbOrderStore(t.client, t.tables.orders);
  const limiter = new DynamoDbRateLimiter(t.client, t.tables.rateLimits);
  return {
    listOrders: createListOrdersHandler({ orders: () => orders, limiter: () => limiter }),
    listOrderPages: createListOrderPagesHandler({
      orders: () => orders,
      pages: () => pages(t.tables.orders),
      limiter: () => limiter,
    }),
    cancelOrder: createCancelOrderHandler({ orders: () => orders, limiter: () => limiter }),
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
    cancelOrder: createCancelOrderHandler({ orders: () => orders, limiter: () => limiter }),
    authorizer: createAuthorizerHandler({ keys: () => new DynamoDbKeyStore(t.client, missing) }),
  };
}

const context = (name: string): LambdaContext => ({
  ...createContext(name, 10_000),
  functionVersion: VERSION,
});

/** The stubbed Lambda runs the handler deployed under the name it is asked for, as Lambda would. */
function standInLambda(): void {
  const handlerOf = (input: { FunctionName?: string; Qualifier?: string }) => {
    expect(input.Qualifier).toBe(VERSION);
    return deployed[input.FunctionName ?? ''];
  };
  lambda
    .on(InvokeCommand)
    .callsFake(async (input: { FunctionName?: string; Payload?: Uint8Array }) => {
      const handler = handlerOf(input);
      const event = JSON.parse(Buffer.from(input.Payload!).toString()) as unknown;
      try {
        const result = await invokeBuffered(handler, event, context(input.FunctionName!));
        return { StatusCode: 200, Payload: Buffer.from(JSON.stringify(result)) };
      } catch (error) {
        const errorMessage = (error as Error).message;
        return {
          StatusCode: 200,
          FunctionError: 'Unhandled',
          Payload: Buffer.from(JSON.stringify({ errorMessage })),
        };
      }
    });
  lambda
    .on(InvokeWithResponseStreamCommand)
    .callsFake(async (input: { FunctionName?: string; Payload?: Uint8Array }) => {
      const handler = handlerOf(input);
      expect(isStreamingHandler(handler)).toBe(true);
      const event = JSON.parse(Buffer.from(input.Payload!).toString()) as unknown;
      const streamed = await invokeStreaming(handler, event, context(input.FunctionName!));
      async function* events(): AsyncGenerator<InvokeWithResponseStreamResponseEvent> {
        // What Lambda streams: the HTTP prelude and its 8 NUL bytes, then the body.
        const prelude = Buffer.from(JSON.stringify(streamed.prelude ?? {}));
        yield { PayloadChunk: { Payload: Buffer.concat([prelude, Buffer.alloc(8)]) } };
        try {
          for await (const chunk of streamed.body) {
            yield { PayloadChunk: { Payload: Buffer.from(chunk as Buffer) } };
          }
          await streamed.done;
          yield { InvokeComplete: {} };
        } catch (error) {
          yield { InvokeComplete: { ErrorCode: 'Unhandled', ErrorDetails: String(error) } };
        }
      }
      return { StatusCode: 200, EventStream: events() };
    });
}

/** The verdicts the hooks gave CodeDeploy, in order. */
function verdicts(): HookVerdict[] {
  return codeDeploy
    .commandCalls(PutLifecycleEventHookExecutionStatusCommand)
    .map((call) => call.args[0].input.status as HookVerdict);
}

/** The suspensions (true) and resumptions (false) of the scaling of provisioned concurrency. */
function scaling(): [string, boolean][] {
  return autoScaling.commandCalls(RegisterScalableTargetCommand).map((call) => {
    const { ResourceId, SuspendedState } = call.args[0].input;
    return [ResourceId!, SuspendedState!.DynamicScalingOutSuspended!];
  });
}

/** The event the one probe of a pre-traffic hook sent its function. */
function probeEvent(): ProbeEvent {
  const payloads = [
    ...lambda.commandCalls(InvokeCommand),
    ...lambda.commandCalls(InvokeWithResponseStreamCommand),
  ].map((call) => call.args[0].input.Payload as Uint8Array);
  expect(payloads).toHaveLength(1);
  return JSON.parse(Buffer.from(payloads[0]!).toString()) as ProbeEvent;
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

const hookEvent = (group: FunctionName) => ({
  DeploymentId: `d-${group}`,
  LifecycleEventHookExecutionId: `hook-${group}`,
});

beforeAll(async () => {
  t = await createTestTables('hooks');
  await new DynamoDbOrderStore(t.client, t.tables.orders).putOrders(ORDERS);
});
afterAll(() => t.drop());
beforeEach(() => {
  // The hooks' and the functions' lines (tests that read them capture them).
  vi.spyOn(process.stdout, 'write').mockReturnValue(true);
  vi.spyOn(process.stderr, 'write').mockReturnValue(true);
  standInLambda();
  codeDeploy.on(GetDeploymentCommand).callsFake((input: { deploymentId?: string }) => ({
    deploymentInfo: { deploymentGroupName: input.deploymentId!.replace(/^d-/, '') },
  }));
  codeDeploy.on(PutLifecycleEventHookExecutionStatusCommand).resolves({});
  autoScaling.on(RegisterScalableTargetCommand).resolves({});
});
afterEach(() => {
  vi.restoreAllMocks();
  lambda.reset();
  codeDeploy.reset();
  autoScaling.reset();
  cloudWatch.reset();
});

describe('the pre-traffic hook, against the local stack', () => {
  it.each(FUNCTION_NAMES)(
    'passes a healthy %s after calling its new version as API Gateway would, changing no order',
    async (group) => {
      deployed = Object.fromEntries(
        Object.entries(healthy()).map(([name, h]) => [fnName(name as FunctionName), h]),
      );
      const before = await scanAll(t.client, t.tables.orders);
      expect(await hooks().preTraffic(hookEvent(group))).toBe('Succeeded');
      expect(verdicts()).toEqual(['Succeeded']);
      expect(await scanAll(t.client, t.tables.orders)).toEqual(before);
      const streamed = lambda.commandCalls(InvokeWithResponseStreamCommand).length;
      // The lists stream (API Gateway streams GET /store/orders in every version).
      expect(streamed).toBe(group === 'listOrders' || group === 'listOrderPages' ? 1 : 0);
      // The HTTP probes' events are as API Gateway builds them: each header and query parameter
      // in both the single- and the multi-valued map, the request context naming the route.
      if (group !== 'authorizer') expectGatewayShaped(probeEvent());
      // Scaling is suspended for the shift (the post-traffic hook resumes it).
      expect(scaling()).toEqual(
        group === 'listOrders' ? [] : [[`function:${fnName(group)}:live`, true]],
      );
    },
  );

  it.each(FUNCTION_NAMES)(
    'fails a %s version whose table is missing (a 500, or a failed invocation): no traffic moves to it',
    async (group) => {
      deployed = Object.fromEntries(
        Object.entries(broken()).map(([name, h]) => [fnName(name as FunctionName), h]),
      );
      expect(await hooks().preTraffic(hookEvent(group))).toBe('Failed');
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

  it('gives CodeDeploy a verdict even when it cannot tell which deployment it is in (else CodeDeploy waits an hour)', async () => {
    codeDeploy.on(GetDeploymentCommand).rejects(new Error('AccessDeniedException'));
    expect(await hooks().preTraffic(hookEvent('cancelOrder'))).toBe('Failed');
    expect(verdicts()).toEqual(['Failed']);
  });
});

describe('a hook whose environment is missing or malformed', () => {
  /** The environment infra/deploy-hooks.ts sets, as the hooks' settings() would have it. */
  const goodEnv = (): Record<string, string> => {
    const { targets, bakeSeconds, versionsKept, ignoreAlarms } = settings();
    return {
      [HOOK_ENV.targets]: JSON.stringify(targets),
      [HOOK_ENV.bakeSeconds]: String(bakeSeconds),
      [HOOK_ENV.versionsKept]: String(versionsKept),
      [HOOK_ENV.ignoreAlarms]: String(ignoreAlarms),
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
      'a target without its version',
      HOOK_ENV.targets,
      JSON.stringify({
        ...settings().targets,
        cancelOrder: { ...settings().targets.cancelOrder, version: '' },
      }),
      /DEPLOY_TARGETS must be .* for cancelOrder .*\(version: a non-empty text\), got ""/,
    ],
    ['not JSON of an object', HOOK_ENV.targets, 'null', /DEPLOY_TARGETS must be .*, got null/],
    ['not a number', HOOK_ENV.bakeSeconds, 'ten', /BAKE_SECONDS must be a whole number/],
    ['empty', HOOK_ENV.versionsKept, '', /VERSIONS_KEPT is not set/],
    ['not a flag', HOOK_ENV.ignoreAlarms, 'yes', /IGNORE_ALARMS must be true or false/],
  ])('refuses %s (%s), naming the variable', (_, name, value, message) => {
    const env = { ...goodEnv(), [name]: value };
    expect(() => settingsFromEnv(env)).toThrow(message);
  });

  it.each(['preTraffic', 'postTraffic'] as const)(
    'fails the deployment in %s, with the reason in its log, instead of leaving CodeDeploy waiting an hour',
    async (which) => {
      const lines: string[] = [];
      vi.spyOn(process.stdout, 'write').mockImplementation(
        (text) => (lines.push(String(text)), true),
      );
      vi.spyOn(process.stderr, 'write').mockImplementation(
        (text) => (lines.push(String(text)), true),
      );
      // The handlers Lambda calls, with the environment of a hook deployed without its targets.
      const env = goodEnv();
      vi.stubEnv(HOOK_ENV.targets, '');
      vi.stubEnv(HOOK_ENV.bakeSeconds, env[HOOK_ENV.bakeSeconds]);
      vi.stubEnv(HOOK_ENV.versionsKept, env[HOOK_ENV.versionsKept]);
      vi.stubEnv(HOOK_ENV.ignoreAlarms, env[HOOK_ENV.ignoreAlarms]);
      try {
        const handler = which === 'preTraffic' ? preTraffic : postTraffic;
        expect(await handler(hookEvent('cancelOrder'), context('hooks') as never)).toBe('Failed');
      } finally {
        vi.unstubAllEnvs();
      }
      expect(verdicts()).toEqual(['Failed']);
      expect(lambda.commandCalls(InvokeCommand)).toHaveLength(0);
      expect(lines.join('')).toMatch(/failing the deployment.*DEPLOY_TARGETS is not set/s);
    },
  );

  it('tries the settings again at the next hook once they are fixed (a failed read is not kept)', async () => {
    let env: Record<string, string | undefined> = { ...goodEnv(), [HOOK_ENV.targets]: undefined };
    deployed = Object.fromEntries(
      Object.entries(healthy()).map(([name, h]) => [fnName(name as FunctionName), h]),
    );
    const hooksOf = createDeployHooks({
      codeDeploy: new CodeDeployClient({}),
      lambda: new LambdaClient({}),
      autoScaling: new ApplicationAutoScalingClient({}),
      cloudWatch: new CloudWatchClient({}),
      settings: () => settingsFromEnv(env),
      ...fakeClock(),
    });
    expect(await hooksOf.preTraffic(hookEvent('cancelOrder'))).toBe('Failed');
    env = goodEnv();
    expect(await hooksOf.preTraffic(hookEvent('cancelOrder'))).toBe('Succeeded');
    expect(verdicts()).toEqual(['Failed', 'Succeeded']);
  });
});

describe('the metric filter of the deploy alarms, on what a broken version writes', () => {
  /** The deployed filter pattern `{ $.<field> >= <n> }`, applied to a JSON line. */
  function matches(line: Record<string, unknown>): boolean {
    const [, field, number] = /^\{ \$\.(\w+) >= (\d+) \}$/.exec(
      SERVER_ERROR_ANSWER_PATTERN.logPatternString,
    )!;
    return typeof line[field!] === 'number' && (line[field!] as number) >= Number(number);
  }

  it("counts the broken cancelOrder's 500 once, under its function name and the version that ran", async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = (text: unknown) => {
      for (const line of String(text).split('\n').filter(Boolean)) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      return true;
    };
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    let status: number;
    try {
      deployed = { [fnName('cancelOrder')]: broken().cancelOrder };
      const result = (await invokeBuffered(
        broken().cancelOrder,
        {
          httpMethod: 'DELETE',
          resource: '/store/orders/{orderId}',
          path: '/store/orders/5',
          pathParameters: { orderId: '5' },
          headers: {},
          requestContext: {
            requestId: 'r-1',
            authorizer: { keyId: 'key_x', plan: 'pro', perMinute: '300', perDay: '10000' },
          },
        },
        context(fnName('cancelOrder')),
      )) as { statusCode: number };
      status = result.statusCode;
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    // Lambda's Errors would count nothing: the invocation succeeded, with a 500.
    expect(status).toBe(500);
    const counted = lines.filter(matches);
    expect(counted).toHaveLength(1);
    const dimension = (path: string) => counted[0]![path.replace(/^\$\./, '')];
    expect(dimension(SERVER_ERROR_ANSWER_DIMENSIONS.FunctionName)).toBe(fnName('cancelOrder'));
    expect(dimension(SERVER_ERROR_ANSWER_DIMENSIONS.FunctionVersion)).toBe(VERSION);
  });
});

describe('the post-traffic hook', () => {
  const alarmState = (state: StateValue) =>
    cloudWatch.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        { AlarmName: 'store-orders-test-cancelOrderNewVersionFailureRate', StateValue: state },
      ],
    });
  const versions = (...numbers: string[]) =>
    lambda.on(ListVersionsByFunctionCommand).resolves({
      Versions: ['$LATEST', ...numbers].map((Version) => ({ Version })),
    });

  it('resumes the scaling, watches the alarms for the bake, then deletes the versions beyond the newest 3 that no alias uses', async () => {
    alarmState('OK');
    versions('1', '2', '3', '4', '5', '6', '7');
    // `live` points at 7; an old alias still routes to 2.
    lambda.on(ListAliasesCommand).resolves({
      Aliases: [
        { Name: 'live', FunctionVersion: '7' },
        {
          Name: 'old',
          FunctionVersion: '4',
          RoutingConfig: { AdditionalVersionWeights: { '2': 0.5 } },
        },
      ],
    });
    lambda.on(DeleteFunctionCommand).resolves({});
    expect(await hooks().postTraffic(hookEvent('cancelOrder'))).toBe('Succeeded');
    expect(scaling()).toEqual([[`function:${fnName('cancelOrder')}:live`, false]]);
    // The bake's alarms read at its start and every ALARM_POLL_MS to its end (60 s: 0, 20, 40, 60).
    const reads = (settings().bakeSeconds * 1000) / ALARM_POLL_MS + 1;
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(reads);
    const deleted = lambda
      .commandCalls(DeleteFunctionCommand)
      .map((call) => [call.args[0].input.FunctionName, call.args[0].input.Qualifier]);
    expect(deleted).toEqual([
      [fnName('cancelOrder'), '3'],
      [fnName('cancelOrder'), '1'],
    ]);
    expect(verdicts()).toEqual(['Succeeded']);
  });

  it('fails the deployment (a rollback) at the first read that finds a deployment alarm in ALARM after the last shift, and deletes nothing', async () => {
    alarmState('ALARM');
    expect(await hooks().postTraffic(hookEvent('cancelOrder'))).toBe('Failed');
    // The watch stops at once: no waiting out the rest of the bake.
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(1);
    expect(lambda.commandCalls(ListVersionsByFunctionCommand)).toHaveLength(0);
    expect(lambda.commandCalls(DeleteFunctionCommand)).toHaveLength(0);
    expect(verdicts()).toEqual(['Failed']);
  });

  it('lets a hotfix through (deployIgnoringAlarms): the alarm in ALARM is logged, not obeyed, and the old versions are pruned', async () => {
    const lines: Record<string, unknown>[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation(
      (text) => (lines.push(JSON.parse(String(text)) as Record<string, unknown>), true),
    );
    vi.spyOn(process.stderr, 'write').mockImplementation(
      (text) => (lines.push(JSON.parse(String(text)) as Record<string, unknown>), true),
    );
    alarmState('ALARM');
    versions('4', '5', '6', '7');
    lambda.on(ListAliasesCommand).resolves({ Aliases: [{ Name: 'live', FunctionVersion: '7' }] });
    lambda.on(DeleteFunctionCommand).resolves({});
    expect(await hooks({ ignoreAlarms: true }).postTraffic(hookEvent('cancelOrder'))).toBe(
      'Succeeded',
    );
    // Each read of the bake found the alarm, and said so; the watch ran to its end.
    const reads = (settings().bakeSeconds * 1000) / ALARM_POLL_MS + 1;
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(reads);
    const ignored = lines.filter(
      (l) => l.message === 'Alarm in ALARM ignored (deployIgnoringAlarms)',
    );
    expect(ignored).toHaveLength(reads);
    expect(ignored[0]).toMatchObject({
      level: 'WARN',
      alarms: ['store-orders-test-cancelOrderNewVersionFailureRate'],
    });
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
});

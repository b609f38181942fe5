/**
 * CodeDeploy's lifecycle hooks of the functions' deployments (infra/deploy-hooks.ts). CodeDeploy
 * calls a hook with `{DeploymentId, LifecycleEventHookExecutionId}` and waits for its verdict
 * (PutLifecycleEventHookExecutionStatus): `Failed` fails the deployment, which moves the alias
 * back to the previous version and makes CloudFormation roll the stack update back.
 *
 * preTraffic (BeforeAllowTraffic), before any traffic moves to the new version:
 *  1. suspends the target tracking of the alias's provisioned concurrency: Lambda refuses some
 *     provisioned-concurrency changes while an alias routes by weights (the canary);
 *  2. calls the new version once, as API Gateway would, with a request that reads its tables and
 *     changes no order (PROBES): the authorizer with an unknown key (a Deny), cancelOrder on an
 *     order id no order has (404 ORDER_NOT_FOUND), listOrders and listOrderPages (a page of
 *     one) with `If-None-Match: *` (304, or 200). The HTTP calls pass the rate limiter, which
 *     writes the RateLimits counter of their caller, PROBE_CALLER (`key_deployCheck`). Another
 *     answer — a 500, a failed invocation — fails the deployment, and the scaling is resumed.
 * postTraffic (AfterAllowTraffic), after the last shift (the alias has no weights any more):
 *  1. resumes the scaling;
 *  2. watches the group's deployment alarms for BAKE_SECONDS: fails the deployment as soon as one
 *     is in ALARM (unless IGNORE_ALARMS: a hotfix);
 *  3. deletes the function's versions beyond the newest VERSIONS_KEPT that no alias uses (what
 *     a rollback needs stays), then succeeds. A failed deletion is logged, not fatal.
 * postTraffic also takes EventBridge's notice of a failed or stopped deployment, and resumes the
 * scaling the pre-traffic hook suspended.
 *
 * A hook that fails unexpectedly still gives its verdict (Failed), a missing or malformed setting
 * in its environment (HOOK_ENV) included: CodeDeploy would otherwise wait an hour for it.
 */
import {
  ApplicationAutoScalingClient,
  RegisterScalableTargetCommand,
} from '@aws-sdk/client-application-auto-scaling';
import { CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
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
  paginateListAliases,
  paginateListVersionsByFunction,
} from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { randomBytes } from 'node:crypto';
import { API_STAGE, API_STAGES, STAGE_ROUTES, type ApiStage } from '../lib/api/routes.ts';
import { HOOK_ENV, LIVE_ALIAS } from '../lib/deployment.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import { generateApiKey } from '../lib/keys/api-key.ts';
import { restProxyEvent } from './shared/rest-event.ts';
import { logger, type Logger } from './shared/logger.ts';

/** What the hooks know of each deployment group (named after its function), from the stack. */
export interface DeployTarget {
  /** The function's physical name. */
  readonly functionName: string;
  /** The version this deploy published (the one the group moves `live` to). */
  readonly version: string;
  /** The group's deployment alarms, watched after the last shift. */
  readonly alarms: readonly string[];
  /** Whether `live` has provisioned concurrency with target tracking. */
  readonly provisioned: boolean;
}

export interface HookSettings {
  readonly targets: Readonly<Record<FunctionName, DeployTarget>>;
  readonly bakeSeconds: number;
  readonly versionsKept: number;
  readonly ignoreAlarms: boolean;
}

interface DeployHookDependencies {
  readonly codeDeploy: CodeDeployClient;
  readonly lambda: LambdaClient;
  readonly autoScaling: ApplicationAutoScalingClient;
  readonly cloudWatch: CloudWatchClient;
  /**
   * The settings, or how to read them: read inside a hook's verdict path, so that a missing or
   * malformed one fails the deployment at once instead of leaving CodeDeploy without a verdict.
   */
  readonly settings: HookSettings | (() => HookSettings);
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** What CodeDeploy gives a lifecycle hook. */
interface LifecycleHookEvent {
  readonly DeploymentId: string;
  readonly LifecycleEventHookExecutionId: string;
}

/** EventBridge's notice of a deployment's state (`CodeDeploy Deployment State-change Notification`). */
interface DeploymentStateEvent {
  readonly 'detail-type': string;
  readonly detail: { readonly deploymentGroup?: string; readonly state?: string };
}

export type HookVerdict = 'Succeeded' | 'Failed';

/** How often the post-traffic hook reads the alarms while it watches. */
export const ALARM_POLL_MS = 20_000;

/** The caller the probes act as: no key of the store, limits no probe reaches. */
const PROBE_CALLER = {
  principalId: 'key_deployCheck',
  keyId: 'key_deployCheck',
  plan: 'enterprise',
  perMinute: '1000',
  perDay: '100000',
} as const;

/** What a probe got back: the HTTP status (or the authorizer's effect), or why it failed. */
interface ProbeAnswer {
  readonly ok: boolean;
  readonly got: string;
}

/** The proxy event of a route, as API Gateway sends it, from the probe caller. */
function proxyEvent(
  operationId: 'listOrders' | 'listOrderPages' | 'cancelOrder',
  options: {
    pathParameters?: Record<string, string>;
    headers?: Record<string, string>;
    query?: Record<string, string>;
  },
  requestId: string,
  now: number,
) {
  // The first version that serves the operation, and its route.
  const stage: ApiStage = API_STAGES.find((s) =>
    STAGE_ROUTES[s].some((r) => r.operationId === operationId),
  )!;
  const route = STAGE_ROUTES[stage].find((r) => r.operationId === operationId)!;
  const path = route.path.replace(
    /\{(\w+)\}/g,
    (_, name: string) => options.pathParameters![name]!,
  );
  return restProxyEvent({
    stage,
    method: route.method,
    resource: route.path,
    path,
    pathParameters: options.pathParameters ?? null,
    headers: options.headers ?? {},
    query: options.query ?? null,
    authorizer: PROBE_CALLER,
    requestId,
    requestTimeEpoch: now,
  });
}

/** An order id no order has, to all odds: a random int64 (one in 2^63 per stored order). */
function probeOrderId(): string {
  return BigInt.asIntN(64, randomBytes(8).readBigUInt64BE()).toString();
}

interface Probe {
  /** Whether the function streams (listOrders): its answer is read as API Gateway reads it. */
  readonly streaming: boolean;
  readonly event: (requestId: string, now: number) => unknown;
  /** Judges a returned answer (a proxy result, a prelude, a policy). */
  readonly judge: (answer: Record<string, unknown>) => ProbeAnswer;
}

const statusIs =
  (...expected: number[]) =>
  (answer: Record<string, unknown>): ProbeAnswer => {
    const status = Number(answer.statusCode);
    const body = typeof answer.body === 'string' ? answer.body : '';
    const code = /"code":"(\w+)"/.exec(body)?.[1];
    return { ok: expected.includes(status), got: `status ${status}${code ? ` ${code}` : ''}` };
  };

/**
 * The call each function gets before any traffic moves: it reads its tables and changes no
 * order (the rate limiter counts the HTTP ones against PROBE_CALLER's counter).
 */
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
  cancelOrder: {
    streaming: false,
    // The rate limiter counts it, the orders table is asked, no order changes: 404.
    event: (requestId, now) =>
      proxyEvent('cancelOrder', { pathParameters: { orderId: probeOrderId() } }, requestId, now),
    judge: statusIs(404),
  },
  listOrders: {
    streaming: true,
    // The list's version is read and matches `*`: 304, no order read (200 while a write's lease runs).
    event: (requestId, now) =>
      proxyEvent('listOrders', { headers: { 'If-None-Match': '*' } }, requestId, now),
    judge: statusIs(304, 200),
  },
  listOrderPages: {
    streaming: true,
    // One order's page of the table (no index needed): the version is read and matches `*`, 304.
    event: (requestId, now) =>
      proxyEvent(
        'listOrderPages',
        { headers: { 'If-None-Match': '*' }, query: { pageSize: '1' } },
        requestId,
        now,
      ),
    judge: statusIs(304, 200),
  },
};

/** The 8 NUL bytes between a streamed HTTP answer's prelude and its body. */
const PRELUDE_END = Buffer.alloc(8);

function parseJson(bytes: Uint8Array | undefined): Record<string, unknown> {
  const text = Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return { unparsed: text.slice(0, 200) };
  }
}

export function createDeployHooks(deps: DeployHookDependencies) {
  let read: HookSettings | undefined;
  /** The settings, read once, at the first hook that needs them (a failed read is tried again). */
  const settings = (): HookSettings =>
    (read ??= typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));

  async function groupOf(deploymentId: string): Promise<FunctionName> {
    const { deploymentInfo } = await deps.codeDeploy.send(
      new GetDeploymentCommand({ deploymentId }),
    );
    const group = deploymentInfo?.deploymentGroupName;
    if (!(FUNCTION_NAMES as readonly string[]).includes(group ?? '')) {
      throw new Error(`deployment ${deploymentId} is of group ${group}, which no function has`);
    }
    return group as FunctionName;
  }

  async function setScaling(group: FunctionName, suspended: boolean, log: Logger): Promise<void> {
    const target = settings().targets[group];
    if (!target.provisioned) return;
    await deps.autoScaling.send(
      new RegisterScalableTargetCommand({
        ServiceNamespace: 'lambda',
        ResourceId: `function:${target.functionName}:${LIVE_ALIAS}`,
        ScalableDimension: 'lambda:function:ProvisionedConcurrency',
        SuspendedState: {
          DynamicScalingInSuspended: suspended,
          DynamicScalingOutSuspended: suspended,
          ScheduledScalingSuspended: suspended,
        },
      }),
    );
    log.info(suspended ? 'Scaling suspended' : 'Scaling resumed', { group });
  }

  /** Calls the new version of a group's function with its probe, and judges the answer. */
  async function probe(group: FunctionName, deploymentId: string): Promise<ProbeAnswer> {
    const target = settings().targets[group];
    const { streaming, event, judge } = PROBES[group];
    const request = {
      FunctionName: target.functionName,
      Qualifier: target.version,
      Payload: Buffer.from(JSON.stringify(event(`deploy-check-${deploymentId}`, now()))),
    };
    if (!streaming) {
      const answer = await deps.lambda.send(new InvokeCommand(request));
      const payload = parseJson(answer.Payload);
      if (answer.FunctionError) {
        return {
          ok: false,
          got: `invocation failed: ${typeof payload.errorMessage === 'string' ? payload.errorMessage : answer.FunctionError}`,
        };
      }
      return judge(payload);
    }
    const answer = await deps.lambda.send(new InvokeWithResponseStreamCommand(request));
    let bytes = Buffer.alloc(0);
    for await (const part of answer.EventStream ?? []) {
      if (part.PayloadChunk?.Payload) {
        bytes = Buffer.concat([bytes, part.PayloadChunk.Payload]);
        const end = bytes.indexOf(PRELUDE_END);
        // The prelude is all a verdict needs: the body is left unread.
        if (end >= 0) return judge(parseJson(bytes.subarray(0, end)));
      }
      const complete = part.InvokeComplete;
      if (complete?.ErrorCode) {
        return {
          ok: false,
          got: `invocation failed: ${complete.ErrorCode} ${complete.ErrorDetails ?? ''}`.trim(),
        };
      }
    }
    return { ok: false, got: 'no answer' };
  }

  /** The deployment alarms of a group in ALARM now. */
  async function alarmsFiring(group: FunctionName): Promise<string[]> {
    const names = settings().targets[group].alarms;
    if (names.length === 0) return [];
    const { MetricAlarms = [], CompositeAlarms = [] } = await deps.cloudWatch.send(
      new DescribeAlarmsCommand({ AlarmNames: [...names] }),
    );
    return [...MetricAlarms, ...CompositeAlarms]
      .filter((alarm) => alarm.StateValue === 'ALARM')
      .map((alarm) => alarm.AlarmName ?? '');
  }

  /** Watches a group's alarms for the bake: the first in ALARM ends it (unless ignored). */
  async function bake(group: FunctionName, log: Logger): Promise<string[]> {
    const end = now() + settings().bakeSeconds * 1000;
    log.info('Watching the new version', { group, seconds: settings().bakeSeconds });
    for (;;) {
      const firing = await alarmsFiring(group);
      if (firing.length > 0) {
        if (!settings().ignoreAlarms) return firing;
        log.warn('Alarm in ALARM ignored (deployIgnoringAlarms)', { group, alarms: firing });
      }
      const left = end - now();
      if (left <= 0) return [];
      await sleep(Math.min(ALARM_POLL_MS, left));
    }
  }

  /**
   * Deletes the versions of a group's function beyond the newest `versionsKept`, but any an alias
   * routes to: what a rollback needs stays. Returns the versions deleted.
   */
  async function prune(group: FunctionName, log: Logger): Promise<string[]> {
    const { functionName } = settings().targets[group];
    const versions: number[] = [];
    const pages = { client: deps.lambda };
    for await (const page of paginateListVersionsByFunction(pages, {
      FunctionName: functionName,
    })) {
      for (const { Version } of page.Versions ?? []) {
        if (/^\d+$/.test(Version ?? '')) versions.push(Number(Version));
      }
    }
    const used = new Set<string>();
    for await (const page of paginateListAliases(pages, { FunctionName: functionName })) {
      for (const alias of page.Aliases ?? []) {
        if (alias.FunctionVersion) used.add(alias.FunctionVersion);
        for (const v of Object.keys(alias.RoutingConfig?.AdditionalVersionWeights ?? {})) {
          used.add(v);
        }
      }
    }
    const newestFirst = versions.sort((a, b) => b - a).map(String);
    const doomed = newestFirst.slice(settings().versionsKept).filter((v) => !used.has(v));
    const deleted: string[] = [];
    for (const version of doomed) {
      try {
        await deps.lambda.send(
          new DeleteFunctionCommand({ FunctionName: functionName, Qualifier: version }),
        );
        deleted.push(version);
      } catch (error) {
        log.warn('Old version not deleted', { group, version, error: error as Error });
      }
    }
    log.info('Old versions deleted', {
      group,
      deleted,
      kept: newestFirst.slice(0, settings().versionsKept),
    });
    return deleted;
  }

  async function report(event: LifecycleHookEvent, status: HookVerdict): Promise<void> {
    await deps.codeDeploy.send(
      new PutLifecycleEventHookExecutionStatusCommand({
        deploymentId: event.DeploymentId,
        lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
        status,
      }),
    );
  }

  /** Runs a hook's steps, and always gives CodeDeploy a verdict. */
  async function hook(
    name: string,
    event: LifecycleHookEvent,
    context: Partial<Context>,
    steps: (group: FunctionName, log: Logger) => Promise<HookVerdict>,
  ): Promise<HookVerdict> {
    const log = logger.startInvocation(context, event.DeploymentId);
    let verdict: HookVerdict = 'Failed';
    try {
      // First of all: a hook whose environment is wrong fails the deployment, with the reason.
      settings();
      verdict = await steps(await groupOf(event.DeploymentId), log);
    } catch (error) {
      log.error(`${name} failed: failing the deployment`, { error: error as Error });
    }
    await report(event, verdict);
    return verdict;
  }

  return {
    preTraffic: (event: LifecycleHookEvent, context: Partial<Context> = {}) =>
      hook('Pre-traffic check', event, context, async (group, log) => {
        await setScaling(group, true, log);
        const answer = await probe(group, event.DeploymentId);
        const fields = { group, version: settings().targets[group].version, answer: answer.got };
        if (answer.ok) {
          log.info('Pre-traffic check passed', fields);
          return 'Succeeded';
        }
        log.error('Pre-traffic check failed: the new version gets no traffic', fields);
        await setScaling(group, false, log);
        return 'Failed';
      }),

    postTraffic: async (
      event: LifecycleHookEvent | DeploymentStateEvent,
      context: Partial<Context> = {},
    ): Promise<HookVerdict | undefined> => {
      if ('detail-type' in event) {
        // A failed or stopped deployment: the pre-traffic hook's suspension ends here.
        const group = event.detail.deploymentGroup;
        const log = logger.startInvocation(context);
        if ((FUNCTION_NAMES as readonly string[]).includes(group ?? '')) {
          log.info('Deployment ended without the post-traffic hook', {
            group,
            state: event.detail.state,
          });
          try {
            await setScaling(group as FunctionName, false, log);
          } catch (error) {
            // No verdict to give: EventBridge tries again (its retries), the line says why.
            log.error('Scaling not resumed', { group, error: error as Error });
            throw error;
          }
        }
        return undefined;
      }
      return hook('Post-traffic watch', event, context, async (group, log) => {
        await setScaling(group, false, log);
        const firing = await bake(group, log);
        if (firing.length > 0) {
          log.error('Alarm in ALARM after the last shift: rolling the deploy back', {
            group,
            alarms: firing,
          });
          return 'Failed';
        }
        await prune(group, log);
        return 'Succeeded';
      });
    },
  };
}

/** The hooks' settings from their environment (HOOK_ENV, set by infra/deploy-hooks.ts). */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): HookSettings {
  const need = (key: keyof typeof HOOK_ENV): string => {
    const value = env[HOOK_ENV[key]];
    if (value === undefined || value === '') {
      throw new Error(`Environment variable ${HOOK_ENV[key]} is not set`);
    }
    return value;
  };
  const bad = (key: keyof typeof HOOK_ENV, what: string, value: unknown) =>
    new Error(
      `Environment variable ${HOOK_ENV[key]} must be ${what}, got ${JSON.stringify(value)}`,
    );
  const whole = (key: 'bakeSeconds' | 'versionsKept'): number => {
    const value = need(key);
    if (!/^\d+$/.test(value)) throw bad(key, 'a whole number', value);
    return Number(value);
  };
  const ignoreAlarms = need('ignoreAlarms');
  if (ignoreAlarms !== 'true' && ignoreAlarms !== 'false') {
    throw bad('ignoreAlarms', 'true or false', ignoreAlarms);
  }
  const text = need('targets');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad('targets', 'JSON', text.slice(0, 200));
  }
  const targets = {} as Record<FunctionName, DeployTarget>;
  for (const name of FUNCTION_NAMES) {
    const target = (parsed as Record<string, Partial<DeployTarget>> | null)?.[name];
    if (
      typeof target?.functionName !== 'string' ||
      target.functionName === '' ||
      typeof target.version !== 'string' ||
      target.version === '' ||
      !Array.isArray(target.alarms) ||
      !target.alarms.every((alarm) => typeof alarm === 'string') ||
      typeof target.provisioned !== 'boolean'
    ) {
      throw bad(
        'targets',
        `{functionName, version, alarms, provisioned} for ${name} (every function's)`,
        target ?? null,
      );
    }
    targets[name] = {
      functionName: target.functionName,
      version: target.version,
      alarms: target.alarms,
      provisioned: target.provisioned,
    };
  }
  return {
    targets,
    bakeSeconds: whole('bakeSeconds'),
    versionsKept: whole('versionsKept'),
    ignoreAlarms: ignoreAlarms === 'true',
  };
}

let hooks: ReturnType<typeof createDeployHooks> | undefined;
const deployHooks = () =>
  (hooks ??= createDeployHooks({
    codeDeploy: new CodeDeployClient({}),
    lambda: new LambdaClient({}),
    autoScaling: new ApplicationAutoScalingClient({}),
    cloudWatch: new CloudWatchClient({}),
    // Read by the first hook, inside its verdict path: not here, where a throw gives no verdict.
    settings: () => settingsFromEnv(),
  }));

export const preTraffic = (event: LifecycleHookEvent, context: Context) =>
  deployHooks().preTraffic(event, context);
export const postTraffic = (event: LifecycleHookEvent | DeploymentStateEvent, context: Context) =>
  deployHooks().postTraffic(event, context);

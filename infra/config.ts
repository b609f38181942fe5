/**
 * Per-stage configuration: the one typed place where staging and production differ — each
 * stage's defaults, the settings a deployer gives over them (their shapes: ./stage-settings.ts)
 * and the rules between settings, validated once.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { readSetting } from '../lib/config/settings.ts';
import { STREAMING_LIMITS } from '../lib/config/streaming.ts';
import { STAGE_THROTTLES, type StageName } from '../lib/deployment.ts';
import {
  DEFAULT_LIST_VERSION_ITEMS,
  type ListVersionItems,
} from '../lib/dynamodb/list-version-items.ts';
import { ORDER_INDEX_NAMES, type OrderIndexName } from '../lib/dynamodb/tables.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import { DEFAULT_LIMITER_SETTINGS, type FailureMode } from '../lib/limits/limiter.ts';
import {
  STAGE_SETTINGS,
  stageSettings,
  type ContextReader,
  type StageSettings,
} from './stage-settings.ts';

export interface StageConfig {
  readonly stage: StageName;
  /** Target account and region; absent = environment-agnostic (synth anywhere). */
  readonly env: { readonly account?: string; readonly region?: string };
  readonly authorizerCacheTtl: Duration;
  readonly logRetention: RetentionDays;
  /** What happens to the tables when the stack is deleted. */
  readonly removalPolicy: RemovalPolicy;
  readonly deletionProtection: boolean;
  /** CloudFormation termination protection on both stacks of the stage. */
  readonly terminationProtection: boolean;
  /** Stage-level API Gateway throttle: a safety net above the per-key limits. */
  readonly throttling: { readonly rateLimit: number; readonly burstLimit: number };
  readonly rateLimiter: {
    readonly failureMode: FailureMode;
    readonly banAfterRefusals: number;
    readonly banSeconds: number;
  };
  /**
   * Concurrency: listOrders holds an execution for as long as it streams (minutes), so a burst of
   * lists could take every execution of the account from cancelOrder and the authorizer. Its
   * reserved concurrency is its ceiling (and its guarantee); `undefined` reserves nothing.
   */
  readonly concurrency: {
    readonly listOrdersReserved: number | undefined;
    /** The account's Lambda concurrency limit in the stage's region (checked against the reservation). */
    readonly accountLimit: number;
    /**
     * Provisioned concurrency on each function's `live` alias: the floor target tracking keeps
     * (it scales up to PROVISIONED_SCALING.maxFactor times it); 0 provisions nothing.
     */
    readonly provisioned: Readonly<Record<FunctionName, number>>;
  };
  /** Alarm thresholds; each of these alarms evaluates one 5-minute period (deployment's: one minute). */
  readonly alarms: {
    /** API 5XX responses as a fraction of requests. */
    readonly serverErrorRate: number;
    /** p99 API latency, ms (listOrders streams: its latency is time to first byte). */
    readonly p99LatencyMs: number;
    /** Errors (crashes, timeouts) of listOrders and of cancelOrder, each. */
    readonly functionErrors: number;
    /** Authorizer errors: its key store failed transiently (clients got 503); a refusal is no error. */
    readonly authorizerErrors: number;
    /** Throttles of each function (concurrency exhausted). */
    readonly throttles: number;
    /** DynamoDB throttled requests per table, over the operations the functions call. */
    readonly tableThrottledRequests: number;
    /** DynamoDB system errors (HTTP 500 from DynamoDB) per table. */
    readonly tableSystemErrors: number;
    /** Writes of the orders table throttled by one of its indexes. */
    readonly indexWriteThrottles: number;
    /** The operator's BatchWriteItem requests of the orders table throttled. */
    readonly batchWriteThrottles: number;
    /** The longest listOrders run, as a fraction of its timeout. */
    readonly listDurationOfTimeout: number;
    /** Rate-limiter store failures. */
    readonly limiterStoreFailures: number;
    /** 500 INTERNAL_ERROR answers (bugs, permanent failures): any one pages. */
    readonly internalErrors: number;
    /** Lists cut off after their status line. */
    readonly listStreamFailures: number;
    /** The largest list response, bytes: half of the 200 MB Lambda streaming ceiling. */
    readonly listResponseBytes: number;
  };
  readonly logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /**
   * The orders table's global indexes the stage has, by name (lib/dynamodb/tables.ts). Not
   * given: all of them, as a new table is created. CloudFormation adds or removes at most one
   * index of a live table per update, so a stage upgrading from 1.0.0 adds them one deploy at a
   * time (docs/upgrade-from-1.0.0.md); the functions learn which are there from ORDERS_INDEXES
   * (lib/dynamodb/order-indexes.ts).
   */
  readonly ordersIndexes: readonly OrderIndexName[];
  /**
   * Whether the indexes keyed by derived attributes serve only once `orders reindex` has written
   * its marker (lib/dynamodb/index-readiness.ts): a table that holds orders release 1.0.0 wrote.
   * Not given: no (a table created with its indexes is ready as created).
   */
  readonly ordersAwaitReindex: boolean;
  /**
   * The list version items the functions mark and read (lib/dynamodb/list-version-items.ts):
   * n items cost a 304 n read units and bound the cancels at n × 500 a second. Not given: 4.
   */
  readonly listVersionItems: ListVersionItems;
  /** Optional custom domain: base URL `https://<domainName>/v1`. */
  readonly customDomain?: { readonly domainName: string; readonly certificateArn: string };
  /**
   * Whether this stage owns the account's API Gateway CloudWatch Logs role (the one
   * `AWS::ApiGateway::Account` of the account and region, which API Gateway's logging needs).
   * Off by default: an account has one such setting, so at most one stack may own it (see
   * docs/deploy.md, "The account's API Gateway logging role"); buildApp refuses two stages that
   * both claim it for what may be one account and region (one not given counts as the same).
   */
  readonly apiGatewayAccountRole: boolean;
  /** Who the stage's alarm topic tells: e-mail addresses and HTTPS endpoints (docs/operations.md). */
  readonly alarmSubscriptions: readonly AlarmSubscription[];
  /**
   * How a deploy moves traffic to a function's new version (CodeDeploy, through its `live`
   * alias): gradually in production, all at once in staging. Before the first shift the
   * pre-traffic hook calls the new version; during the shift and for `bakeMinutes` after the
   * last one, the new version is judged against the old one (lib/deploy-judgement.ts: the same
   * numbers in every stage); a failed call or a failed judgement rolls the deploy back
   * (infra/deployments.ts, docs/deploy.md).
   */
  readonly deployment: {
    readonly trafficShift: TrafficShift;
    /** How long the post-traffic hook watches the new version after the last shift. */
    readonly bakeMinutes: number;
    /**
     * Whether that watch probes the new version at each of its reads (the pre-traffic probe
     * again): invocations of its own where callers are too few to judge it by.
     */
    readonly watchProbe: boolean;
    /** Versions of each function kept for a rollback: the newest N (and any an alias uses). */
    readonly versionsKept: number;
    /**
     * Hotfix: the deploy goes out although a deployment alarm is in ALARM (CodeDeploy and the
     * bake ignore the alarms; the pre-traffic call still runs). Given per deploy with `-c`.
     */
    readonly ignoreAlarms: boolean;
  };
}

/** A subscription of the alarm topic. */
export interface AlarmSubscription {
  readonly protocol: 'email' | 'https';
  readonly endpoint: string;
}

/** Target tracking of provisioned concurrency: utilization kept near the target, up to maxFactor × the floor. */
export const PROVISIONED_SCALING = { utilizationTarget: 0.7, maxFactor: 4 } as const;

/** CodeDeploy's predefined Lambda deployment configurations this service uses. */
export const TRAFFIC_SHIFTS = [
  'ALL_AT_ONCE',
  'CANARY_10PERCENT_5MINUTES',
  'CANARY_10PERCENT_10MINUTES',
  'LINEAR_10PERCENT_EVERY_1MINUTE',
] as const;
export type TrafficShift = (typeof TRAFFIC_SHIFTS)[number];

/** Lambda keeps at least this many executions of an account unreserved. */
export const MIN_UNRESERVED_CONCURRENCY = 100;

/** The rate limiter's settings as the functions default them: the same in every stage. */
const RATE_LIMITER: StageConfig['rateLimiter'] = {
  failureMode: DEFAULT_LIMITER_SETTINGS.failureMode,
  banAfterRefusals: DEFAULT_LIMITER_SETTINGS.maxRefusalsPerMinute,
  banSeconds: DEFAULT_LIMITER_SETTINGS.banMs / 1000,
};

type Defaults = Omit<
  StageConfig,
  | 'stage'
  | 'env'
  | 'apiGatewayAccountRole'
  | 'alarmSubscriptions'
  | 'ordersIndexes'
  | 'ordersAwaitReindex'
  | 'listVersionItems'
>;

const DEFAULTS: Record<StageName, Defaults> = {
  staging: {
    authorizerCacheTtl: Duration.seconds(60),
    logRetention: RetentionDays.TWO_WEEKS,
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
    terminationProtection: false,
    throttling: STAGE_THROTTLES.staging,
    rateLimiter: RATE_LIMITER,
    concurrency: {
      listOrdersReserved: 10,
      accountLimit: 1_000,
      provisioned: { listOrders: 0, listOrderPages: 0, cancelOrder: 0, authorizer: 0 },
    },
    alarms: {
      serverErrorRate: 0.05,
      p99LatencyMs: 3_000,
      functionErrors: 5,
      authorizerErrors: 10,
      throttles: 10,
      tableThrottledRequests: 20,
      tableSystemErrors: 10,
      indexWriteThrottles: 20,
      batchWriteThrottles: 50,
      listDurationOfTimeout: 0.8,
      limiterStoreFailures: 10,
      internalErrors: 1,
      listStreamFailures: 1,
      listResponseBytes: STREAMING_LIMITS.ceilingBytes / 2,
    },
    logLevel: 'DEBUG',
    deployment: {
      trafficShift: 'ALL_AT_ONCE',
      bakeMinutes: 2,
      // Staging often has no callers: its watch makes figures of the new version's own.
      watchProbe: true,
      versionsKept: 3,
      ignoreAlarms: false,
    },
  },
  production: {
    authorizerCacheTtl: Duration.seconds(60),
    logRetention: RetentionDays.ONE_YEAR,
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
    terminationProtection: true,
    throttling: STAGE_THROTTLES.production,
    rateLimiter: RATE_LIMITER,
    // Sized and priced in docs/deploy.md ("Provisioned concurrency").
    concurrency: {
      listOrdersReserved: 100,
      accountLimit: 1_000,
      provisioned: { listOrders: 1, listOrderPages: 1, cancelOrder: 2, authorizer: 2 },
    },
    alarms: {
      serverErrorRate: 0.01,
      p99LatencyMs: 1_500,
      functionErrors: 1,
      authorizerErrors: 3,
      throttles: 1,
      tableThrottledRequests: 5,
      tableSystemErrors: 5,
      indexWriteThrottles: 5,
      batchWriteThrottles: 20,
      listDurationOfTimeout: 0.8,
      limiterStoreFailures: 1,
      internalErrors: 1,
      listStreamFailures: 1,
      listResponseBytes: STREAMING_LIMITS.ceilingBytes / 2,
    },
    logLevel: 'INFO',
    // Why these numbers: docs/deploy.md ("What rolls a deploy back").
    deployment: {
      trafficShift: 'CANARY_10PERCENT_5MINUTES',
      bakeMinutes: 10,
      watchProbe: false,
      versionsKept: 5,
      ignoreAlarms: false,
    },
  },
};

/** The region of an ACM certificate ARN (`arn:aws:acm:REGION:ACCOUNT:certificate/ID`). */
export function certificateRegion(certificateArn: string): string {
  return certificateArn.split(':')[3] ?? '';
}

/**
 * The configuration of a stage: its defaults, and the settings context gives
 * (STAGE_SETTINGS). Account and region fall back to CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION.
 */
export function stageConfig(
  stage: StageName,
  context: ContextReader,
  env: NodeJS.ProcessEnv = process.env,
): StageConfig {
  const key = (name: keyof typeof STAGE_SETTINGS) => `${stage}:${name}`;
  const given = stageSettings(stage, context);
  const defaults = DEFAULTS[stage];
  const fallback = (name: 'account' | 'region', value: string | undefined) =>
    context(key(name)) === undefined && value !== undefined
      ? readSetting(`${key(name)} (CDK_DEFAULT_${name.toUpperCase()})`, STAGE_SETTINGS[name], value)
      : given[name];
  const account = fallback('account', env.CDK_DEFAULT_ACCOUNT);
  const region = fallback('region', env.CDK_DEFAULT_REGION);
  const { domainName, certificateArn } = given;
  if ((domainName === undefined) !== (certificateArn === undefined)) {
    throw new Error(`${key('domainName')} and ${key('certificateArn')} go together`);
  }
  if (certificateArn) {
    // A REGIONAL endpoint takes its certificate from its own region: checked here, not at deploy.
    if (!region) {
      throw new Error(
        `${key('domainName')} needs the stage's region (${key('region')} or CDK_DEFAULT_REGION): ` +
          `a REGIONAL custom domain's certificate must be in that region`,
      );
    }
    if (certificateRegion(certificateArn) !== region) {
      throw new Error(
        `${key('certificateArn')} is in ${certificateRegion(certificateArn)}, but a REGIONAL ` +
          `custom domain needs a certificate in the stage's region, ${region}`,
      );
    }
  }
  return {
    ...defaults,
    stage,
    concurrency: concurrencyConfig(stage, given, defaults.concurrency),
    apiGatewayAccountRole: given.apiGatewayAccountRole ?? false,
    alarmSubscriptions: given.alarmSubscriptions ?? [],
    deployment: {
      ...defaults.deployment,
      bakeMinutes: given.deploymentBakeMinutes ?? defaults.deployment.bakeMinutes,
      watchProbe: given.deploymentWatchProbe ?? defaults.deployment.watchProbe,
      versionsKept: given.versionsKept ?? defaults.deployment.versionsKept,
      ignoreAlarms: given.deployIgnoringAlarms ?? defaults.deployment.ignoreAlarms,
    },
    ...(domainName && certificateArn ? { customDomain: { domainName, certificateArn } } : {}),
    env: { ...(account ? { account } : {}), ...(region ? { region } : {}) },
    authorizerCacheTtl: Duration.seconds(
      given.authorizerCacheTtlSeconds ?? defaults.authorizerCacheTtl.toSeconds(),
    ),
    ordersIndexes: given.ordersIndexes ?? ORDER_INDEX_NAMES,
    ordersAwaitReindex: given.ordersAwaitReindex ?? false,
    listVersionItems: given.listVersionItems ?? DEFAULT_LIST_VERSION_ITEMS,
    rateLimiter: {
      failureMode: given.rateLimitFailureMode ?? defaults.rateLimiter.failureMode,
      banAfterRefusals: given.rateLimitBanAfterRefusals ?? defaults.rateLimiter.banAfterRefusals,
      banSeconds: given.rateLimitBanSeconds ?? defaults.rateLimiter.banSeconds,
    },
  };
}

function concurrencyConfig(
  stage: StageName,
  given: StageSettings,
  defaults: StageConfig['concurrency'],
): StageConfig['concurrency'] {
  const key = (name: string) => `${stage}:${name}`;
  const accountLimit = given.accountConcurrencyLimit ?? defaults.accountLimit;
  const provisioned = { ...defaults.provisioned, ...given.provisionedConcurrency };
  const raw = given.listOrdersReservedConcurrency ?? defaults.listOrdersReserved;
  const reserved = raw === 'none' ? undefined : raw;
  if (reserved !== undefined && accountLimit - reserved < MIN_UNRESERVED_CONCURRENCY) {
    throw new Error(
      `${key('listOrdersReservedConcurrency')}=${reserved} leaves fewer than the ` +
        `${MIN_UNRESERVED_CONCURRENCY} unreserved executions Lambda requires of an account limit ` +
        `of ${accountLimit} (${key('accountConcurrencyLimit')}): lower it, raise the limit, or ` +
        `set it to none`,
    );
  }
  checkProvisioned(stage, provisioned, reserved, accountLimit);
  return { listOrdersReserved: reserved, accountLimit, provisioned };
}

/**
 * Provisioned concurrency within what Lambda allows: listOrders' scaled-up provision within its
 * reservation, and every function's within the account's unreserved executions.
 */
function checkProvisioned(
  stage: StageName,
  provisioned: Readonly<Record<FunctionName, number>>,
  listOrdersReserved: number | undefined,
  accountLimit: number,
): void {
  const most = (fn: FunctionName) => provisioned[fn] * PROVISIONED_SCALING.maxFactor;
  if (listOrdersReserved !== undefined && most('listOrders') > listOrdersReserved) {
    throw new Error(
      `${stage}:provisionedConcurrency.listOrders=${provisioned.listOrders} scales up to ` +
        `${most('listOrders')}, above listOrders' reserved concurrency of ${listOrdersReserved} ` +
        `(${stage}:listOrdersReservedConcurrency)`,
    );
  }
  // listOrders' provision comes out of its reservation when it has one.
  const unreserved = FUNCTION_NAMES.filter(
    (fn) => fn !== 'listOrders' || listOrdersReserved === undefined,
  );
  const total = unreserved.reduce((sum, fn) => sum + most(fn), 0);
  if (total > 0 && total > accountLimit - MIN_UNRESERVED_CONCURRENCY - (listOrdersReserved ?? 0)) {
    throw new Error(
      `${stage}:provisionedConcurrency scales up to ${total} executions, more than the account ` +
        `limit of ${accountLimit} leaves (${stage}:accountConcurrencyLimit)`,
    );
  }
}

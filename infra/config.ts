/**
 * Per-stage configuration: the one typed place where staging and production differ, read from
 * CDK context / environment and validated once.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { StageName } from '../lib/deployment.ts';
import type { FailureMode } from '../lib/limits/limiter.ts';

export interface StageConfig {
  readonly stage: StageName;
  /** Target account and region; absent = environment-agnostic (synth anywhere). */
  readonly env: { readonly account?: string; readonly region?: string };
  readonly authorizerCacheTtl: Duration;
  readonly logRetention: RetentionDays;
  /** What happens to the tables when the stack is deleted. */
  readonly removalPolicy: RemovalPolicy;
  readonly deletionProtection: boolean;
  /** Stage-level API Gateway throttle: a safety net above the per-key limits. */
  readonly throttling: { readonly rateLimit: number; readonly burstLimit: number };
  readonly rateLimiter: {
    readonly failureMode: FailureMode;
    readonly banAfterRefusals: number;
    readonly banSeconds: number;
  };
  readonly alarms: {
    /** API 5XX responses as a fraction of requests, over 5 minutes. */
    readonly serverErrorRate: number;
    /** p99 API latency, ms, over 5 minutes (listOrders streams: its latency is time to first byte). */
    readonly p99LatencyMs: number;
    /** Authorizer function errors per 5 minutes. */
    readonly authorizerErrors: number;
    /** Function throttles per 5 minutes. */
    readonly throttles: number;
    /** Rate-limiter store failures per 5 minutes. */
    readonly limiterStoreFailures: number;
  };
  readonly logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Optional custom domain: base URL `https://<domainName>/v1`. */
  readonly customDomain?: { readonly domainName: string; readonly certificateArn: string };
}

/** Reads CDK context values (`-c key=value` or cdk.json). */
export type ContextReader = (key: string) => unknown;

const DEFAULTS: Record<StageName, Omit<StageConfig, 'stage' | 'env'>> = {
  staging: {
    authorizerCacheTtl: Duration.seconds(60),
    logRetention: RetentionDays.TWO_WEEKS,
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
    throttling: { rateLimit: 200, burstLimit: 400 },
    rateLimiter: { failureMode: 'closed', banAfterRefusals: 10, banSeconds: 900 },
    alarms: {
      serverErrorRate: 0.05,
      p99LatencyMs: 3_000,
      authorizerErrors: 5,
      throttles: 10,
      limiterStoreFailures: 10,
    },
    logLevel: 'DEBUG',
  },
  production: {
    authorizerCacheTtl: Duration.seconds(60),
    logRetention: RetentionDays.ONE_YEAR,
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
    throttling: { rateLimit: 2_000, burstLimit: 4_000 },
    rateLimiter: { failureMode: 'closed', banAfterRefusals: 10, banSeconds: 900 },
    alarms: {
      serverErrorRate: 0.01,
      p99LatencyMs: 1_500,
      authorizerErrors: 1,
      throttles: 1,
      limiterStoreFailures: 1,
    },
    logLevel: 'INFO',
  },
};

function optionalString(
  value: unknown,
  name: string,
  pattern: RegExp,
  what: string,
): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new Error(`${name} must be ${what}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function integer(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new Error(
      `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/**
 * The configuration of a stage. Context keys (per stage, e.g. `staging:account`):
 * `account`, `region`, `authorizerCacheTtlSeconds`, `rateLimitFailureMode`. Account and region
 * fall back to CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION.
 */
export function stageConfig(
  stage: StageName,
  context: ContextReader,
  env: NodeJS.ProcessEnv = process.env,
): StageConfig {
  const key = (name: string) => `${stage}:${name}`;
  const defaults = DEFAULTS[stage];
  const account = optionalString(
    context(key('account')) ?? env.CDK_DEFAULT_ACCOUNT,
    key('account'),
    /^\d{12}$/,
    'a 12-digit AWS account id',
  );
  const region = optionalString(
    context(key('region')) ?? env.CDK_DEFAULT_REGION,
    key('region'),
    /^[a-z]{2}(-[a-z]+)+-\d$/,
    'an AWS region such as eu-west-1',
  );
  const ttl = integer(
    context(key('authorizerCacheTtlSeconds')),
    key('authorizerCacheTtlSeconds'),
    0,
    3600,
    defaults.authorizerCacheTtl.toSeconds(),
  );
  const failureMode = context(key('rateLimitFailureMode')) ?? defaults.rateLimiter.failureMode;
  if (failureMode !== 'open' && failureMode !== 'closed') {
    throw new Error(
      `${key('rateLimitFailureMode')} must be open or closed, got ${JSON.stringify(failureMode)}`,
    );
  }
  const domainName = optionalString(
    context(key('domainName')),
    key('domainName'),
    /^([a-z0-9-]+\.)+[a-z]{2,}$/,
    'a DNS name',
  );
  const certificateArn = optionalString(
    context(key('certificateArn')),
    key('certificateArn'),
    /^arn:aws[\w-]*:acm:[\w-]+:\d{12}:certificate\/[\w-]+$/,
    'an ACM certificate ARN',
  );
  if ((domainName === undefined) !== (certificateArn === undefined)) {
    throw new Error(`${key('domainName')} and ${key('certificateArn')} go together`);
  }
  return {
    ...defaults,
    stage,
    ...(domainName && certificateArn ? { customDomain: { domainName, certificateArn } } : {}),
    env: { ...(account ? { account } : {}), ...(region ? { region } : {}) },
    authorizerCacheTtl: Duration.seconds(ttl),
    rateLimiter: { ...defaults.rateLimiter, failureMode },
  };
}

/**
 * docs/settings.md's generated part: every stage setting (infra/stage-settings.ts), what it
 * accepts in the schema's own words, each stage's default and what is fixed per stage
 * (infra/config.ts), with what each means (SETTING_GUIDE).
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import { stageConfig, type StageConfig } from '../../infra/config.ts';
import { STAGE_SETTINGS, STAGE_SETTING_KEYS } from '../../infra/stage-settings.ts';
import { readSetting } from '../../lib/config/settings.ts';
import { STAGES, type StageName } from '../../lib/deployment.ts';
import { table } from './markdown.ts';

/** What a reader of a setting needs besides its key and what it accepts. */
interface SettingGuidance {
  readonly meaning: string;
  /** The stage's default, from its configuration without any setting given. */
  readonly fallback: (config: StageConfig) => string;
}

const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
const none = 'none';

/** Guidance for every stage setting (a setting added there must be added here). */
export const SETTING_GUIDE = {
  account: {
    meaning: 'the AWS account the stage goes to',
    fallback: () => 'your environment (`CDK_DEFAULT_ACCOUNT`)',
  },
  region: {
    meaning: 'the region the stage goes to',
    fallback: () => 'your environment (`CDK_DEFAULT_REGION`)',
  },
  authorizerCacheTtlSeconds: {
    meaning:
      "how long API Gateway keeps the authorizer's answer for a key: a revoked key, a plan or a permission changed reaches requests within this time",
    fallback: (c) => String(c.authorizerCacheTtl.toSeconds()),
  },
  rateLimitFailureMode: {
    meaning:
      "what the rate limiter does when it cannot reach its counters: `closed` answers 503, `open` admits ([why closed](rate-limits.md#when-the-counter-store-fails)); the functions' `RATE_LIMIT_FAILURE_MODE`",
    fallback: (c) => code(c.rateLimiter.failureMode),
  },
  rateLimitBanAfterRefusals: {
    meaning:
      "a key is banned at its N+1th early refusal in one minute window ([the ban](rate-limits.md#the-temporary-ban)); the functions' `RATE_LIMIT_BAN_AFTER_REFUSALS`",
    fallback: (c) => String(c.rateLimiter.banAfterRefusals),
  },
  rateLimitBanSeconds: {
    meaning: "how long a ban lasts; the functions' `RATE_LIMIT_BAN_SECONDS`",
    fallback: (c) => `${c.rateLimiter.banSeconds} (${c.rateLimiter.banSeconds / 60} minutes)`,
  },
  domainName: {
    meaning:
      "a custom domain, with `certificateArn` (an ACM certificate in the stage's region): the API at `https://<domain>/v1` and `/v2` ([deploy](deploy.md#custom-domain))",
    fallback: () => none,
  },
  certificateArn: {
    meaning: "the custom domain's certificate, in the stage's region",
    fallback: () => none,
  },
  apiGatewayAccountRole: {
    meaning:
      "this stage creates the account's API Gateway CloudWatch Logs role; one stage per account and region at most ([why](deploy.md#the-accounts-api-gateway-logging-role))",
    fallback: (c) => code(c.apiGatewayAccountRole),
  },
  listOrdersReservedConcurrency: {
    meaning:
      "listOrders' reserved concurrency, or `none` ([concurrency](deploy.md#concurrency)); synth checks it against `accountConcurrencyLimit`",
    fallback: (c) => String(c.concurrency.listOrdersReserved ?? none),
  },
  accountConcurrencyLimit: {
    meaning: "the account's Lambda concurrency limit in the region, to check reservations against",
    fallback: (c) => String(c.concurrency.accountLimit),
  },
  provisionedConcurrency: {
    meaning:
      'per function, the provisioned concurrency of its `live` alias, the floor of its target tracking; 0 provisions none ([provisioned concurrency](deploy.md#provisioned-concurrency))',
    fallback: (c) =>
      Object.values(c.concurrency.provisioned).every((n) => n === 0)
        ? none
        : code(c.concurrency.provisioned),
  },
  alarmSubscriptions: {
    meaning:
      'e-mail addresses and `https://` endpoints the alarm topic tells ([who is paged](alarms.md#who-is-paged))',
    fallback: (c) => (c.alarmSubscriptions.length === 0 ? none : code(c.alarmSubscriptions)),
  },
  deploymentBakeMinutes: {
    meaning:
      'how long a new version is watched after the last shift ([what rolls a deploy back](deploy.md#what-rolls-a-deploy-back))',
    fallback: (c) => String(c.deployment.bakeMinutes),
  },
  deploymentWatchProbe: {
    meaning:
      'the watch after the last shift probes the new version at each read, figures of its own where callers are few ([what each kind of broken version meets](deploy.md#what-each-kind-of-broken-version-meets))',
    fallback: (c) => code(c.deployment.watchProbe),
  },
  versionsKept: {
    meaning:
      'versions of each function kept for a [rollback](rollback.md#roll-back-at-once), besides any an alias uses',
    fallback: (c) => String(c.deployment.versionsKept),
  },
  deployIgnoringAlarms: {
    meaning:
      'a [hotfix](rollback.md#a-hotfix-while-an-alarm-is-in-alarm): this one deploy goes out although a deployment alarm is in ALARM; give it with `-c`, never keep it in `cdk.json`',
    fallback: (c) => code(c.deployment.ignoreAlarms),
  },
  ordersIndexes: {
    meaning:
      "the orders table's indexes, by name: a stage upgrading from 1.0.0 adds them one per deploy ([upgrade](upgrade-from-1.0.0.md))",
    fallback: (c) => `all ${c.ordersIndexes.length}: ${c.ordersIndexes.map(code).join(', ')}`,
  },
  ordersAwaitReindex: {
    meaning:
      'the indexes keyed by derived attributes serve once `orders reindex` has written its readiness marker: a table holding orders 1.0.0 wrote ([upgrade](upgrade-from-1.0.0.md))',
    fallback: (c) => code(c.ordersAwaitReindex),
  },
  listVersionItems: {
    meaning:
      'the list version items the functions mark and read: n items cost a 304 n read units and bound cancels at n × 500 a second ([scale notes](architecture.md#scale-notes)); `"4/0"` marks 4 and reads none, for an upgrade ([upgrade](upgrade-from-1.0.0.md))',
    fallback: (c) =>
      c.listVersionItems.write === c.listVersionItems.read
        ? String(c.listVersionItems.write)
        : code(`${c.listVersionItems.write}/${c.listVersionItems.read}`),
  },
} as const satisfies Record<(typeof STAGE_SETTING_KEYS)[number], SettingGuidance>;

/** What a setting accepts, in its schema's own words (the message a wrong value gets). */
function accepts(key: (typeof STAGE_SETTING_KEYS)[number]): string {
  try {
    readSetting(key, STAGE_SETTINGS[key], -5);
  } catch (error) {
    const words = (error as Error).message
      .slice(key.length + 1)
      .replace(/, got .*$/, '')
      .replace(/^\((.*)\) must be (.*)$/, '$2 ($1)')
      .replace(/^must be |^takes /, '');
    // Values as written in cdk.json: `{"cancelOrder": 2}`, `"<write>/<read>"`.
    return words.replace(/\{[^}]*\}|"[^"]*"/g, (value) => `\`${value}\``);
  }
  throw new Error(`${key} accepts -5: say what it accepts some other way`);
}

/** Each stage's configuration with no setting given: what `cdk.json` leaves as it is. */
const defaults = (): Record<StageName, StageConfig> =>
  Object.fromEntries(
    STAGES.map((stage) => [stage, stageConfig(stage, () => undefined, {})]),
  ) as Record<StageName, StageConfig>;

/** docs/settings.md's generated part: the settings, then what is fixed per stage. */
export function settingsPart(): string {
  const configs = defaults();
  const byStage = (value: (config: StageConfig) => string) => {
    const [staging, production] = STAGES.map((stage) => value(configs[stage])) as [string, string];
    return staging === production ? staging : `${staging} staging, ${production} production`;
  };
  const settings = table([
    ['key', 'accepts', 'default', 'meaning'],
    ...STAGE_SETTING_KEYS.map((key) => [
      `\`${key}\``,
      accepts(key),
      byStage(SETTING_GUIDE[key].fallback),
      SETTING_GUIDE[key].meaning,
    ]),
  ]);
  const perStage = (label: string, value: (config: StageConfig) => string) => [
    label,
    ...STAGES.map((stage) => value(configs[stage])),
  ];
  const fixed = table([
    ['fixed per stage', ...STAGES],
    perStage(
      'stage throttle, all keys together (requests a second, burst)',
      (c) =>
        `${c.throttling.rateLimit.toLocaleString('en-US')} / ${c.throttling.burstLimit.toLocaleString('en-US')}`,
    ),
    perStage('functions log at', (c) => `\`${c.logLevel}\``),
    perStage('logs kept (days)', (c) => String(c.logRetention)),
    perStage('tables when the stack is deleted', (c) =>
      c.removalPolicy === RemovalPolicy.RETAIN ? 'kept, deletion protection on' : 'deleted',
    ),
    perStage('termination protection (both stacks)', (c) =>
      c.terminationProtection ? 'on' : 'off',
    ),
    perStage('how a deploy shifts traffic', (c) => `\`${c.deployment.trafficShift}\``),
  ]);
  return `${settings}\n\n#### Fixed per stage\n\n${fixed}`;
}

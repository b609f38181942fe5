/**
 * The reference pages made from what they describe, so that each fact keeps one home (the code)
 * and a page cannot go stale unnoticed:
 *
 * - docs/errors.md: every code of the error catalogue (lib/api/errors.ts), its status and the
 *   answers API Gateway gives with it (lib/api/gateway-responses.ts), with what a client should
 *   do (ERROR_GUIDE below, typed by the catalogue: a code without guidance does not compile);
 * - docs/settings.md: every stage setting (infra/stage-settings.ts), what it accepts in the
 *   schema's own words, each stage's default and what is fixed per stage (infra/config.ts);
 * - docs/alarms.md: every alarm of each stage as synthesized (infra/alarms.ts; thresholds from
 *   infra/config.ts), linked to the section of the page that says what to do.
 *
 * Each page's generated part lies between two markers; the rest is written by hand.
 * `npm run docs:reference` writes the parts; test/docs/reference.test.ts fails when one differs
 * from what this script would write.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { App, RemovalPolicy } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../infra/app.ts';
import { stageConfig, type StageConfig } from '../infra/config.ts';
import { STAGE_SETTINGS, STAGE_SETTING_KEYS } from '../infra/stage-settings.ts';
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  ERROR_CATALOGUE,
  INDEX_NOT_READY_RETRY_AFTER_SECONDS,
  type ErrorCode,
} from '../lib/api/errors.ts';
import { GATEWAY_RESPONSES } from '../lib/api/gateway-responses.ts';
import { readSetting } from '../lib/config/settings.ts';
import { STAGES, type StageName } from '../lib/deployment.ts';
import { LIST_PARAMETERS, PAGE_SIZE_MAX } from '../lib/orders/list-query.ts';

const PROJECT_ROOT = join(import.meta.dirname, '..');

/** What a client reads of an error code besides its status: when, whether to retry, what to do. */
interface ErrorGuidance {
  readonly when: string;
  /** `no`, or when to send the request again. */
  readonly retry: string;
  readonly todo: string;
}

/** Guidance for every code of the catalogue (a code added there must be added here). */
export const ERROR_GUIDE = {
  BAD_REQUEST: {
    when: 'API Gateway could not take the request as HTTP (a client error it has no other code for). The local API (`npm start`) also answers it a request whose head or body has not arrived in full 29 s after it began, a malformed chunked body, or an HTTP/1.1 request without `Host`.',
    retry: 'no: the same request gets the same answer',
    todo: "Fix the request; look at what the client's HTTP library sends. Not counted against the key's limits.",
  },
  INVALID_ORDER_ID: {
    when: 'The `orderId` of a cancel is not a base-10 integer in the int64 range (at most 64 characters; leading zeros are accepted). The message quotes the id, or only the start of anything shaped like an API key.',
    retry: 'no',
    todo: 'Send the id as the list gave it, digit for digit: parse ids as 64-bit integers or strings, never as JavaScript numbers ([calling the API](clients.md)). Counted against the limits.',
  },
  UNKNOWN_PARAMETER: {
    when: `v2's list was given a query parameter it does not take: it takes ${LIST_PARAMETERS.map((p) => `\`${p}\``).join(', ')}, names matched exactly (case-sensitive). v1's list ignores query parameters.`,
    retry: 'no',
    todo: 'Correct or drop the parameter; the message names it. Counted against the limits.',
  },
  INVALID_PARAMETER: {
    when: `A v2 query parameter has a malformed value — a \`status\` other than \`pending\`, \`shipped\` or \`cancelled\`, a \`petId\` outside int64, a \`shipDateFrom\` or \`shipDateTo\` that is not an RFC 3339 date-time (a \`+\` in an offset must be sent as \`%2B\`), a \`complete\` other than \`true\` or \`false\`, a \`pageSize\` that is not a whole number from 1 (above ${PAGE_SIZE_MAX} is served as ${PAGE_SIZE_MAX}) — or a parameter other than \`status\` is given twice.`,
    retry: 'no',
    todo: 'Fix the value; the message names the parameter and quotes what it got. Counted against the limits.',
  },
  INVALID_DATE_RANGE: {
    when: '`shipDateFrom` is not before `shipDateTo` (from is inclusive, to exclusive): the range is empty or inverted.',
    retry: 'no',
    todo: 'Send a range whose start comes before its end. Counted against the limits.',
  },
  INVALID_PAGE_TOKEN: {
    when: 'The `pageToken` was altered or cut short, is of a version this API does not know, or was issued for other filters than the request has.',
    retry: 'no: the same token is refused again',
    todo: 'Send tokens back exactly as they came, with the filters of the page that gave them; to start again from the first page, leave `pageToken` out ([paging through v2](paging-v2.md)). Counted against the limits.',
  },
  UNAUTHORIZED: {
    when: 'The `Authorization` header is missing, is not `Bearer <key>`, or its key is unknown, revoked or expired. API Gateway answers it, with `WWW-Authenticate: Bearer realm="store-orders"`, and may keep a key\'s refusal for the authorizer cache\'s time ([settings](settings.md)).',
    retry: 'no: not with the same key',
    todo: 'Check the key you send (it starts `sok_`). A rotated key keeps working until the end of its grace; a key revoked or expired does not come back: ask the operators for a new one. Not counted against the limits.',
  },
  PERMISSION_DENIED: {
    when: 'The key may not make this request: a key that may only read asked to cancel (or one that may only cancel asked for a list or a page). Answered before anything else of the request is looked at: never a 304, nothing read or written of the orders. Each operation names the permission it needs in the OpenAPI documents (`x-permission`).',
    retry: 'no',
    todo: "Use a key that has the permission, or ask the operators to change this key's (`keys set-permissions`). Counted against the limits, like any request: a flood of them is limited and banned like any other.",
  },
  ORDER_NOT_FOUND: {
    when: 'A cancel of an id that no order has.',
    retry: 'no',
    todo: 'Check the id (every digit: an id read through a JavaScript number may have changed). Counted against the limits.',
  },
  ROUTE_NOT_FOUND: {
    when: 'A path the API does not have. API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Check the base address (it ends in `/v1` or `/v2`) and the path (`/store/orders`, `/store/orders/{orderId}`). Not counted against the limits.',
  },
  METHOD_NOT_ALLOWED: {
    when: 'A path the API has, with a method it does not take there. The `Allow` header lists the methods it takes. API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Use one of the methods of `Allow`. Not counted against the limits.',
  },
  NOT_ACCEPTABLE: {
    when: "v1's list (`GET /v1/store/orders`), when the request's `Accept-Encoding` refuses every coding the list can be sent in, identity included (`identity;q=0`, and none of `zstd`, `br`, `gzip` accepted). It carries `Vary: Accept-Encoding`.",
    retry: 'no',
    todo: 'Accept `identity`, or one of `zstd`, `br` and `gzip` ([compressed lists](clients.md#compressed-lists)). Counted against the limits.',
  },
  ORDER_ALREADY_SHIPPED: {
    when: 'A cancel of an order that has shipped. Nothing changed: a shipped order stays shipped, whatever races it.',
    retry: 'no',
    todo: 'Treat it as final: the order can no longer be cancelled. Counted against the limits.',
  },
  REQUEST_TOO_LARGE: {
    when: 'A request larger than 10 MB, or whose headers together pass 10,240 bytes (a long `If-None-Match` list, say). API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Send fewer or shorter headers. Not counted against the limits.',
  },
  RATE_LIMITED: {
    when: "The key is over its per-minute or per-day limit ([rate limits](rate-limits.md)); `Retry-After` says when a request will be admitted, exactly. Also the stage's throttle, a safety net for all keys together ([settings](settings.md#fixed-per-stage)): then with `Retry-After: 1` and no rate-limit headers.",
    retry:
      'yes, after `Retry-After` seconds and not sooner: a key that keeps sending sooner is banned',
    todo: 'Sleep `Retry-After`, then send; share one client (or one wait) per key. The [TypeScript client](../client/README.md) does this by itself. A refusal is not counted as a request.',
  },
  API_KEY_TEMPORARILY_BANNED: {
    when: 'The key kept sending before the `Retry-After` of its 429s, and is banned for a while ([the ban](rate-limits.md#the-temporary-ban)). The refusal that starts the ban says so, as does every request until it ends. `Retry-After` is the seconds left.',
    retry:
      'after `Retry-After` (the end of the ban); requests during a ban neither count nor extend it',
    todo: 'Make the client wait `Retry-After` after every 429: a client that does is never banned. Operators can lift a ban ([runbook](runbooks.md#a-customer-says-we-are-banned)).',
  },
  INTERNAL_ERROR: {
    when: 'A bug, a misconfiguration (a missing table, access denied) or stored data the service cannot read; also API Gateway, when a function failed without answering. The body carries no detail; the operators are paged.',
    retry: 'not soon: it does not pass by retrying (a cancel is safe to send again later)',
    todo: 'Tell the operators, with the request id the answer carried (`x-amzn-RequestId`).',
  },
  SERVICE_UNAVAILABLE: {
    when: `A dependency (DynamoDB) failed for a moment or did not answer within the request's time budget ([failures](failures.md)); the key check failed (API Gateway answers it then); a function did not answer in time; the rate limiter could not reach its counters; or a v2 filter whose index is not ready yet, after a deployment that adds it (\`Retry-After: ${INDEX_NOT_READY_RETRY_AFTER_SECONDS}\`). \`Retry-After\` is ${DEFAULT_RETRY_AFTER_SECONDS} s otherwise.`,
    retry: 'yes, after `Retry-After`, with exponential backoff and jitter if it repeats',
    todo: 'Retry. A 503 on a cancel may or may not have been applied: sending it again is safe (a cancel of a cancelled order answers 204) and converges. Counted against the limits, except when the rate limiter itself failed.',
  },
} as const satisfies Record<ErrorCode, ErrorGuidance>;

/** A Markdown table cell: its pipes escaped. */
const cell = (text: string) => text.replace(/\|/g, '\\|');

/** A Markdown table, header first (Prettier aligns it when the page is written). */
function table(rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(rows[0]!), line(rows[0]!.map(() => '---')), ...rows.slice(1).map(line)].join('\n');
}

/** The heading of a code's section, and its anchor as GitHub makes it. */
const errorHeading = (code: ErrorCode) => `${ERROR_CATALOGUE[code].status} \`${code}\``;
const errorAnchor = (code: ErrorCode) => `${ERROR_CATALOGUE[code].status}-${code.toLowerCase()}`;

/** docs/errors.md's generated part: a table of the codes, then a section a code. */
export function errorsPart(): string {
  const codes = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).sort(
    (a, b) => ERROR_CATALOGUE[a].status - ERROR_CATALOGUE[b].status,
  );
  const summary = table([
    ['status', 'code', 'retry'],
    ...codes.map((code) => [
      String(ERROR_CATALOGUE[code].status),
      `[\`${code}\`](#${errorAnchor(code)})`,
      ERROR_GUIDE[code].retry.startsWith('no') ? 'no' : 'yes',
    ]),
  ]);
  const sections = codes.map((code) => {
    const guide: ErrorGuidance = ERROR_GUIDE[code];
    const gateway = GATEWAY_RESPONSES.filter((response) => response.code === code);
    const fromGateway =
      gateway.length === 0
        ? ''
        : `\n\nFrom API Gateway itself (without rate-limit headers, not counted): ${gateway.map((r) => r.when).join('; ')}.`;
    return [
      `### ${errorHeading(code)}`,
      '',
      `${guide.when}${fromGateway}`,
      '',
      `Default message: "${ERROR_CATALOGUE[code].message}"`,
      '',
      `**Retry:** ${guide.retry}. **Do:** ${guide.todo}`,
    ].join('\n');
  });
  return [summary, ...sections].join('\n\n');
}

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

/** An alarm as the template holds it. */
interface SynthesizedAlarm {
  readonly id: string;
  readonly threshold: number;
  readonly periodSeconds: number;
  readonly description: string;
}

/** The alarms of each stage, from its synthesized Api stack (no bundling). */
export function synthesizedAlarms(): Record<StageName, SynthesizedAlarm[]> {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const { stages } = buildApp(app);
  return Object.fromEntries(
    STAGES.map((stage, i) => [
      stage,
      alarmsOf(stage, Template.fromStack(stages[i]!.api).toJSON() as TemplateJson),
    ]),
  ) as Record<StageName, SynthesizedAlarm[]>;
}

type TemplateJson = { Resources: Record<string, { Type: string; Properties: AlarmProperties }> };
interface AlarmProperties {
  AlarmName: string;
  Threshold: number;
  AlarmDescription: string;
  Period?: number;
  Metrics?: { Period?: number; MetricStat?: { Period?: number } }[];
}

/** A stage's alarms in a template, in the template's order. */
export function alarmsOf(stage: StageName, template: TemplateJson): SynthesizedAlarm[] {
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::CloudWatch::Alarm')
    .map(({ Properties: p }) => ({
      id: p.AlarmName.replace(`store-orders-${stage}-`, ''),
      threshold: p.Threshold,
      periodSeconds:
        p.Period ??
        Math.max(...(p.Metrics ?? []).map((m) => m.MetricStat?.Period ?? m.Period ?? 0)),
      description: p.AlarmDescription,
    }));
}

/** A kind of alarm: which alarms it holds, how its threshold reads, the section saying what to do. */
interface AlarmFamily {
  readonly pattern: RegExp;
  /** The heading of its section in docs/alarms.md ("What to do"). */
  readonly section: string;
  readonly threshold: (value: number) => string;
}

const count = (value: number) => value.toLocaleString('en-US');

/** Every kind of alarm; an alarm that is of none fails the page (it has nothing saying what to do). */
export const ALARM_FAMILIES: readonly AlarmFamily[] = [
  {
    pattern: /^ServerErrorRate$/,
    section: 'ServerErrorRate',
    threshold: (v) => `${v * 100}% of requests`,
  },
  { pattern: /^LatencyP99$/, section: 'LatencyP99', threshold: (v) => `${count(v)} ms` },
  { pattern: /^AuthorizerErrors$/, section: 'AuthorizerErrors', threshold: count },
  { pattern: /^InternalErrors$/, section: 'InternalErrors', threshold: count },
  {
    pattern: /^\w+TableThrottledRequests$/,
    section: 'A table’s ThrottledRequests',
    threshold: count,
  },
  { pattern: /^\w+TableSystemErrors$/, section: 'A table’s SystemErrors', threshold: count },
  {
    pattern: /^OrdersIndex\w+WriteThrottles$/,
    section: 'An index’s WriteThrottles',
    threshold: count,
  },
  {
    pattern: /^OrdersTableBatchWriteThrottles$/,
    section: 'OrdersTableBatchWriteThrottles',
    threshold: count,
  },
  {
    pattern: /^ListOrdersNearTimeout$/,
    section: 'ListOrdersNearTimeout',
    threshold: (v) => `${count(v / 1000)} s`,
  },
  { pattern: /^RateLimiterStoreFailures$/, section: 'RateLimiterStoreFailures', threshold: count },
  { pattern: /^ListStreamFailures$/, section: 'ListStreamFailures', threshold: count },
  {
    pattern: /^ListResponseBytes$/,
    section: 'ListResponseBytes',
    threshold: (v) => `${count(v / 1e6)} MB`,
  },
  {
    pattern: /^\w+NewVersionFailures$/,
    section: 'A new version’s failures or latency',
    threshold: (v) => `a score of ${v.toFixed(1)}`,
  },
  {
    pattern: /^\w+NewVersionLatency$/,
    section: 'A new version’s failures or latency',
    threshold: (v) => `${v} times`,
  },
  // The functions' own, last: the patterns above are theirs too.
  { pattern: /^\w+Errors$/, section: 'A function’s Errors', threshold: count },
  { pattern: /^\w+Throttles$/, section: 'A function’s Throttles', threshold: count },
];

/** The anchor GitHub gives a heading. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The family of an alarm; none is an error (a new alarm needs a section saying what to do). */
export function familyOf(id: string): AlarmFamily {
  // The first that matches: the specific patterns come before the general ones.
  const family = ALARM_FAMILIES.find((f) => f.pattern.test(id));
  if (!family) throw new Error(`alarm ${id} is of no family of scripts/reference-pages.ts`);
  return family;
}

/** docs/alarms.md's generated part: every alarm, its thresholds, what it says, where to act. */
export function alarmsPart(alarms: Record<StageName, SynthesizedAlarm[]>): string {
  const production = alarms.production;
  const staging = new Map(alarms.staging.map((alarm) => [alarm.id, alarm]));
  const ids = [...new Set([...alarms.staging, ...production].map((alarm) => alarm.id))];
  return table([
    ['alarm', 'period', 'staging', 'production', 'says (production)', 'do'],
    ...ids.map((id) => {
      const family = familyOf(id);
      const at = (alarm: SynthesizedAlarm | undefined) =>
        alarm === undefined ? 'none' : family.threshold(alarm.threshold);
      const shown = production.find((alarm) => alarm.id === id) ?? staging.get(id)!;
      return [
        `**${id}**`,
        `${shown.periodSeconds / 60} min`,
        at(staging.get(id)),
        at(production.find((alarm) => alarm.id === id)),
        shown.description,
        `[what to do](#${anchor(family.section)})`,
      ];
    }),
  ]);
}

/** A generated part of a page: its markers and how it is made. */
interface GeneratedPart {
  readonly file: string;
  readonly name: string;
  readonly make: () => string;
}

/** The generated parts, each page's one. */
export function generatedParts(
  alarms: () => Record<StageName, SynthesizedAlarm[]> = synthesizedAlarms,
): GeneratedPart[] {
  return [
    { file: 'docs/errors.md', name: 'error codes', make: errorsPart },
    { file: 'docs/settings.md', name: 'stage settings', make: settingsPart },
    { file: 'docs/alarms.md', name: 'alarms', make: () => alarmsPart(alarms()) },
  ];
}

const startMarker = (name: string) =>
  `<!-- ${name}: generated by \`npm run docs:reference\` (scripts/reference-pages.ts) -->`;
const endMarker = (name: string) => `<!-- end of the generated ${name} -->`;

/** `markdown` with the part between the markers of `name` replaced by `body`. */
export function withPart(markdown: string, name: string, body: string): string {
  const start = markdown.indexOf(startMarker(name));
  const end = markdown.indexOf(endMarker(name));
  if (start < 0 || end < start) throw new Error(`the markers of the generated ${name} are missing`);
  return `${markdown.slice(0, start + startMarker(name).length)}\n\n${body}\n\n${markdown.slice(end)}`;
}

/** `text` as Prettier formats the file. */
async function formatted(file: string, text: string): Promise<string> {
  const prettier = await import('prettier');
  // Prose wrapped at the print width, as the hand-written pages are; stable under the
  // repository's own settings (which preserve wrapping), so `prettier --check` keeps it.
  const options = { ...(await prettier.resolveConfig(file)), proseWrap: 'always' as const };
  return prettier.format(text, { ...options, filepath: file });
}

/** A page as this script writes it, from the page as it is. */
export async function pageAsWritten(part: GeneratedPart, current: string): Promise<string> {
  const path = join(PROJECT_ROOT, part.file);
  return formatted(path, withPart(current, part.name, part.make()));
}

async function main(): Promise<void> {
  for (const part of generatedParts()) {
    const path = join(PROJECT_ROOT, part.file);
    const current = await readFile(path, 'utf8');
    const written = await pageAsWritten(part, current);
    if (written === current) {
      console.log(`${part.file}: up to date`);
    } else {
      await writeFile(path, written);
      console.log(`${part.file}: wrote its ${part.name}`);
    }
  }
}

if (import.meta.main) await main();

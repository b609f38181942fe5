/**
 * The stage settings a deployer gives, `<stage>:<key>` in CDK context (cdk.json, or `-c` on a
 * command line): each key's shape declared once with valibot (lib/config/settings.ts), which
 * types its value and words what a person must give when it is wrong. infra/config.ts
 * (stageConfig) puts them over the stage's defaults and checks the rules between them.
 */
import * as v from 'valibot';
import { mustBe, readSetting, shown, wholeNumber } from '../lib/config/settings.ts';
import type { StageName } from '../lib/deployment.ts';
import {
  listVersionItemsProblem,
  type ListVersionItems,
} from '../lib/dynamodb/list-version-items.ts';
import { ORDER_INDEX_NAMES } from '../lib/dynamodb/tables.ts';
import { FUNCTION_NAMES } from '../lib/functions.ts';
import { MAX_BAN_SECONDS, MIN_STAGE_BAN_SECONDS } from '../lib/limits/limiter.ts';
import type { AlarmSubscription } from './config.ts';

/** Reads CDK context values (`-c key=value` or cdk.json). */
export type ContextReader = (key: string) => unknown;

/** The longest bake: the post-traffic hook runs in one Lambda invocation (15 minutes at most). */
export const MAX_BAKE_MINUTES = 12;

/** A text setting matching `pattern`; empty is the same as not given. */
const text = (pattern: RegExp, expected: string) =>
  v.union(
    [
      v.pipe(
        v.literal(''),
        v.transform(() => undefined),
      ),
      v.pipe(v.string(), v.regex(pattern, mustBe(expected))),
    ],
    mustBe(expected),
  );

/** A true-or-false setting (CDK context gives booleans from cdk.json, strings from `-c`). */
const flag = v.pipe(
  v.union([v.boolean(), v.picklist(['true', 'false'])], mustBe('true or false')),
  v.transform((value) => value === true || value === 'true'),
);

/** An alarm subscriber: an e-mail address or an `https://` URL. */
const subscription = v.union(
  [
    v.pipe(
      v.string(),
      v.trim(),
      v.regex(/^[^\s@,]+@[^\s@,]+\.[a-z]{2,}$/i),
      v.transform((endpoint): AlarmSubscription => ({ protocol: 'email', endpoint })),
    ),
    v.pipe(
      v.string(),
      v.trim(),
      v.check((url) => URL.canParse(url) && new URL(url).protocol === 'https:'),
      v.transform((endpoint): AlarmSubscription => ({ protocol: 'https', endpoint })),
    ),
  ],
  (issue) => `takes e-mail addresses and https:// URLs, got ${shown(issue.input)}`,
);

/** A JSON list given as text (`-c`), or the text itself when it is not one (then refused). */
function jsonList(text: string): unknown[] {
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value : [text];
  } catch {
    return [text];
  }
}

/** JSON text (`-c`) read as the value it holds; any other value (cdk.json) as it is. */
const fromJsonText = (example: string) =>
  v.rawTransform<unknown, unknown>(({ dataset, addIssue, NEVER }) => {
    if (typeof dataset.value !== 'string') return dataset.value;
    try {
      return JSON.parse(dataset.value) as unknown;
    } catch {
      addIssue({ message: mustBe(`JSON such as ${example}`) });
      return NEVER;
    }
  });

/**
 * The stage settings, `<stage>:<key>` in CDK context (cdk.json, or `-c` on a command line): each
 * key's shape, declared once. The schema types the value and says what a person must give; a
 * setting not given keeps the stage's default (stageConfig). Rules that relate two settings (a
 * domain and its certificate, reservations within the account's limit) are checked after.
 */
export const STAGE_SETTINGS = {
  account: text(/^\d{12}$/, 'a 12-digit AWS account id'),
  region: text(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as eu-west-1'),
  authorizerCacheTtlSeconds: wholeNumber(0, 3600),
  rateLimitFailureMode: v.picklist(['open', 'closed'], mustBe('open or closed')),
  rateLimitBanAfterRefusals: wholeNumber(1, 1000),
  // A ban shorter than the minute window would end before the refusals that caused it age out.
  rateLimitBanSeconds: wholeNumber(
    MIN_STAGE_BAN_SECONDS,
    MAX_BAN_SECONDS,
    'a ban at least as long as the minute window, at most a day',
  ),
  domainName: text(/^([a-z0-9-]+\.)+[a-z]{2,}$/, 'a DNS name'),
  certificateArn: text(
    /^arn:aws[\w-]*:acm:[\w-]+:\d{12}:certificate\/[\w-]+$/,
    'an ACM certificate ARN',
  ),
  apiGatewayAccountRole: flag,
  // 0 would not mean "no reservation" but a function that never runs: the minimum is 1.
  listOrdersReservedConcurrency: v.union(
    [v.literal('none'), wholeNumber(1, 1e6)],
    (issue) => `(or none) must be an integer from 1 to 1000000, got ${shown(issue.input)}`,
  ),
  accountConcurrencyLimit: wholeNumber(1, 1e6),
  // `{"cancelOrder": 2}`: the functions not named keep the stage's default.
  provisionedConcurrency: v.pipe(
    v.unknown(),
    fromJsonText('{"cancelOrder": 2}'),
    v.check(
      (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
      mustBe('an object such as {"cancelOrder": 2}'),
    ),
    v.record(
      v.picklist(FUNCTION_NAMES, `is not a function (${FUNCTION_NAMES.join(', ')})`),
      wholeNumber(0, 1e5),
    ),
  ),
  // A list (cdk.json, or JSON text with `-c`) or one comma-separated text (`-c`).
  alarmSubscriptions: v.pipe(
    v.unknown(),
    v.transform((raw) =>
      raw === ''
        ? []
        : Array.isArray(raw)
          ? (raw as unknown[])
          : typeof raw === 'string'
            ? raw.trimStart().startsWith('[')
              ? jsonList(raw)
              : raw.split(',')
            : [raw],
    ),
    v.array(subscription),
  ),
  deploymentBakeMinutes: wholeNumber(0, MAX_BAKE_MINUTES),
  // The watch after the last shift probes the new version at each read: figures of its own
  // where callers are too few (docs/deploy.md, "What each kind of broken version meets").
  deploymentWatchProbe: flag,
  // The version in service and the one before it, at least: what a rollback points back at.
  versionsKept: wholeNumber(2, 100),
  deployIgnoringAlarms: flag,
  // The orders table's indexes, by name: all of them unless a stage upgrading from 1.0.0 adds
  // them one deploy at a time (docs/upgrade-from-1.0.0.md).
  ordersIndexes: v.pipe(
    v.unknown(),
    fromJsonText('["ordersByStatus"]'),
    v.array(
      v.picklist(
        ORDER_INDEX_NAMES,
        (issue) =>
          `names an index this code does not know (${shown(issue.input)}): expected some of ${ORDER_INDEX_NAMES.join(', ')}`,
      ),
      mustBe('a list of index names'),
    ),
    v.check(
      (names) => new Set(names).size === names.length,
      (issue) => `names an index twice: ${shown(issue.input)}`,
    ),
  ),
  // Whether the indexes keyed by derived attributes wait for `orders reindex`'s marker: a table
  // that holds orders release 1.0.0 wrote (lib/dynamodb/index-readiness.ts).
  ordersAwaitReindex: flag,
  // How many list version items the functions mark (`write`) and read (`read`): `4`, or `"4/0"`
  // (mark, read none) while code that marks none may still write (lib/dynamodb/list-version-items.ts).
  listVersionItems: v.pipe(
    v.unknown(),
    v.transform((raw): ListVersionItems | undefined => {
      if (typeof raw === 'number') return { write: raw, read: raw };
      if (typeof raw !== 'string') return undefined;
      const match = /^\s*(\d{1,2})\s*(?:\/\s*(\d{1,2})\s*)?$/.exec(raw);
      return match ? { write: Number(match[1]), read: Number(match[2] ?? match[1]) } : undefined;
    }),
    v.check(
      (items) => items !== undefined && listVersionItemsProblem(items) === undefined,
      (issue) =>
        `must be a count of items written and read, or "<write>/<read>": write from 1 to 32, read 0 (none) or from write to 32, got ${shown(issue.input)}`,
    ),
    v.transform((items) => items!),
  ),
};

/** The keys of the stage settings (`<stage>:<key>`), as docs/deploy.md lists them. */
export const STAGE_SETTING_KEYS = Object.keys(STAGE_SETTINGS) as (keyof typeof STAGE_SETTINGS)[];

export type StageSettings = {
  readonly [K in keyof typeof STAGE_SETTINGS]?: v.InferOutput<(typeof STAGE_SETTINGS)[K]>;
};

/** A stage's settings that context gives, read and checked; the others absent. */
export function stageSettings(stage: StageName, context: ContextReader): StageSettings {
  const settings: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(STAGE_SETTINGS)) {
    const value = context(`${stage}:${key}`);
    if (value !== undefined) settings[key] = readSetting(`${stage}:${key}`, schema, value);
  }
  return settings;
}

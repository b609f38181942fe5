/**
 * The hooks' settings: what the stack writes into their environment (HOOK_ENV, set by
 * infra/deploy-hooks.ts), its shape declared once (valibot: lib/config/settings.ts), which types
 * the settings and words the error that names a missing or malformed variable. The hooks read
 * them inside their verdict path (./verdict.ts), so that such an error fails the deployment at
 * once instead of leaving CodeDeploy without a verdict.
 */
import * as v from 'valibot';
import { requireEnv } from '../../lib/config/env.ts';
import { mustBe, shown, type Issue } from '../../lib/config/settings.ts';
import { HOOK_ENV } from '../../lib/deployment.ts';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';

const nonEmptyText = v.pipe(v.string('a non-empty text'), v.nonEmpty('a non-empty text'));

/** What the hooks know of each deployment group (named after its function), from the stack. */
const DEPLOY_TARGET = v.object(
  {
    /** The function's physical name. */
    functionName: nonEmptyText,
    /** The group's deployment alarms, watched after the last shift. */
    alarms: v.array(v.string('alarm names'), 'a list of alarm names'),
    /** Whether `live` has provisioned concurrency with target tracking. */
    provisioned: v.boolean('true or false'),
  },
  'an object',
);
export type DeployTarget = Readonly<v.InferOutput<typeof DEPLOY_TARGET>>;

/** The environment of the hooks, by HOOK_ENV's keys. */
const HOOK_SETTINGS = {
  targets: v.pipe(
    v.string(),
    v.parseJson(
      undefined,
      (issue) => `must be JSON, got ${shown(String(issue.input).slice(0, 200))}`,
    ),
    v.object(
      Object.fromEntries(FUNCTION_NAMES.map((name) => [name, DEPLOY_TARGET])) as Record<
        FunctionName,
        typeof DEPLOY_TARGET
      >,
      'an object',
    ),
  ),
  bakeSeconds: v.pipe(v.string(), v.regex(/^\d+$/, mustBe('a whole number')), v.transform(Number)),
  watchProbe: v.pipe(
    v.picklist(['true', 'false'], mustBe('true or false')),
    v.transform((flag) => flag === 'true'),
  ),
  versionsKept: v.pipe(v.string(), v.regex(/^\d+$/, mustBe('a whole number')), v.transform(Number)),
  ignoreAlarms: v.pipe(
    v.picklist(['true', 'false'], mustBe('true or false')),
    v.transform((flag) => flag === 'true'),
  ),
  ordersTable: nonEmptyText,
  apiKeysTable: nonEmptyText,
  metricsNamespace: nonEmptyText,
} satisfies Record<keyof typeof HOOK_ENV, v.GenericSchema<string, unknown>>;

export type HookSettings = {
  readonly [K in keyof typeof HOOK_SETTINGS]: Readonly<v.InferOutput<(typeof HOOK_SETTINGS)[K]>>;
};

/**
 * How an issue in DEPLOY_TARGETS is told: every function's target is expected, and which one (and
 * which of its fields) was wrong. (Valibot words an issue where it finds it, before it knows the
 * path: the path is added here.)
 */
function targetsMessage(issue: Issue): string {
  const [name, ...field] = (issue.path ?? []).map((item) => String(item.key));
  const detail = field.length > 0 ? ` (${field.join('.')}: ${issue.message})` : '';
  return `must be {functionName, alarms, provisioned} for ${name ?? 'every function'} (every function's)${detail}, got ${shown(issue.input)}`;
}

/** The hooks' settings from their environment. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): HookSettings {
  const read = <K extends keyof typeof HOOK_SETTINGS>(key: K) => {
    const value = requireEnv(HOOK_ENV[key], env);
    const result = v.safeParse(HOOK_SETTINGS[key], value);
    if (!result.success) {
      const [issue] = result.issues;
      const message =
        key === 'targets' && issue.type !== 'parse_json' ? targetsMessage(issue) : issue.message;
      throw new Error(`Environment variable ${HOOK_ENV[key]} ${message}`);
    }
    return result.output as v.InferOutput<(typeof HOOK_SETTINGS)[K]>;
  };
  return {
    ignoreAlarms: read('ignoreAlarms'),
    targets: read('targets'),
    bakeSeconds: read('bakeSeconds'),
    watchProbe: read('watchProbe'),
    versionsKept: read('versionsKept'),
    ordersTable: read('ordersTable'),
    apiKeysTable: read('apiKeysTable'),
    metricsNamespace: read('metricsNamespace'),
  };
}

/**
 * The hooks' settings: what the stack writes into their environment (HOOK_ENV, set by
 * infra/deploy-hooks.ts), read and checked. A missing or malformed one is an error that names the
 * variable; the hooks read them inside their verdict path (./verdict.ts), so that such an error
 * fails the deployment at once instead of leaving CodeDeploy without a verdict.
 */
import { HOOK_ENV } from '../../lib/deployment.ts';
import { FUNCTION_NAMES, type FunctionName } from '../../lib/functions.ts';

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

/** The hooks' settings from their environment. */
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

/** Reading API keys to register from JSON (the local API's `--keys` file). */
import {
  isPlanName,
  PLAN_NAMES,
  resolveLimits,
  type Limits,
  type PlanName,
} from '../limits/plans.ts';
import { isWellFormedApiKey, KEY_PREFIX, parseBearerToken, redactApiKeys } from './api-key.ts';
import type { RecordProblem } from '../orders/order-input.ts';

export interface KeyEntry {
  readonly key: string;
  readonly plan: PlanName;
  readonly limits?: Limits;
  readonly label?: string;
}

export type KeysParseResult =
  | { readonly ok: true; readonly entries: KeyEntry[] }
  | { readonly ok: false; readonly problems: RecordProblem[] };

const ALLOWED = ['key', 'plan', 'limits', 'label'];

function readEntry(value: unknown, problems: string[]): KeyEntry | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push('must be an object with "key" and "plan"');
    return undefined;
  }
  const entry = value as Record<string, unknown>;
  for (const name of Object.keys(entry)) {
    if (!ALLOWED.includes(name))
      problems.push(`unknown field "${name}" (allowed: ${ALLOWED.join(', ')})`);
  }
  const { key, plan, limits, label } = entry;
  if (
    typeof key !== 'string' ||
    key.length === 0 ||
    key.length > 512 ||
    parseBearerToken(`Bearer ${key}`) !== key
  ) {
    problems.push(
      'key must be a non-empty string of letters, digits and -._~+/ (at most 512 characters)',
    );
  } else if (key.startsWith(KEY_PREFIX) && !isWellFormedApiKey(key)) {
    problems.push(`key starts with ${KEY_PREFIX} but its checksum is wrong`);
  }
  if (label !== undefined && typeof label !== 'string') problems.push('label must be a string');
  if (!isPlanName(plan)) {
    problems.push(
      `plan must be one of ${PLAN_NAMES.join(', ')}, got ${JSON.stringify(typeof plan === 'string' ? redactApiKeys(plan) : plan) ?? 'nothing'}`,
    );
    return undefined;
  }
  let resolved: Limits | undefined;
  try {
    const custom = limits === undefined ? undefined : (limits as Partial<Limits>);
    if (limits !== undefined && (typeof limits !== 'object' || limits === null)) {
      throw new Error('limits must be an object {"perMinute": N, "perDay": N}');
    }
    resolved = resolveLimits(plan, custom);
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (problems.length > 0 || typeof key !== 'string') return undefined;
  return {
    key,
    plan,
    ...(plan === 'enterprise' && resolved ? { limits: resolved } : {}),
    ...(typeof label === 'string' ? { label } : {}),
  };
}

export function parseKeyEntries(text: string): KeysParseResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problems: [{ index: -1, message: `not valid JSON: ${(error as Error).message}` }],
    };
  }
  if (!Array.isArray(parsed)) {
    return {
      ok: false,
      problems: [{ index: -1, message: 'expected a JSON array of {"key", "plan"} objects' }],
    };
  }
  const entries: KeyEntry[] = [];
  const problems: RecordProblem[] = [];
  const seen = new Set<string>();
  parsed.forEach((value: unknown, index) => {
    const entryProblems: string[] = [];
    const entry = readEntry(value, entryProblems);
    if (entry && seen.has(entry.key)) entryProblems.push('the same key appears twice');
    if (entry && entryProblems.length === 0) {
      seen.add(entry.key);
      entries.push(entry);
    }
    for (const message of entryProblems) problems.push({ index, message });
  });
  return problems.length === 0 ? { ok: true, entries } : { ok: false, problems };
}

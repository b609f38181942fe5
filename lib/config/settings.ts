/**
 * Settings with a shape, declared once with valibot: a setting's schema types its value and words
 * what a person must give when it is wrong (`must be an integer from 0 to 3600, got "7200"`); the
 * reader of the setting puts its name in front (`staging:authorizerCacheTtlSeconds`, `Environment
 * variable BAKE_SECONDS`). The stage settings (infra/stage-settings.ts) and the deploy hooks'
 * environment (functions/deploy-hooks/settings.ts) are read with it. Valibot, not zod: it adds
 * the least to the deploy hook's bundle and first answer (bench/README.md, "Settings schemas").
 */
import * as v from 'valibot';
import { parseWholeNumber } from './integers.ts';

export type Issue = v.BaseIssue<unknown>;

/** A value as a message shows it: JSON where it has one (`"7200"`, `5`, `{"a":1}`). */
export function shown(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** The message of a value that is not what was expected: `must be …, got …`. */
export const mustBe =
  (expected: string) =>
  (issue: Issue): string =>
    `must be ${expected}, got ${shown(issue.input)}`;

/**
 * A whole number from `min` to `max`: a number, or decimal digits only (no sign, exponent,
 * fraction or spaces; lib/config/integers.ts), as CDK context and `-c` give them. `about` is
 * said before the expectation (`(or none)`).
 */
export function wholeNumber(min: number, max: number, about?: string) {
  const range = { min, max };
  return v.pipe(
    v.unknown(),
    v.check(
      (value) => parseWholeNumber(value, range) !== undefined,
      (issue) =>
        `${about ? `(${about}) ` : ''}must be an integer from ${min} to ${max}, got ${shown(issue.input)}`,
    ),
    v.transform((value) => parseWholeNumber(value, range)!),
  );
}

/** The first issue of a failed parse as one line: the setting's name, then what was wrong. */
export function settingError(name: string, issues: readonly [Issue, ...Issue[]]): Error {
  const [issue] = issues;
  // A field of an object setting is named (`provisionedConcurrency.cancelOrder`); an entry of a
  // list is shown in the message instead.
  const fields = (issue.path ?? [])
    .filter((item) => item.type === 'object')
    .map((item) => item.key);
  return new Error(`${[name, ...fields].join('.')} ${issue.message}`);
}

/** A setting's value read with its schema, or the error that names it. */
export function readSetting<S extends v.GenericSchema>(
  name: string,
  schema: S,
  value: unknown,
): v.InferOutput<S> {
  const result = v.safeParse(schema, value);
  if (!result.success) throw settingError(name, result.issues);
  return result.output;
}

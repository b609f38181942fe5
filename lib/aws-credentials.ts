/**
 * The AWS SDK's credential failures, said the same way by every tool that calls AWS (the operator
 * CLI's tables, CloudFormation's outputs for the CLI and the smoke suite): what is missing and
 * what to do, in one line.
 */
import { DependencyFailure } from './failures.ts';

/** What to do when the SDK has no usable credentials. */
const CREDENTIALS_HINT =
  'set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run aws sso login';

/**
 * Whether an error is a credential failure: none found (the SDK's CredentialsProviderError), or
 * refused by AWS (expired, unknown, badly signed: the stores' `credentials` failures).
 */
export function isCredentialsError(error: unknown): boolean {
  if (error instanceof DependencyFailure) {
    return (
      error.reason === 'credentials' ||
      (error.cause !== undefined && isCredentialsError(error.cause))
    );
  }
  const { name = '', message = '' } = (error ?? {}) as Partial<Error>;
  return name === 'CredentialsProviderError' || /credentials/i.test(message.split('\n')[0] ?? '');
}

/** The one line of a credential failure, naming what needed them (`to read stack …`). */
export function describeCredentialsError(firstLine: string, purpose: string): string {
  return `AWS credentials missing or refused ${purpose} (${firstLine}): ${CREDENTIALS_HINT}`;
}

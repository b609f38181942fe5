/**
 * After CloudFormation rolled a stack update back, each function publishes a version of its
 * code as it is now (the rolled-back code), so that the same deploy can be tried again.
 *
 * Versions are kept (`DeletionPolicy: Retain`, for rollbacks), so a failed deploy leaves behind
 * the version it published of the new code; CloudFormation then puts the function's code back.
 * Deploying the same code again makes CloudFormation publish a version of it once more, and
 * Lambda "doesn't publish a version if the function's configuration and code haven't changed
 * since the last version" (PublishVersion): the last version is the kept one, identical, and
 * CloudFormation fails with "A version for this Lambda function exists". Publishing the
 * rolled-back code now makes the last version differ from the new code, so the next publication
 * of it is a new version. When nothing was published by the failed deploy, the code has not
 * changed since the last version and Lambda publishes nothing.
 */
import { PublishVersionCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { Logger } from '../shared/logger.ts';

/** Publishes the function's code as it is now (nothing if it is its last version already). */
export async function republish(
  lambda: LambdaClient,
  functionName: string,
  log: Logger,
): Promise<string | undefined> {
  const { Version } = await lambda.send(
    new PublishVersionCommand({
      FunctionName: functionName,
      Description: 'the code after a rolled-back deploy, so that the deploy can be tried again',
    }),
  );
  log.info('Version published after a rolled-back stack update', {
    functionName,
    version: Version,
  });
  return Version;
}

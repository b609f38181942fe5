/**
 * After CloudFormation rolled a stack update back, each function publishes a version of its
 * rolled-back code, so that the same deploy can be tried again.
 *
 * Versions are kept (`DeletionPolicy: Retain`, for rollbacks), so a failed deploy leaves behind
 * the version it published of the new code; CloudFormation then puts the function's code back.
 * Deploying the same code again makes CloudFormation publish a version of it once more, and
 * Lambda "doesn't publish a version if the function's configuration and code haven't changed
 * since the last version" (PublishVersion): the last version is the kept one, identical, and
 * CloudFormation fails with "A version for this Lambda function exists". Publishing the
 * rolled-back code makes the last version differ from the new code, so the next publication of
 * it is a new version. One function's failed deployment rolls all of the stack's functions back,
 * so each is published, each on its own: one that fails does not keep the others from it.
 *
 * It publishes the rolled-back code and nothing else: only while the stack is rolled back (a
 * stack updating again is a retry under way), only the code and configuration of the version the
 * rolled-back stack names (CloudFormation's record: not `live`, which a pin may hold elsewhere),
 * and only as `$LATEST` was when it was read (PublishVersion's CodeSha256 and RevisionId): a
 * retry that changed the function meanwhile makes Lambda publish nothing. Publishing it twice
 * (the hook, and an operator who retries at once: docs/deploy.md) publishes it once.
 */
import {
  DescribeStacksCommand,
  paginateListStackResources,
  type CloudFormationClient,
} from '@aws-sdk/client-cloudformation';
import {
  GetFunctionConfigurationCommand,
  InvalidParameterValueException,
  PreconditionFailedException,
  PublishVersionCommand,
  type FunctionConfiguration,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { ROLLED_BACK_STATUS } from '../../lib/deployment.ts';
import type { Logger } from '../shared/logger.ts';

/** The stack's status now (a stack that updates again is no longer rolled back). */
export async function stackStatus(
  cloudFormation: CloudFormationClient,
  stackId: string,
): Promise<string | undefined> {
  const { Stacks = [] } = await cloudFormation.send(
    new DescribeStacksCommand({ StackName: stackId }),
  );
  return Stacks[0]?.StackStatus;
}

export const isRolledBack = (status: string | undefined) => status === ROLLED_BACK_STATUS;

/**
 * The version of each function the stack names (its `AWS::Lambda::Version` resources: after a
 * rollback, the versions of the rolled-back code), by function name.
 */
export async function stackVersions(
  cloudFormation: CloudFormationClient,
  stackId: string,
): Promise<Map<string, string>> {
  const versions = new Map<string, string>();
  for await (const page of paginateListStackResources(
    { client: cloudFormation },
    { StackName: stackId },
  )) {
    for (const resource of page.StackResourceSummaries ?? []) {
      if (resource.ResourceType !== 'AWS::Lambda::Version') continue;
      // arn:aws:lambda:REGION:ACCOUNT:function:NAME:VERSION
      const [name, version] = (resource.PhysicalResourceId ?? '').split(':').slice(-2);
      if (name && version && /^\d+$/.test(version)) versions.set(name, version);
    }
  }
  return versions;
}

/** What a version holds that a publication copies: its code and the configuration it runs with. */
function content(config: FunctionConfiguration): string {
  return JSON.stringify([
    config.CodeSha256,
    config.Handler,
    config.Runtime,
    config.MemorySize,
    config.Timeout,
    config.Role,
    config.Architectures,
    config.Environment?.Variables ?? {},
    config.TracingConfig?.Mode,
    config.EphemeralStorage?.Size,
    (config.Layers ?? []).map((layer) => layer.Arn),
    config.LoggingConfig,
  ]);
}

/** How a function's republication ended. */
export type Republished = { readonly published: string } | { readonly skipped: string };

/**
 * Publishes a function's rolled-back code — the code and configuration of `rolledBack`, the
 * version the rolled-back stack names — if `$LATEST` still holds it; else publishes nothing.
 */
export async function republish(
  lambda: LambdaClient,
  functionName: string,
  rolledBack: string,
  log: Logger,
): Promise<Republished> {
  const [wanted, latest] = await Promise.all(
    [rolledBack, undefined].map((Qualifier) =>
      lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName, Qualifier })),
    ),
  );
  const skip = (why: string): Republished => {
    log.info('Nothing published after the rolled-back stack update', { functionName, why });
    return { skipped: why };
  };
  if (content(wanted!) !== content(latest!)) {
    return skip(
      `$LATEST is no longer the code of version ${rolledBack} that the stack rolled back to: a deploy under way`,
    );
  }
  try {
    const { Version } = await lambda.send(
      new PublishVersionCommand({
        FunctionName: functionName,
        // As read: a deploy that changed the function since makes Lambda refuse.
        CodeSha256: wanted!.CodeSha256,
        RevisionId: latest!.RevisionId,
        Description: 'the code after a rolled-back deploy, so that the deploy can be tried again',
      }),
    );
    log.info('Version published after a rolled-back stack update', {
      functionName,
      version: Version,
      code: wanted!.CodeSha256,
    });
    return { published: Version ?? '' };
  } catch (error) {
    if (
      (error instanceof InvalidParameterValueException && /CodeSHA256/i.test(error.message)) ||
      error instanceof PreconditionFailedException
    ) {
      return skip(
        `the function changed while it was published (${error.message}): a deploy under way`,
      );
    }
    throw error;
  }
}

/**
 * The `rollback` alias of a function: the version docs/deploy.md's rollback lands on — the one
 * `live` served before the last deployment that passed (its probe, its shift, its bake), as
 * CodeDeploy recorded it (the deployment's current version). Moved by the post-traffic hook
 * when a deployment passes and moved `live` forward; a deployment that moved `live` back to an
 * older version (a rollback through CloudFormation) leaves it where it was. A version an alias
 * names is never pruned (./prune.ts).
 */
import {
  CreateAliasCommand,
  ResourceNotFoundException,
  UpdateAliasCommand,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { ROLLBACK_ALIAS } from '../../lib/deployment.ts';
import type { FunctionName } from '../../lib/functions.ts';
import type { Logger } from '../shared/logger.ts';

/** Points `rollback` at the version a passed deployment replaced, when it moved `live` forward. */
export async function recordRollbackVersion(
  lambda: LambdaClient,
  group: FunctionName,
  functionName: string,
  versions: { readonly replaced: string | undefined; readonly deployed: string },
  log: Logger,
): Promise<void> {
  const { replaced, deployed } = versions;
  if (replaced === undefined || !(Number(replaced) < Number(deployed))) {
    log.info('Rollback version left as it is', { group, replaced, deployed });
    return;
  }
  const alias = {
    FunctionName: functionName,
    Name: ROLLBACK_ALIAS,
    FunctionVersion: replaced,
    Description: `live before version ${deployed} passed its deployment`,
  };
  try {
    await lambda.send(new UpdateAliasCommand(alias));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
    await lambda.send(new CreateAliasCommand(alias));
  }
  log.info('Rollback version recorded', { group, alias: ROLLBACK_ALIAS, version: replaced });
}

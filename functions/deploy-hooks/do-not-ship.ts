/**
 * The do-not-ship mark of a function: its alias `do-not-ship` (lib/deployment.ts), which an
 * operator's rollback puts on the version it rolls back from (docs/deploy.md, "Roll back at
 * once"). The pre-traffic hook refuses a deployment to the marked version before anything else,
 * so that the next deploy of unchanged code — whose template names that version again — cannot
 * move `live` back to it. The mark outlives any number of deploys until an operator deletes it.
 */
import {
  GetAliasCommand,
  ResourceNotFoundException,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import { DO_NOT_SHIP_ALIAS } from '../../lib/deployment.ts';

/** The version a function's mark names, and what it says, or undefined when it has none. */
export async function doNotShip(
  lambda: LambdaClient,
  functionName: string,
): Promise<{ readonly version: string; readonly description: string } | undefined> {
  try {
    const alias = await lambda.send(
      new GetAliasCommand({ FunctionName: functionName, Name: DO_NOT_SHIP_ALIAS }),
    );
    return alias.FunctionVersion === undefined
      ? undefined
      : { version: alias.FunctionVersion, description: alias.Description ?? '' };
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

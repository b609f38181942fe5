/**
 * The pruning of old versions after a deployment passed: a function's versions beyond the newest
 * `versionsKept`, but any that an alias routes to, so that what a rollback needs stays. A version
 * that cannot be deleted is logged and kept: pruning never fails a deployment.
 */
import {
  DeleteFunctionCommand,
  paginateListAliases,
  paginateListVersionsByFunction,
  type LambdaClient,
} from '@aws-sdk/client-lambda';
import type { FunctionName } from '../../lib/functions.ts';
import type { Logger } from '../shared/logger.ts';

/** Deletes the versions of a group's function beyond the newest `versionsKept` that no alias uses. */
export async function prune(
  lambda: LambdaClient,
  group: FunctionName,
  functionName: string,
  versionsKept: number,
  log: Logger,
): Promise<string[]> {
  const versions: number[] = [];
  const pages = { client: lambda };
  for await (const page of paginateListVersionsByFunction(pages, {
    FunctionName: functionName,
  })) {
    for (const { Version } of page.Versions ?? []) {
      if (/^\d+$/.test(Version ?? '')) versions.push(Number(Version));
    }
  }
  const used = new Set<string>();
  for await (const page of paginateListAliases(pages, { FunctionName: functionName })) {
    for (const alias of page.Aliases ?? []) {
      if (alias.FunctionVersion) used.add(alias.FunctionVersion);
      for (const v of Object.keys(alias.RoutingConfig?.AdditionalVersionWeights ?? {})) {
        used.add(v);
      }
    }
  }
  const newestFirst = versions.sort((a, b) => b - a).map(String);
  const doomed = newestFirst.slice(versionsKept).filter((v) => !used.has(v));
  const deleted: string[] = [];
  for (const version of doomed) {
    try {
      await lambda.send(
        new DeleteFunctionCommand({ FunctionName: functionName, Qualifier: version }),
      );
      deleted.push(version);
    } catch (error) {
      log.warn('Old version not deleted', { group, version, error: error as Error });
    }
  }
  log.info('Old versions deleted', { group, deleted, kept: newestFirst.slice(0, versionsKept) });
  return deleted;
}

/**
 * The target tracking of a function's provisioned concurrency on `live`, suspended for a
 * deployment and resumed after it: Lambda refuses some provisioned-concurrency changes while an
 * alias routes by weights (the canary). A function without provisioned concurrency has none.
 */
import {
  RegisterScalableTargetCommand,
  type ApplicationAutoScalingClient,
} from '@aws-sdk/client-application-auto-scaling';
import { LIVE_ALIAS } from '../../lib/deployment.ts';
import type { FunctionName } from '../../lib/functions.ts';
import type { Logger } from '../shared/logger.ts';
import type { DeployTarget } from './settings.ts';

export async function setScaling(
  autoScaling: ApplicationAutoScalingClient,
  group: FunctionName,
  target: DeployTarget,
  suspended: boolean,
  log: Logger,
): Promise<void> {
  if (!target.provisioned) return;
  await autoScaling.send(
    new RegisterScalableTargetCommand({
      ServiceNamespace: 'lambda',
      ResourceId: `function:${target.functionName}:${LIVE_ALIAS}`,
      ScalableDimension: 'lambda:function:ProvisionedConcurrency',
      SuspendedState: {
        DynamicScalingInSuspended: suspended,
        DynamicScalingOutSuspended: suspended,
        ScheduledScalingSuspended: suspended,
      },
    }),
  );
  log.info(suspended ? 'Scaling suspended' : 'Scaling resumed', { group });
}

/**
 * The CDK app: one cdk.Stage per deployment stage, each from its validated configuration, with
 * the cdk-nag AwsSolutions checks on everything. `npx cdk deploy 'Staging/*'` deploys staging.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { STAGES, stageId } from '../lib/deployment.ts';
import { stageConfig, type StageConfig } from './config.ts';
import { acknowledgeNagFindings } from './nag.ts';
import { StoreOrdersStage } from './stage.ts';

/**
 * At most one stage per account may own the account's API Gateway CloudWatch role: two owners
 * would overwrite each other's setting, and deleting one stack could take it from the other.
 * Stages whose account is not given may share one, so they count as one account.
 */
export function checkAccountRoleOwners(configs: readonly StageConfig[]): void {
  const owners = configs.filter((config) => config.apiGatewayAccountRole);
  for (const [i, a] of owners.entries()) {
    for (const b of owners.slice(i + 1)) {
      const shared =
        a.env.account === undefined ||
        b.env.account === undefined ||
        a.env.account === b.env.account;
      const sameRegion =
        a.env.region === undefined || b.env.region === undefined || a.env.region === b.env.region;
      if (shared && sameRegion) {
        throw new Error(
          `${a.stage}:apiGatewayAccountRole and ${b.stage}:apiGatewayAccountRole are both true for ` +
            `what may be one account and region: its API Gateway CloudWatch role can have one ` +
            `owner only (set it on one stage)`,
        );
      }
    }
  }
}

export function buildApp(app: App = new App()): { app: App; stages: StoreOrdersStage[] } {
  const configs = STAGES.map((stage) => stageConfig(stage, (key) => app.node.tryGetContext(key)));
  checkAccountRoleOwners(configs);
  const stages = configs.map(
    (config) => new StoreOrdersStage(app, stageId(config.stage), { config }),
  );
  for (const stage of stages) acknowledgeNagFindings(stage);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stages };
}

if (import.meta.main) {
  try {
    buildApp().app.synth();
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
    process.exit(1);
  }
}

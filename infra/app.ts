/**
 * The CDK app: one cdk.Stage per deployment stage, each from its validated configuration, with
 * the cdk-nag AwsSolutions checks on everything. `npx cdk deploy 'Staging/*'` deploys staging.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { STAGES, stageId } from '../lib/deployment.ts';
import { stageConfig } from './config.ts';
import { acknowledgeNagFindings } from './nag.ts';
import { StoreOrdersStage } from './stage.ts';

export function buildApp(app: App = new App()): { app: App; stages: StoreOrdersStage[] } {
  const stages = STAGES.map(
    (stage) =>
      new StoreOrdersStage(app, stageId(stage), {
        config: stageConfig(stage, (key) => app.node.tryGetContext(key)),
      }),
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

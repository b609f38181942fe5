/** Builds the CDK app for assertion tests, without bundling (the CI's `npm run synth` bundles). */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../infra/app.ts';
import type { StoreOrdersStage } from '../../infra/stage.ts';
import type { StageName } from '../../lib/deployment.ts';

export function testApp(context: Record<string, unknown> = {}): {
  app: App;
  stages: Record<StageName, StoreOrdersStage>;
} {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const { stages } = buildApp(app);
  return { app, stages: { staging: stages[0]!, production: stages[1]! } };
}

export function templates(stage: StoreOrdersStage): { data: Template; api: Template } {
  return { data: Template.fromStack(stage.data), api: Template.fromStack(stage.api) };
}

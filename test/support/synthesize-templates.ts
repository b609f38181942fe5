/**
 * Synthesizes templates without bundling, in a plain Node process (test/support/assembly.ts
 * synthesizeTemplates): `node test/support/synthesize-templates.ts '<requests as JSON>'`. Each
 * request is the whole app with its checks (`app`) or one stage's stacks, with settings over
 * cdk.json's, into its directory; exits 1 with synth's message on a setting it refuses.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { buildApp } from '../../infra/app.ts';
import { stageConfig } from '../../infra/config.ts';
import { StoreOrdersStage } from '../../infra/stage.ts';
import { stageId, type StageName } from '../../lib/deployment.ts';
import type { TemplatesRequest } from './assembly.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const { context: checkedIn } = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

for (const request of JSON.parse(process.argv[2] ?? '[]') as TemplatesRequest[]) {
  const given = Object.fromEntries(
    Object.entries(request.settings).filter(([, value]) => value !== undefined),
  );
  const context = { ...checkedIn, ...given };
  // As the CDK CLI runs an app, without bundling: each resource's construct path in its metadata.
  const app = new App({
    outdir: request.outDir,
    context: { ...context, 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-path-metadata': true },
  });
  try {
    if (request.kind === 'app') {
      buildApp(app);
    } else {
      const stage: StageName = request.kind;
      new StoreOrdersStage(app, stageId(stage), {
        config: stageConfig(stage, (key) => context[key], {}),
      });
    }
    app.synth();
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

/** One deployment stage: its tables (stateful) and its functions + API (stateless). */
import { Stage, type StageProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { stackNames } from '../lib/deployment.ts';
import { ApiStack } from './api-stack.ts';
import type { StageConfig } from './config.ts';
import { DataStack } from './data-stack.ts';

export interface StoreOrdersStageProps extends StageProps {
  readonly config: StageConfig;
}

export class StoreOrdersStage extends Stage {
  readonly data: DataStack;
  readonly api: ApiStack;

  constructor(scope: Construct, id: string, props: StoreOrdersStageProps) {
    super(scope, id, { ...props, env: props.config.env });
    const { config } = props;
    const names = stackNames(config.stage);
    this.data = new DataStack(this, 'Data', {
      stackName: names.data,
      description: `Store Orders ${config.stage}: tables`,
      config,
      terminationProtection: config.terminationProtection,
    });
    this.api = new ApiStack(this, 'Api', {
      stackName: names.api,
      description: `Store Orders ${config.stage}: functions and API`,
      config,
      tables: this.data.tables,
      terminationProtection: config.terminationProtection,
    });
  }
}

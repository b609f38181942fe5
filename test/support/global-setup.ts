/** Starts one DynamoDB Local for the whole test run and stops it at the end, whatever happens. */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb-local.ts';

let dynamo: DynamoDbLocal | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TEST_DYNAMODB_ENDPOINT;
  if (given) {
    project.provide('dynamodbEndpoint', given);
    return;
  }
  dynamo = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', dynamo.endpoint);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void dynamo?.stop().finally(() => process.exit(1)));
  }
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}

/**
 * Starts one DynamoDB Local for the whole test run and stops it at the end, whatever happens.
 * Every project that uses the database (`db`, `db-isolated`, `long`) runs this setup: the first
 * starts the instance, the last to end stops it. `npm test` starts its own and hands it over
 * (TEST_DYNAMODB_ENDPOINT).
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

interface Shared {
  readonly started: Promise<DynamoDbLocal>;
  users: number;
}

/** The run's one DynamoDB Local (also `npm test`'s, test/run-all.ts), quick to start. */
export const startRunDynamoDb = (): Promise<DynamoDbLocal> =>
  startDynamoDbLocal({ quickStart: true });

/** Process-wide: each project may load this module on its own. */
const SHARED = Symbol.for('store-orders.test-dynamodb-local');
const holder = globalThis as { [SHARED]?: Shared };

export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TEST_DYNAMODB_ENDPOINT;
  if (given) {
    project.provide('dynamodbEndpoint', given);
    return;
  }
  let shared = holder[SHARED];
  if (!shared) {
    const started = startRunDynamoDb();
    shared = holder[SHARED] = { started, users: 0 };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        void started.then((dynamo) => dynamo.stop()).finally(() => process.exit(1));
      });
    }
  }
  shared.users++;
  project.provide('dynamodbEndpoint', (await shared.started).endpoint);
}

export async function teardown(): Promise<void> {
  const shared = holder[SHARED];
  if (!shared || --shared.users > 0) return;
  holder[SHARED] = undefined;
  await (await shared.started).stop();
}

/**
 * The DynamoDB a list benchmark reads: the one at `--dynamodb-endpoint`, or a DynamoDB Local of its
 * own (stopped by `stop`), with a client that waits as long as DynamoDB Local needs (a Scan page
 * is 1 MB) instead of a request's budget.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { attemptTimeouts, createDocumentClient } from '../lib/dynamodb/client.ts';
import { startDynamoDbLocal } from '../local/dynamodb-local.ts';

export async function benchDynamoDb(endpoint: string | undefined): Promise<{
  readonly endpoint: string;
  readonly client: DynamoDBDocumentClient;
  /** Closes the client, and stops the DynamoDB Local it started. */
  readonly stop: () => Promise<void>;
}> {
  const dynamo = endpoint
    ? { endpoint, stop: () => Promise.resolve() }
    : await startDynamoDbLocal();
  const client = createDocumentClient(
    { endpoint: dynamo.endpoint },
    { requestHandler: attemptTimeouts(120_000, 10_000) },
  );
  return {
    endpoint: dynamo.endpoint,
    client,
    stop: () => {
      client.destroy();
      return dynamo.stop();
    },
  };
}

/**
 * The DynamoDB client, created once per container. Integers come back as NumberValue (exact
 * digits), never as JS numbers. Each attempt has a timeout that really ends it
 * (`throwOnRequestTimeout`: without it the SDK only logs a warning and waits on), and the
 * callers put a deadline on each whole call (lib/dynamodb/errors.ts `send`).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TIME_BUDGETS } from '../config/budgets.ts';
import { deliveryWatchingAgents } from './undelivered.ts';
import { TABLES, type TableNames } from './tables.ts';

export interface DynamoDbConnection {
  /** e.g. http://127.0.0.1:8000 for DynamoDB Local; AWS's endpoint when absent. */
  readonly endpoint?: string;
  readonly region?: string;
}

/** Credentials DynamoDB Local accepts (it checks nothing but their presence). */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
export const LOCAL_REGION = 'local';

/** Socket timeouts of one attempt; a timed-out attempt fails (and may be retried). */
export function attemptTimeouts(
  requestTimeout: number = TIME_BUDGETS.attemptMs,
  connectionTimeout: number = TIME_BUDGETS.connectMs,
) {
  return { connectionTimeout, requestTimeout, throwOnRequestTimeout: true };
}

export function createDocumentClient(
  connection: DynamoDbConnection = {},
  overrides: Partial<DynamoDBClientConfig> = {},
): DynamoDBDocumentClient {
  const local = connection.endpoint !== undefined;
  const client = new DynamoDBClient({
    maxAttempts: 3,
    requestHandler: attemptTimeouts(),
    ...(local
      ? {
          endpoint: connection.endpoint,
          region: connection.region ?? LOCAL_REGION,
          credentials: LOCAL_CREDENTIALS,
        }
      : connection.region
        ? { region: connection.region }
        : {}),
    ...overrides,
  });
  // The SDK's logger middleware copies every input and output through its sensitive-data filter
  // even when nothing logs them (the default logger is a no-op): a walk over each page of 1,000
  // orders, about 3 µs per order read. Nothing here gives the SDK a logger; failures are logged
  // by the callers (lib/dynamodb/errors.ts).
  client.middlewareStack.remove('loggerMiddleware');
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
    unmarshallOptions: { wrapNumbers: true },
  });
}

/**
 * A client that makes exactly one attempt per call, for writes that are not idempotent (the rate
 * limiter's counters): the SDK's retry after a timeout could apply a write twice. With no second
 * attempt to make room for, its one attempt may take the whole request budget (the caller's
 * deadline still ends it). The caller retries what provably never reached DynamoDB.
 */
export function createSingleAttemptClient(
  connection: DynamoDbConnection = {},
  agents: ReturnType<typeof deliveryWatchingAgents> = deliveryWatchingAgents(),
): DynamoDBDocumentClient {
  return createDocumentClient(connection, {
    maxAttempts: 1,
    // Its agents record which failed requests provably never reached DynamoDB (./undelivered.ts):
    // those, and only those, its caller may send again.
    requestHandler: { ...attemptTimeouts(TIME_BUDGETS.requestMs), ...agents },
  });
}

/** Attempts of each call of operator and set-up work (each ends at its attempt budget). */
export const OPERATOR_ATTEMPTS = 3;

/**
 * A client for operator and set-up work — the admin CLI, `npm start`'s seeding and key
 * registration: the operator's budget (TIME_BUDGETS.adminAttemptMs an attempt, 3 attempts), not
 * a request's. Every attempt still ends at its budget, so a stalled DynamoDB ends the work with a
 * clear line instead of hanging.
 */
export function createOperatorClient(
  connection: DynamoDbConnection = {},
  attemptMs: number = TIME_BUDGETS.adminAttemptMs,
): DynamoDBDocumentClient {
  return createDocumentClient(connection, {
    maxAttempts: OPERATOR_ATTEMPTS,
    requestHandler: attemptTimeouts(attemptMs, 3_000),
  });
}

/** The connection a function uses: AWS's, or DYNAMODB_ENDPOINT when running locally. */
export function connectionFromEnv(env: NodeJS.ProcessEnv = process.env): DynamoDbConnection {
  const endpoint = env.DYNAMODB_ENDPOINT;
  return endpoint ? { endpoint, region: env.AWS_REGION ?? LOCAL_REGION } : {};
}

/** The environment that hands table names to a function. */
export function tableEnv(names: Partial<TableNames>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [table, name] of Object.entries(names)) {
    env[TABLES[table as keyof TableNames].envVar] = name;
  }
  return env;
}

// Handlers that stream need the Lambda runtime's `awslambda` global when they are loaded.
import { inject } from 'vitest';
import { LOCAL_REGION } from '../../lib/dynamodb/client.ts';
import { installLambdaRuntimeGlobals } from '../../local/lambda-runtime.ts';

installLambdaRuntimeGlobals();
process.env.LOG_LEVEL ??= 'SILENT';
// Metrics are checked where they matter, not printed by every test.
process.env.METRICS_DISABLED ??= 'true';
// The functions create their DynamoDB client as they load (Lambda's init), from DYNAMODB_ENDPOINT:
// a test file that imports a function module before it hands the function its tables gets the
// run's DynamoDB Local, as the local API would give it, and never AWS's default endpoint.
const endpoint = inject('dynamodbEndpoint') as string | undefined;
if (endpoint) {
  process.env.DYNAMODB_ENDPOINT ??= endpoint;
  process.env.AWS_REGION ??= LOCAL_REGION;
}

// Handlers that stream need the Lambda runtime's `awslambda` global when they are loaded.
import { installLambdaRuntimeGlobals } from '../../local/lambda-runtime.ts';

installLambdaRuntimeGlobals();
process.env.LOG_LEVEL ??= 'SILENT';
// Metrics are checked where they matter, not printed by every test.
process.env.METRICS_DISABLED ??= 'true';

/**
 * The service's Lambda functions: one place for what the CDK stack deploys and what the local
 * emulator runs (entry file, memory, timeout), so that both give each function the same room.
 */
import type { OperationId } from './api/routes.ts';

export type FunctionName = OperationId | 'authorizer';

export interface FunctionDefinition {
  /** File under functions/. */
  readonly entry: string;
  readonly description: string;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
}

export const FUNCTIONS: Readonly<Record<FunctionName, FunctionDefinition>> = {
  // Merges and serialises (and compresses) up to the whole table: CPU scales with memory, and
  // 1,769 MB is one full vCPU. It may stream for as long as API Gateway keeps a stream open.
  listOrders: {
    entry: 'list-orders.ts',
    description: 'GET /store/orders: every order, sorted by id, streamed',
    memoryMb: 1769,
    timeoutSeconds: 900,
  },
  // A page of at most 100 orders: a version read, a few rounds of Queries and the BatchGetItems of
  // its candidates (100 keys a call, at once: one call for a page of 100 whose filter its index
  // holds, up to 25 for a re-checked filter's 2,500), after the limiter's. Its answer is small
  // and its work mostly waiting: 512 MB, as the cancel.
  listOrderPages: {
    entry: 'list-order-pages.ts',
    description: 'GET /v2/store/orders: the orders a query selects, a page at a time',
    memoryMb: 512,
    timeoutSeconds: 10,
  },
  // A few DynamoDB calls each, one after another: 512 MB keeps cold starts short. Their own
  // budgets end DynamoDB work within seconds; the timeout is a backstop.
  cancelOrder: {
    entry: 'cancel-order.ts',
    description: 'DELETE /store/orders/{orderId}: pending to cancelled',
    memoryMb: 512,
    timeoutSeconds: 10,
  },
  authorizer: {
    entry: 'authorizer.ts',
    description: 'API key authorizer: key to plan and limits',
    memoryMb: 512,
    timeoutSeconds: 10,
  },
};

export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/** A function of the deployment machinery, not of the API: its definition and its handler. */
export interface HookDefinition extends FunctionDefinition {
  /** The export of the entry file Lambda calls. */
  readonly handler: string;
}

/**
 * CodeDeploy's lifecycle hooks of the functions' deployments (infra/deploy-hooks.ts), one file
 * with two handlers: before any traffic moves (a call of the new version), and after the last
 * shift (the watch, then the pruning of old versions). The post-traffic hook has Lambda's
 * longest timeout: its watch lasts the stage's bake, and longer while the figures to pass the new
 * version are not in (functions/deploy-hooks/bake.ts).
 */
export const DEPLOY_HOOKS: Readonly<Record<'preTraffic' | 'postTraffic', HookDefinition>> = {
  preTraffic: {
    entry: 'deploy-hooks.ts',
    handler: 'preTraffic',
    description: 'CodeDeploy BeforeAllowTraffic: calls the new version before any traffic moves',
    memoryMb: 256,
    timeoutSeconds: 120,
  },
  postTraffic: {
    entry: 'deploy-hooks.ts',
    handler: 'postTraffic',
    description: 'CodeDeploy AfterAllowTraffic: watches the new version, then prunes old versions',
    memoryMb: 256,
    timeoutSeconds: 900,
  },
};

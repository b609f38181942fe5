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
  // One DynamoDB call each (after the limiter's): 512 MB keeps cold starts short. Their own
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

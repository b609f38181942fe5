/**
 * Preloaded into a CLI child process (`node --import <this file> admin/cli.ts …`) by tests: stubs
 * CloudFormation with aws-sdk-client-mock, so `--stage` without an outputs file reads stacks
 * from here, never from AWS. STORE_ORDERS_TEST_CLOUDFORMATION is JSON:
 * `{"stacks": {"Staging-Data": {"Region": "…", …}}, "error": {"name": "…", "message": "…"}}`;
 * a stack not listed is answered as CloudFormation answers it (a ValidationError). Each call is
 * appended, as `{"stack", "region"}`, to the file STORE_ORDERS_TEST_CLOUDFORMATION_LOG names.
 */
import { appendFileSync } from 'node:fs';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';

export interface CloudFormationStub {
  readonly stacks?: Record<string, Record<string, string>>;
  readonly error?: { readonly name: string; readonly message: string };
}

const stub = JSON.parse(process.env.STORE_ORDERS_TEST_CLOUDFORMATION ?? '{}') as CloudFormationStub;
const log = process.env.STORE_ORDERS_TEST_CLOUDFORMATION_LOG;

mockClient(CloudFormationClient)
  .on(DescribeStacksCommand)
  .callsFake(async (input: { StackName?: string }, getClient: () => CloudFormationClient) => {
    const stack = input.StackName ?? '';
    const region = await getClient().config.region();
    if (log) appendFileSync(log, `${JSON.stringify({ stack, region })}\n`);
    if (stub.error) throw Object.assign(new Error(stub.error.message), { name: stub.error.name });
    const outputs = stub.stacks?.[stack];
    if (!outputs) {
      throw Object.assign(new Error(`Stack with id ${stack} does not exist`), {
        name: 'ValidationError',
      });
    }
    return {
      Stacks: [
        {
          StackName: stack,
          CreationTime: new Date(),
          StackStatus: 'UPDATE_COMPLETE',
          Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({
            OutputKey,
            OutputValue,
          })),
        },
      ],
    };
  });

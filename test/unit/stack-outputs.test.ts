/**
 * A stage's stack outputs for the CLI and the smoke suite (lib/stack-outputs.ts): from an
 * outputs file when there is one, else from CloudFormation's DescribeStacks — here a stub
 * (aws-sdk-client-mock), never AWS — and each failure as one line.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { describeCloudFormationFailure, stageOutputs } from '../../lib/stack-outputs.ts';
import { parseCommandLine, resolveBaseUrls } from '../../smoke/smoke.ts';

const cloudFormation = mockClient(CloudFormationClient);
afterEach(() => cloudFormation.reset());

const stackOf = (name: string, outputs: Record<string, string>) => ({
  Stacks: [
    {
      StackName: name,
      CreationTime: new Date(),
      StackStatus: 'CREATE_COMPLETE' as const,
      Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({
        OutputKey,
        OutputValue,
      })),
    },
  ],
});
const emptyDir = () => mkdtempSync(join(tmpdir(), 'stack-outputs-'));

describe('stageOutputs', () => {
  it('asks CloudFormation for the stack, in the given region, when no outputs file is there', async () => {
    cloudFormation
      .on(DescribeStacksCommand, { StackName: 'Production-Data' })
      .resolves(stackOf('Production-Data', { Region: 'eu-west-1', OrdersTableName: 'T' }));
    const found = await stageOutputs('production', 'Production-Data', {
      region: 'eu-west-1',
      cwd: emptyDir(),
    });
    expect(found.source).toBe('CloudFormation (eu-west-1)');
    expect(await found.read('Production-Data')).toEqual({
      Region: 'eu-west-1',
      OrdersTableName: 'T',
    });
    const calls = cloudFormation.commandCalls(DescribeStacksCommand);
    expect(calls).toHaveLength(1);
    const client = calls[0]!.thisValue as CloudFormationClient;
    expect(await client.config.region()).toBe('eu-west-1');
  });

  it('reads cdk-outputs.<stage>.json when it is there, and never asks CloudFormation', async () => {
    const dir = emptyDir();
    writeFileSync(
      join(dir, 'cdk-outputs.staging.json'),
      JSON.stringify({ 'Staging-Api': { ApiUrl: 'https://x.example/v1' } }),
    );
    const found = await stageOutputs('staging', 'Staging-Api', { cwd: dir });
    expect(await found.read('Staging-Api')).toEqual({ ApiUrl: 'https://x.example/v1' });
    expect(cloudFormation.commandCalls(DescribeStacksCommand)).toHaveLength(0);
  });

  it('skips a shared cdk-outputs.json that lacks the stack', async () => {
    const dir = emptyDir();
    writeFileSync(join(dir, 'cdk-outputs.json'), JSON.stringify({ 'Staging-Data': {} }));
    cloudFormation.on(DescribeStacksCommand).resolves(stackOf('Production-Data', { Region: 'r' }));
    const found = await stageOutputs('production', 'Production-Data', { cwd: dir, region: 'r' });
    expect(found.source).toMatch(/^CloudFormation/);
  });

  it.each([
    [
      { name: 'ValidationError', message: 'Stack with id Staging-Data does not exist' },
      /^stack Staging-Data not found in eu-west-1 \(wrong region\? pass --region REGION or set AWS_REGION; not deployed\?\)$/,
    ],
    [
      {
        name: 'CredentialsProviderError',
        message: 'Could not load credentials from any providers',
      },
      /^AWS credentials missing or refused to read stack Staging-Data from CloudFormation \(Could not load credentials from any providers\)/,
    ],
    [
      { name: 'AccessDenied', message: 'User: x is not authorized to perform: DescribeStacks' },
      /^cannot read stack Staging-Data from CloudFormation in eu-west-1: AccessDenied: User: x is not authorized/,
    ],
  ])('says %j in one line', async (error, line) => {
    cloudFormation
      .on(DescribeStacksCommand)
      .rejects(Object.assign(new Error(error.message), error));
    const found = await stageOutputs('staging', 'Staging-Data', {
      region: 'eu-west-1',
      cwd: emptyDir(),
    });
    const failure = await found.read('Staging-Data').catch((e: unknown) => e as Error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(line);
    expect((failure as Error).message).not.toContain('\n');
  });

  it('names a missing region', () => {
    expect(describeCloudFormationFailure(new Error('Region is missing'), 'S', undefined)).toBe(
      'no AWS region to look for stack S in: pass --region REGION or set AWS_REGION',
    );
  });
});

describe('npm run smoke -- --stage', () => {
  it("takes v1's and v2's base URLs from the ApiUrl and ApiUrlV2 outputs of the stage API stack", async () => {
    cloudFormation.on(DescribeStacksCommand, { StackName: 'Staging-Api' }).resolves(
      stackOf('Staging-Api', {
        ApiUrl: 'https://abc.execute-api.eu-west-1.amazonaws.com/v1/',
        ApiUrlV2: 'https://abc.execute-api.eu-west-1.amazonaws.com/v2',
      }),
    );
    const command = parseCommandLine([
      '--stage',
      'staging',
      '--region',
      'eu-west-1',
      '--api-key',
      'k',
    ]);
    if (command === 'help' || 'error' in command) throw new Error(JSON.stringify(command));
    expect(await resolveBaseUrls(command)).toEqual({
      baseUrl: 'https://abc.execute-api.eu-west-1.amazonaws.com/v1',
      v2BaseUrl: 'https://abc.execute-api.eu-west-1.amazonaws.com/v2',
    });
  });

  it("takes v2's base URL from a v1 base URL given", async () => {
    const command = parseCommandLine(['--base-url', 'http://127.0.0.1:3000/v1', '--api-key', 'k']);
    if (command === 'help' || 'error' in command) throw new Error(JSON.stringify(command));
    expect(await resolveBaseUrls(command)).toEqual({
      baseUrl: 'http://127.0.0.1:3000/v1',
      v2BaseUrl: 'http://127.0.0.1:3000/v2',
    });
  });

  it.each([
    [['--stage', 'dev', '--api-key', 'k'], '--stage must be one of staging, production, got "dev"'],
    [
      ['--region', 'eu-west-1', '--base-url', 'http://x/v1', '--api-key', 'k'],
      '--region and --outputs go with --stage',
    ],
    [
      ['--stage', 'staging', '--base-url', 'http://x/v1', '--api-key', 'k'],
      '--base-url and --stage exclude each other',
    ],
    [['--api-key', 'k'], '--base-url or --stage is required'],
  ])('refuses %j', (args, error) => {
    expect(parseCommandLine(args)).toEqual({ error });
  });

  it('a stage it cannot find is one line on stderr and exit 1 (the program, CloudFormation stubbed)', async () => {
    const dir = emptyDir();
    const failure = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        join(PROJECT_ROOT, 'test', 'support', 'cloudformation-stub.ts'),
        join(PROJECT_ROOT, 'smoke', 'smoke.ts'),
        '--stage',
        'production',
        '--region',
        'eu-west-1',
        '--api-key',
        'k',
      ],
      { cwd: dir, env: { ...process.env, STORE_ORDERS_TEST_CLOUDFORMATION: '{}' } },
    ).catch((error: unknown) => error as { code: number; stderr: string; stdout: string });
    expect(failure).toMatchObject({
      code: 1,
      stdout: '',
      stderr:
        'error: stack Production-Api not found in eu-west-1 (wrong region? pass --region REGION or set AWS_REGION; not deployed?)\n',
    });
  });
});

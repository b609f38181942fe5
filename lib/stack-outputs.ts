/**
 * A deployed stage's stack outputs, for the operator CLI and the smoke suite: from an outputs
 * file (`cdk deploy --outputs-file`) when there is one, else from CloudFormation itself
 * (DescribeStacks), so any machine with AWS credentials finds a stage. Region: `--region`, else
 * the SDK's usual settings (AWS_REGION, the profile's region).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { describeCredentialsError, isCredentialsError } from './aws-credentials.ts';
import { DEFAULT_OUTPUTS_FILE, outputsFile, type StageName } from './deployment.ts';

/** The outputs cannot be found or read: one line for the operator. */
export class OutputsUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputsUnavailable';
  }
}

export interface StackOutputs {
  /** Where they came from, for messages: `cdk-outputs.staging.json`, `CloudFormation (eu-west-1)`. */
  readonly source: string;
  /** The outputs of a stack (output key → value); throws OutputsUnavailable when it has none. */
  readonly read: (stack: string) => Promise<Readonly<Record<string, string>>>;
}

export interface OutputsOptions {
  /** An outputs file named by the operator: used alone. */
  readonly outputs?: string;
  readonly region?: string;
  /** Where the default outputs files are looked for (the working directory). */
  readonly cwd?: string;
}

async function readOutputsFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new OutputsUnavailable(
      `cannot read the outputs file ${path} (${code}): drop --outputs to read the stage from CloudFormation, or deploy with --outputs-file ${path}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new OutputsUnavailable(
      `the outputs file ${path} is not valid JSON: ${(error as Error).message}`,
    );
  }
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
}

function fileOutputs(path: string, file: Record<string, unknown>): StackOutputs {
  return {
    source: path,
    read: (stack) => {
      const outputs = file[stack];
      if (typeof outputs !== 'object' || outputs === null) {
        return Promise.reject(
          new OutputsUnavailable(
            `the outputs file ${path} has no outputs of stack ${stack}: deploy that stage with --outputs-file (each deploy rewrites the file with only the stacks it deployed), pass --outputs FILE, or move the file away to read CloudFormation`,
          ),
        );
      }
      return Promise.resolve(
        Object.fromEntries(
          Object.entries(outputs).filter(
            (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '',
          ),
        ),
      );
    },
  };
}

/** One line for a failed DescribeStacks: no stack, no credentials, no region, no network. */
export function describeCloudFormationFailure(
  error: unknown,
  stack: string,
  region: string | undefined,
): string {
  const { name = 'Error', message = String(error) } = (error ?? {}) as Partial<Error>;
  const where = region ?? 'the default region';
  const first = message.split('\n')[0]?.trim() ?? '';
  if (/does not exist/i.test(first)) {
    return `stack ${stack} not found in ${where} (wrong region? pass --region REGION or set AWS_REGION; not deployed?)`;
  }
  if (isCredentialsError(error)) {
    return `${describeCredentialsError(first, `to read stack ${stack} from CloudFormation`)}, or pass --outputs FILE`;
  }
  if (/region is missing/i.test(first)) {
    return `no AWS region to look for stack ${stack} in: pass --region REGION or set AWS_REGION`;
  }
  if (/region not accepted/i.test(first)) {
    return `not an AWS region (${first}): pass --region REGION or set AWS_REGION`;
  }
  return `cannot read stack ${stack} from CloudFormation in ${where}: ${name === 'Error' || first.includes(name) ? first : `${name}: ${first}`}`;
}

function cloudFormationOutputs(region: string | undefined): StackOutputs {
  let client: CloudFormationClient | undefined;
  return {
    source: `CloudFormation${region ? ` (${region})` : ''}`,
    read: async (stack) => {
      client ??= new CloudFormationClient(region ? { region } : {});
      let resolvedRegion = region;
      try {
        resolvedRegion ??= await client.config.region();
        const answer = await client.send(new DescribeStacksCommand({ StackName: stack }));
        const found = answer.Stacks?.[0];
        if (!found) throw new Error(`Stack with id ${stack} does not exist`);
        return Object.fromEntries(
          (found.Outputs ?? [])
            .filter((output) => output.OutputKey && output.OutputValue)
            .map((output) => [output.OutputKey as string, output.OutputValue as string]),
        );
      } catch (error) {
        throw new OutputsUnavailable(describeCloudFormationFailure(error, stack, resolvedRegion));
      }
    },
  };
}

/**
 * Where a stage's outputs come from: `--outputs FILE` if given; else `cdk-outputs.<stage>.json`
 * if present; else `cdk-outputs.json` if present and holding `stack`; else CloudFormation.
 */
export async function stageOutputs(
  stage: StageName,
  stack: string,
  options: OutputsOptions = {},
): Promise<StackOutputs> {
  const at = (file: string) => (options.cwd ? `${options.cwd}/${file}` : file);
  if (options.outputs !== undefined) {
    return fileOutputs(options.outputs, await readOutputsFile(options.outputs));
  }
  const own = at(outputsFile(stage));
  if (existsSync(own)) return fileOutputs(own, await readOutputsFile(own));
  const shared = at(DEFAULT_OUTPUTS_FILE);
  if (existsSync(shared)) {
    const file = await readOutputsFile(shared);
    if (typeof file[stack] === 'object' && file[stack] !== null) return fileOutputs(shared, file);
  }
  return cloudFormationOutputs(options.region);
}

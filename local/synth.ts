/**
 * `cdk synth` as a deployer runs it, for the local tools that run a stage as synthesized
 * (`npm start -- --stage NAME`, the first-deploy and upgrade rehearsals): the project's pinned
 * CDK CLI, the checked-in cdk.json (its settings, or a given context over it), the functions
 * bundled with esbuild, offline, into a directory of the caller's (marked CommonJS, as the
 * bundles are).
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { PROJECT_ROOT } from './local-stack.ts';

const CDK_CLI = join(PROJECT_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');

export interface SynthOptions {
  /** Where the cloud assembly goes. */
  readonly outDir: string;
  /** Context given with `-c key=value`, over cdk.json's (values as JSON where not strings). */
  readonly context?: Readonly<Record<string, unknown>>;
  /** The project to synthesize (this one by default; the upgrade rehearsal's release checkout). */
  readonly projectDir?: string;
  readonly signal?: AbortSignal;
}

/**
 * Marks a cloud assembly's bundles as what they are: CommonJS files named index.js, which Lambda
 * loads from a directory of their own; under this project (`"type": "module"`) Node would take
 * them for ES modules.
 */
export async function markCommonJs(assemblyDir: string): Promise<void> {
  await writeFile(join(assemblyDir, 'package.json'), '{ "type": "commonjs" }\n');
}

/** Synthesizes every stage into `outDir`; rejects with the CLI's last lines when it fails. */
export async function synthesize(options: SynthOptions): Promise<string> {
  await mkdir(options.outDir, { recursive: true });
  const context = Object.entries(options.context ?? {}).flatMap(([key, value]) => [
    '-c',
    `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`,
  ]);
  // A region that is no AWS region (DynamoDB Local's `local`) means none: the stages are
  // synthesized environment-agnostic unless their settings name one.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    CDK_DISABLE_CLI_TELEMETRY: 'true',
  };
  for (const name of ['AWS_REGION', 'AWS_DEFAULT_REGION', 'CDK_DEFAULT_REGION']) {
    if (env[name] !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(env[name])) delete env[name];
  }
  const child = spawn(
    process.execPath,
    [CDK_CLI, 'synth', '--no-notices', '-q', '-o', options.outDir, ...context],
    {
      cwd: options.projectDir ?? PROJECT_ROOT,
      // The app (`node infra/app.ts`) under this Node, as `npm run` would put it first on PATH.
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) {
    const tail = output.trim().split('\n').slice(-5).join('\n');
    throw new Error(`cdk synth failed (exit ${code}):\n${tail}`);
  }
  await markCommonJs(options.outDir);
  return options.outDir;
}

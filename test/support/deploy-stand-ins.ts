/**
 * Stand-ins for what the deploy hooks talk to (aws-sdk-client-mock), shared by the hooks' tests:
 * a Lambda that runs the real handlers deployed under each function name and version, as Lambda
 * would (buffered or streamed), recording each invocation; a CodeDeploy that knows deployments
 * (their group, the versions, their lifecycle events) and records the verdicts.
 */
import {
  ApplicationAutoScalingClient,
  RegisterScalableTargetCommand,
} from '@aws-sdk/client-application-auto-scaling';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import {
  CodeDeployClient,
  GetDeploymentCommand,
  GetDeploymentTargetCommand,
  ListDeploymentTargetsCommand,
  PutLifecycleEventHookExecutionStatusCommand,
  type CodeDeployClientResolvedConfig,
  type ServiceInputTypes as CodeDeployInput,
  type ServiceOutputTypes as CodeDeployOutput,
} from '@aws-sdk/client-codedeploy';
import {
  GetAliasCommand,
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  LambdaClient,
  ResourceNotFoundException,
  type InvokeWithResponseStreamResponseEvent,
  type LambdaClientResolvedConfig,
  type ServiceInputTypes as LambdaInput,
  type ServiceOutputTypes as LambdaOutput,
} from '@aws-sdk/client-lambda';
import { mockClient, type AwsStub } from 'aws-sdk-client-mock';
import { vi } from 'vitest';
import type { HookVerdict } from '../../functions/deploy-hooks/verdict.ts';
import type { FunctionName } from '../../lib/functions.ts';
import {
  createContext,
  invokeBuffered,
  invokeStreaming,
  isStreamingHandler,
} from '../../local/lambda-runtime.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Stub = AwsStub<any, any, any>;

/** A list as a stream of events (what Lambda's client hands over). */
function asyncIterable<T>(items: readonly T[]): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      let at = 0;
      return {
        next: () =>
          Promise.resolve(
            at < items.length
              ? { done: false as const, value: items[at++]! }
              : { done: true as const, value: undefined },
          ),
      };
    },
  };
}

/** One invocation the stand-in Lambda ran. */
export interface Invocation {
  readonly functionName: string;
  readonly version: string;
  readonly event: unknown;
  /** Its status code (a proxy result's or a prelude's), when it answered one. */
  readonly status?: number;
  /** Whether the invocation failed (a function error). */
  readonly failed: boolean;
  readonly durationMs: number;
}

/**
 * The stand-in Lambda: `handlerOf` names the handler deployed under a function name and version
 * (undefined: the function or version does not exist, as Lambda's ResourceNotFound). A handler
 * that throws fails the invocation (FunctionError), as a crash at init does on Lambda. No
 * function has a do-not-ship mark (its alias is not found) unless a test gives one.
 */
export function standInLambda(
  lambda: AwsStub<LambdaInput, LambdaOutput, LambdaClientResolvedConfig>,
  handlerOf: (functionName: string, version: string) => unknown,
  invocations: Invocation[] = [],
): Invocation[] {
  const context = (functionName: string, version: string) => ({
    ...createContext(functionName, 10_000),
    functionVersion: version,
  });
  const resolve = (input: { FunctionName?: string; Qualifier?: string }) => {
    const handler = handlerOf(input.FunctionName ?? '', input.Qualifier ?? '$LATEST');
    if (handler === undefined) {
      throw Object.assign(
        new Error(`Function not found: ${input.FunctionName}:${input.Qualifier}`),
        {
          name: 'ResourceNotFoundException',
        },
      );
    }
    return handler;
  };
  lambda
    .on(GetAliasCommand)
    .rejects(new ResourceNotFoundException({ message: 'Alias not found', $metadata: {} }));
  lambda
    .on(InvokeCommand)
    .callsFake(
      async (input: { FunctionName?: string; Qualifier?: string; Payload?: Uint8Array }) => {
        const handler = resolve(input);
        const event = JSON.parse(Buffer.from(input.Payload!).toString()) as unknown;
        const started = performance.now();
        const record = (status: number | undefined, failed: boolean) =>
          invocations.push({
            functionName: input.FunctionName!,
            version: input.Qualifier!,
            event,
            ...(status !== undefined ? { status } : {}),
            failed,
            durationMs: performance.now() - started,
          });
        try {
          const result = await invokeBuffered(
            handler,
            event,
            context(input.FunctionName!, input.Qualifier!),
          );
          const status = (result as { statusCode?: number } | null)?.statusCode;
          record(status, false);
          return { StatusCode: 200, Payload: Buffer.from(JSON.stringify(result)) };
        } catch (error) {
          record(undefined, true);
          return {
            StatusCode: 200,
            FunctionError: 'Unhandled',
            Payload: Buffer.from(JSON.stringify({ errorMessage: (error as Error).message })),
          };
        }
      },
    );
  lambda
    .on(InvokeWithResponseStreamCommand)
    .callsFake(
      async (input: { FunctionName?: string; Qualifier?: string; Payload?: Uint8Array }) => {
        const handler = resolve(input);
        const event = JSON.parse(Buffer.from(input.Payload!).toString()) as unknown;
        const started = performance.now();
        if (!isStreamingHandler(handler)) {
          // A crash at init: the module failed to load, nothing answers.
          invocations.push({
            functionName: input.FunctionName!,
            version: input.Qualifier!,
            event,
            failed: true,
            durationMs: 0,
          });
          const failed: InvokeWithResponseStreamResponseEvent[] = [
            { InvokeComplete: { ErrorCode: 'Runtime.ImportModuleError', ErrorDetails: 'init' } },
          ];
          return { StatusCode: 200, EventStream: asyncIterable(failed) };
        }
        const streamed = await invokeStreaming(
          handler,
          event,
          context(input.FunctionName!, input.Qualifier!),
        );
        let recorded = false;
        const record = (failed: boolean) => {
          if (recorded) return;
          recorded = true;
          invocations.push({
            functionName: input.FunctionName!,
            version: input.Qualifier!,
            event,
            ...(streamed.prelude?.statusCode !== undefined
              ? { status: streamed.prelude.statusCode }
              : {}),
            failed,
            durationMs: performance.now() - started,
          });
        };
        async function* events(): AsyncGenerator<InvokeWithResponseStreamResponseEvent> {
          // What Lambda streams: the HTTP prelude and its 8 NUL bytes, then the body.
          const prelude = Buffer.from(JSON.stringify(streamed.prelude ?? {}));
          yield { PayloadChunk: { Payload: Buffer.concat([prelude, Buffer.alloc(8)]) } };
          try {
            for await (const chunk of streamed.body) {
              yield { PayloadChunk: { Payload: Buffer.from(chunk as Buffer) } };
            }
            await streamed.done;
            record(false);
            yield { InvokeComplete: {} };
          } catch (error) {
            record(true);
            yield { InvokeComplete: { ErrorCode: 'Unhandled', ErrorDetails: String(error) } };
          } finally {
            record(false);
          }
        }
        return { StatusCode: 200, EventStream: events() };
      },
    );
  return invocations;
}

/** A deployment as the stand-in CodeDeploy knows it. */
export interface StandInDeployment {
  readonly group: FunctionName;
  status?: string;
  readonly createdAt: number;
  readonly currentVersion: string;
  readonly targetVersion: string;
  /** Each lifecycle event's status (InProgress while its hook runs). */
  readonly hooks: Record<'BeforeAllowTraffic' | 'AfterAllowTraffic', string>;
}

/**
 * The stand-in CodeDeploy: deployments by id, their targets and lifecycle events as the test
 * sets them (a verdict is recorded by the stub's calls, verdictsOf; it changes no event).
 */
function standInCodeDeploy(
  codeDeploy: AwsStub<CodeDeployInput, CodeDeployOutput, CodeDeployClientResolvedConfig>,
  deployments: Map<string, StandInDeployment>,
): void {
  const known = (id: string | undefined) => {
    const deployment = deployments.get(id ?? '');
    if (!deployment)
      throw Object.assign(new Error('no deployment'), { name: 'DeploymentDoesNotExistException' });
    return deployment;
  };
  codeDeploy.on(GetDeploymentCommand).callsFake((input: { deploymentId?: string }) => {
    const d = known(input.deploymentId);
    return {
      deploymentInfo: {
        deploymentId: input.deploymentId,
        deploymentGroupName: d.group,
        status: d.status ?? 'InProgress',
        createTime: new Date(d.createdAt),
      },
    };
  });
  codeDeploy.on(ListDeploymentTargetsCommand).callsFake((input: { deploymentId?: string }) => {
    known(input.deploymentId);
    return { targetIds: [`target-${input.deploymentId}`] };
  });
  codeDeploy
    .on(GetDeploymentTargetCommand)
    .callsFake((input: { deploymentId?: string; targetId?: string }) => {
      const d = known(input.deploymentId);
      if (input.targetId !== `target-${input.deploymentId}`) throw new Error('no such target');
      return {
        deploymentTarget: {
          deploymentTargetType: 'LambdaTarget',
          lambdaTarget: {
            deploymentId: input.deploymentId,
            targetId: input.targetId,
            lambdaFunctionInfo: {
              functionName: `fn-${d.group}`,
              functionAlias: 'live',
              currentVersion: d.currentVersion,
              targetVersion: d.targetVersion,
            },
            lifecycleEvents: Object.entries(d.hooks).map(([lifecycleEventName, status]) => ({
              lifecycleEventName,
              status,
            })),
          },
        },
      };
    });
}

/** The verdicts the hooks gave CodeDeploy, in order. */
export function verdictsOf(codeDeploy: Stub): HookVerdict[] {
  return codeDeploy
    .commandCalls(PutLifecycleEventHookExecutionStatusCommand)
    .map((call) => (call.args[0].input as { status: HookVerdict }).status);
}

/**
 * The logger's JSON lines written to stdout and stderr while `work` runs, parsed (other output is
 * left out). Both stay silenced after it: the test's restoreAllMocks gives them back.
 */
export async function capturedLines(
  work: () => Promise<unknown>,
): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const capture = (text: unknown) => {
    for (const line of String(text).split('\n').filter(Boolean)) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a line of the service's logger.
      }
    }
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await work();
  } finally {
    out.mockReturnValue(true);
    err.mockReturnValue(true);
  }
  return lines;
}

/**
 * Whether a deployed metric filter pattern of `{ ($.a = 1) && ($.b NOT EXISTS) }` terms matches
 * a JSON line, as CloudWatch Logs applies it (what the deploy judges' metric filters count).
 */
export function matchesFilter(pattern: string, line: Record<string, unknown>): boolean {
  const terms = [...pattern.matchAll(/\(\$\.([\w.]+) (=|NOT EXISTS)\s*([^)]*)\)/g)];
  if (terms.length === 0) throw new Error(`a pattern of no terms this reads: ${pattern}`);
  return terms.every(([, path, op, value]) => {
    const found = path!
      .split('.')
      .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], line);
    if (op === 'NOT EXISTS') return found === undefined;
    const expected = value!.trim();
    return expected.startsWith('"') ? found === JSON.parse(expected) : found === Number(expected);
  });
}

/**
 * Stubs of the five clients the hooks call, one a client class: a test file makes them once
 * (aws-sdk-client-mock stubs the class, so every client of it the hooks make is answered).
 */
export function stubHookClients() {
  return {
    lambda: mockClient(LambdaClient),
    codeDeploy: mockClient(CodeDeployClient),
    autoScaling: mockClient(ApplicationAutoScalingClient),
    cloudWatch: mockClient(CloudWatchClient),
    cloudFormation: mockClient(CloudFormationClient),
  };
}

/** The five clients the hooks are given (answered by the stubs above). */
export function hookClients() {
  return {
    codeDeploy: new CodeDeployClient({}),
    lambda: new LambdaClient({}),
    autoScaling: new ApplicationAutoScalingClient({}),
    cloudWatch: new CloudWatchClient({}),
    cloudFormation: new CloudFormationClient({}),
  };
}

/**
 * What every hook run needs answered: CodeDeploy's deployments (`deployments`) and the verdict,
 * and scaling's registration.
 */
export function answerHookCalls(
  stubs: ReturnType<typeof stubHookClients>,
  deployments: Map<string, StandInDeployment>,
): void {
  standInCodeDeploy(stubs.codeDeploy, deployments);
  stubs.codeDeploy.on(PutLifecycleEventHookExecutionStatusCommand).resolves({});
  stubs.autoScaling.on(RegisterScalableTargetCommand).resolves({});
}

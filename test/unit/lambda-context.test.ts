/**
 * The context the local Lambda runtime hands a handler: each of the service's functions gets the
 * memory setting lib/functions.ts deploys it with — created directly, run in-process by the
 * emulator, and in a container of `npm start`.
 */
import { describe, expect, it } from 'vitest';
import { FUNCTION_NAMES, FUNCTIONS } from '../../lib/functions.ts';
import { ContainerPool } from '../../local/container-pool.ts';
import { inProcessInvoker, type Invoker } from '../../local/invoker.ts';
import { createContext, type LambdaContext } from '../../local/lambda-runtime.ts';
import { standInModule } from '../support/stand-in-module.ts';

/** What each function's handler reported as its memory, run through `invoker`. */
async function reportedMemory(invoker: Invoker): Promise<Record<string, unknown>> {
  const reported: Record<string, unknown> = {};
  for (const name of FUNCTION_NAMES) {
    const invocation = await invoker.invoke(name, {}, { timeoutMs: 10_000 });
    reported[name] = invocation.kind === 'returned' ? invocation.result : invocation;
  }
  return reported;
}

const DEPLOYED = Object.fromEntries(
  FUNCTION_NAMES.map((name) => [name, String(FUNCTIONS[name].memoryMb)]),
);

describe('a function’s context', () => {
  it.each(FUNCTION_NAMES)(
    'gives %s the memory setting lib/functions.ts deploys it with',
    (name) => {
      expect(createContext(name).memoryLimitInMB).toBe(String(FUNCTIONS[name].memoryMb));
    },
  );

  it('gives a stand-in handler, run under a name of its own, Lambda’s default of 128 MB', () => {
    expect(createContext('test').memoryLimitInMB).toBe('128');
  });

  it('is what each handler gets when the emulator runs it in-process', async () => {
    const reportMemory = (_event: unknown, context: LambdaContext) =>
      Promise.resolve(context.memoryLimitInMB);
    const handlers = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, reportMemory]));
    expect(await reportedMemory(inProcessInvoker(handlers))).toEqual(DEPLOYED);
  });

  it('is what each handler gets in a container of npm start', async () => {
    const reportMemory = standInModule(
      'export const handler = async (_event, context) => context.memoryLimitInMB;',
    );
    const entries = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, reportMemory.path]));
    const pool = new ContainerPool({
      env: {},
      entries,
      maxContainers: 1,
    });
    try {
      expect(await reportedMemory(pool)).toEqual(DEPLOYED);
    } finally {
      await pool.close();
      reportMemory.remove();
    }
  });
});

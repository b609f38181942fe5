/**
 * The confirmation that guards production: a command that changes production data asks on
 * stderr and reads the answer from stdin when stdin is a terminal; without a terminal it needs
 * `--yes`. Production is `--stage production`, and also any production table named explicitly
 * (`--table-orders Production-Data-…`: see isProductionTarget). Other targets are not asked.
 */
import { createInterface } from 'node:readline';
import { isProductionTarget } from '../lib/deployment.ts';
import { Failure, type Io } from './common.ts';
import type { Target } from './target.ts';

/** Resolves when the change may go ahead; throws Failure (nothing changed) otherwise. */
export async function confirmChange(
  target: Target,
  action: string,
  yes: boolean | undefined,
  io: Pick<Io, 'stdin' | 'stderr'>,
): Promise<void> {
  const tableNames = Object.values(target.tables).filter((name) => name !== undefined);
  if (!isProductionTarget(target.stage, tableNames) || yes) return;
  if (!io.stdin.isTTY) {
    throw new Failure(
      `refusing to ${action} on PRODUCTION without confirmation: stdin is not a terminal, pass --yes`,
    );
  }
  const prompt = createInterface({ input: io.stdin, output: io.stderr, terminal: false });
  try {
    io.stderr.write(`${action.charAt(0).toUpperCase()}${action.slice(1)} on PRODUCTION? [y/N] `);
    const answer = await new Promise<string>((resolve) => {
      prompt.once('line', resolve);
      prompt.once('close', () => resolve(''));
    });
    if (!/^(y|yes)$/i.test(answer.trim())) throw new Failure('not confirmed: nothing was changed');
  } finally {
    prompt.close();
  }
}

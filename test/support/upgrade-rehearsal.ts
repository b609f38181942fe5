/**
 * What the rehearsal of the upgrade from release 1.0.0 runs on (test/e2e/upgrade-from-1.0.0.test.ts):
 *
 * - the release itself: its commit's files (`git archive`) under .local/, synthesized by its own
 *   infra with the pinned CDK CLI, so that its bundles and template are what 1.0.0 deployed;
 * - this code's templates at each step of docs/upgrade-from-1.0.0.md, synthesized in-process
 *   without bundling (the bundles are one full synth's: the same code at every step);
 * - a SwitchingInvoker: each function's invocations go to the versions deployed, by weight, as
 *   while CloudFormation changes a function's code or CodeDeploy shifts its alias;
 * - the clients: pollers that hold ETags, walkers of v2's pages, a canceller, each record kept so
 *   that wrong 304s, missed or repeated orders and 5xx can be counted.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FunctionName } from '../../lib/functions.ts';
import { LOCAL_REGION } from '../../lib/dynamodb/client.ts';
import type { ContainerPool } from '../../local/container-pool.ts';
import type { Invocation, InvokeOptions, Invoker } from '../../local/invoker.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { readTemplateStage, type TemplateStage } from '../../local/stage-template.ts';
import { synthesize } from '../../local/synth.ts';
import { synthesizeTemplates } from './assembly.ts';
import { seededRandom } from './seeded-random.ts';

/** Release 1.0.0: CHANGELOG.md's one release. */
export const RELEASE_1_0_0 = '4902492c58419576970d2b0fcd0356b2bbfb7a34';

/** The release's files, extracted from git under .local/ (its modules find this project's node_modules). */
export function extractRelease(commit: string = RELEASE_1_0_0): string {
  const dir = join(PROJECT_ROOT, '.local', `release-${commit.slice(0, 7)}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const archive = execFileSync('git', ['archive', commit], {
      cwd: PROJECT_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
  } catch (error) {
    throw new Error(
      `release ${commit.slice(0, 7)} is not in this clone's history (${(error as Error).message.split('\n')[0]}): the upgrade rehearsal needs it`,
      { cause: error },
    );
  }
  return dir;
}

/** The release, synthesized by its own code (its cdk.json, its bundles). */
export async function synthesizeRelease(releaseDir: string, outDir: string): Promise<string> {
  return synthesize({ outDir, projectDir: releaseDir });
}

/**
 * This code's production stage at each of these settings (`production:<key>` values), its
 * templates synthesized without bundling, read with the bundles of a full synth of the same code.
 */
export async function stepStages(
  steps: readonly Readonly<Record<string, unknown>>[],
  outDir: string,
  bundles: Readonly<Partial<Record<FunctionName, string>>>,
  tablePrefix: string,
): Promise<TemplateStage[]> {
  const requests = steps.map((settings, i) => ({
    kind: 'production' as const,
    settings,
    outDir: join(outDir, `step-${i + 1}`),
  }));
  await synthesizeTemplates(requests);
  return requests.map((r) =>
    readTemplateStage(r.outDir, 'production', { tablePrefix, region: LOCAL_REGION, bundles }),
  );
}

/** Which version serves a function's invocations: labels with weights (summing to 1). */
export type Weights = Readonly<Record<string, number>>;

/**
 * An Invoker over several deployed versions (a container pool each): each invocation of a
 * function goes to one of the versions its weights name, drawn at random (seeded), as Lambda
 * serves a function whose code is being updated, or an alias CodeDeploy is shifting.
 */
export class SwitchingInvoker implements Invoker {
  private readonly pools = new Map<string, ContainerPool>();
  private readonly weights = new Map<FunctionName, Weights>();
  private readonly random: (n: number) => number;
  /** Invocations per function and version. */
  readonly served: Record<string, number> = {};

  constructor(seed: number) {
    this.random = seededRandom(seed);
  }

  deploy(label: string, pool: ContainerPool): void {
    this.pools.set(label, pool);
  }

  /** Takes a version out of service once what it serves has ended. */
  async retire(label: string): Promise<void> {
    const pool = this.pools.get(label);
    this.pools.delete(label);
    await pool?.drain();
  }

  route(fn: FunctionName, weights: Weights): void {
    this.weights.set(fn, weights);
  }

  invoke(name: FunctionName, event: unknown, options: InvokeOptions): Promise<Invocation> {
    const weights = Object.entries(this.weights.get(name) ?? {});
    let draw = this.random(1_000_000) / 1_000_000;
    const [label] = weights.find(([, w]) => (draw -= w) < 0) ?? weights.at(-1) ?? [];
    const pool = label === undefined ? undefined : this.pools.get(label);
    if (!pool) return Promise.resolve({ kind: 'failed', message: `no version of ${name}` });
    this.served[`${name}@${label}`] = (this.served[`${name}@${label}`] ?? 0) + 1;
    return pool.invoke(name, event, options);
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
  }
}

/** One request a client sent, as the record keeps it. */
export interface Sent {
  readonly step: string;
  readonly kind: 'v1' | 'v1-conditional' | 'page' | 'page-conditional' | 'cancel';
  readonly path: string;
  readonly filter?: string;
  readonly status: number;
  /** When it was sent and answered (performance.now()). */
  readonly sent: number;
  readonly answered: number;
  readonly retryAfter?: string;
  readonly body: string;
  readonly etag?: string;
}

/** A cancel the API acknowledged (204), and when. */
export interface Acknowledged {
  readonly id: bigint;
  readonly at: number;
}

/** A walk of v2's pages of one filter: the ids it showed, in order; when it began and ended. */
export interface Walk {
  readonly step: string;
  readonly filter: string;
  readonly ids: readonly bigint[];
  /** How many times an id came (more than once: shown twice). */
  readonly began: number;
  readonly ended: number;
  /** Whether it ended on a documented 503 (the filter's index not ready) before its last page. */
  readonly refused: boolean;
}

/** An order's id and status from a body (v1's array or a v2 page), ids read exact. */
export function ordersIn(body: string): { id: bigint; status?: string; petId?: bigint }[] {
  const found: { id: bigint; status?: string; petId?: bigint }[] = [];
  for (const match of body.matchAll(/\{"id":(-?\d+)(?:,"petId":(-?\d+))?[^}]*?\}/g)) {
    const status = /"status":"(\w+)"/.exec(match[0])?.[1];
    found.push({
      id: BigInt(match[1]!),
      ...(status ? { status } : {}),
      ...(match[2] ? { petId: BigInt(match[2]) } : {}),
    });
  }
  return found;
}

/** Waits `ms`, or less when `stop` ends first. */
export async function pause(ms: number, stop: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal: stop }).catch(() => undefined);
}

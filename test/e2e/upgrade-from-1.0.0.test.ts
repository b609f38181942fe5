/**
 * The upgrade from release 1.0.0, rehearsed (docs/upgrade-from-1.0.0.md): 1.0.0's own code and
 * template (its commit, synthesized by its own infra), started as synthesized with orders and
 * keys made by its own CLI; then every step of the how-to's table in turn, as AWS makes it:
 *
 * - step 1: 1.0.0's functions have no alias, so CloudFormation changes each one's code in place:
 *   the lists (readers) first, then the cancel (the stack orders them), each function served by
 *   both codes for a moment, as while Lambda updates it; then the API (v2 appears); then the
 *   reindex, with this code's CLI;
 * - steps 2 to 6: the orders table gets one index, as CloudFormation adds it (UpdateTable, until
 *   ACTIVE), then each function shifts to the step's version through a canary (10%, then all);
 * - step 7: the settings gone, the stage is a new stage's.
 *
 * All along, clients poll v1's list with If-None-Match (and v2's pages once v2 is served), walk
 * v2's pages of four filters, and cancel orders (through both codes). Afterwards: no wrong 304,
 * no walk that missed an order it had to show or showed one twice, no 5xx but the documented 503
 * of a filter whose index is not ready (Retry-After 60), and the smoke green. The figures of each
 * step are printed; the run's seed too (UPGRADE_SEED repeats it).
 */
import { execFile } from 'node:child_process';
import { UpdateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperatorClient } from '../../lib/dynamodb/client.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb-local.ts';
import { ORDER_INDEX_NAMES } from '../../lib/dynamodb/tables.ts';
import type { FunctionName } from '../../lib/functions.ts';
import { orderToJson, type Order } from '../../lib/orders/order.ts';
import { ContainerPool } from '../../local/container-pool.ts';
import { createGateway, createGatewayServer, type GatewayListener } from '../../local/gateway.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { readTemplateStage, type TemplateStage } from '../../local/stage-template.ts';
import {
  createTemplateTables,
  templateGatewayOptions,
  templateRuntimes,
} from '../../local/synthesized-stage.ts';
import { sharedAssembly } from '../support/assembly.ts';
import { upgradeSteps } from '../support/runbook.ts';
import { seededRandom } from '../support/seeded-random.ts';
import { uniquePrefix } from '../support/tables.ts';
import {
  extractRelease,
  ordersIn,
  pause,
  stepStages,
  SwitchingInvoker,
  synthesizeRelease,
  type Acknowledged,
  type Sent,
  type Walk,
} from '../support/upgrade-rehearsal.ts';

const SEED = Number(process.env.UPGRADE_SEED ?? Date.now() % 1_000_000);
/** How long a function is served by both codes while CloudFormation changes it (step 1). */
const OVERLAP_MS = 1_500;
/** How long a canary serves 10% of a function's invocations (steps 2 to 7; AWS: 5 minutes). */
const CANARY_MS = 2_000;
/** Traffic after each step, before the next. */
const SETTLE_MS = 1_500;
const FUNCTIONS_100: readonly FunctionName[] = ['listOrders', 'cancelOrder', 'authorizer'];
const ALL: readonly FunctionName[] = ['listOrders', 'listOrderPages', 'cancelOrder', 'authorizer'];
const PAGE_SIZE = 25;
const PET = 7n;
const RANGE = { from: '2026-11-10T00:00:00Z', to: '2026-11-20T00:00:00Z' };
/** The four filters walked: the table, and one each of the indexes they need. */
const FILTERS: Readonly<Record<string, { query: string; index?: string }>> = {
  all: { query: '' },
  pending: { query: 'status=pending', index: 'ordersByStatus' },
  pet: { query: `petId=${PET}`, index: 'ordersByPet' },
  dates: { query: `shipDateFrom=${RANGE.from}&shipDateTo=${RANGE.to}`, index: 'ordersByDate' },
};

/** 1.0.0's store: 300 orders of three statuses, a few pets, November's ship dates, int64's ends. */
function releaseOrders(): Order[] {
  const statuses = ['pending', 'pending', 'shipped', 'cancelled'] as const;
  const orders: Order[] = Array.from({ length: 298 }, (_, i) => ({
    id: BigInt(1000 + i * 7),
    petId: BigInt(1 + (i % 9)),
    quantity: 1 + (i % 3),
    shipDate: new Date(Date.UTC(2026, 10, 1 + (i % 29), i % 24)).toISOString().replace('.000', ''),
    complete: i % 4 === 2,
    status: statuses[i % 4]!,
  }));
  orders.push({ id: 9223372036854775807n, petId: PET, status: 'pending' });
  orders.push({ id: -9223372036854775808n, petId: PET, shipDate: '2026-11-15T00:00:00Z' });
  return orders;
}

describe('the upgrade from release 1.0.0, every step of its how-to, under traffic', () => {
  const work = mkdtempSync(join(tmpdir(), 'upgrade-'));
  const prefix = uniquePrefix('upgrade');
  // A DynamoDB Local of its own: the index builds (UpdateTable until ACTIVE) compete with no
  // other file's tables.
  let dynamo: DynamoDbLocal;
  let client: ReturnType<typeof createOperatorClient>;
  const dynamodbEndpoint = () => dynamo.endpoint;
  const invoker = new SwitchingInvoker(SEED);
  const orders = releaseOrders();
  const steps = upgradeSteps();
  let release: TemplateStage;
  let stages: TemplateStage[];
  let releaseDir: string;
  let server: Server;
  let base: string;
  let gateway: GatewayListener | undefined;
  const keys: string[] = [];

  /** A version of the functions, in containers of its own (their log lines kept to errors). */
  const poolOf = (stage: TemplateStage, functions: readonly FunctionName[]) =>
    new ContainerPool({
      env: {},
      runtimes: Object.fromEntries(
        Object.entries(templateRuntimes(stage, dynamodbEndpoint())).map(([fn, runtime]) => [
          fn,
          {
            ...runtime,
            env: { ...runtime.env, LOG_LEVEL: 'ERROR', POWERTOOLS_LOG_LEVEL: 'ERROR' },
          },
        ]),
      ),
      functions,
      maxContainers: 1,
    });
  const useGateway = (stage: TemplateStage) => {
    gateway = createGateway({ invoker, ...templateGatewayOptions(stage) });
  };
  /** A CLI of release 1.0.0 (in its checkout) or of this code, on the rehearsal's tables. */
  const cli = async (dir: string, args: readonly string[]) => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(dir, 'admin', 'cli.ts'), ...args],
      { cwd: dir, env: { ...process.env, LOG_LEVEL: 'ERROR' } },
    );
    return stdout;
  };

  beforeAll(async () => {
    console.log(`upgrade rehearsal: seed ${SEED} (UPGRADE_SEED=${SEED} repeats its choices)`);
    dynamo = await startDynamoDbLocal({ quickStart: true });
    client = createOperatorClient({ endpoint: dynamo.endpoint });
    const started = performance.now();
    const progress = (what: string) =>
      console.log(
        `upgrade rehearsal: ${what} (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
    releaseDir = extractRelease();
    const releaseAssembly = await synthesizeRelease(releaseDir, join(work, 'release.out'));
    progress('release 1.0.0 synthesized');
    release = readTemplateStage(releaseAssembly, 'production', {
      tablePrefix: prefix,
      region: 'local',
    });
    const bundles = readTemplateStage(await sharedAssembly(), 'production', {
      tablePrefix: prefix,
      region: 'local',
    }).functions;
    progress('this code synthesized');
    stages = await stepStages(
      steps.map((step) => step.settings),
      work,
      Object.fromEntries(Object.entries(bundles).map(([fn, f]) => [fn, f.bundle])),
      prefix,
    );
    progress('the steps synthesized');
    // 1.0.0's stage, as it was deployed: its tables, its keys and orders by its own CLI.
    const { names } = await createTemplateTables(client, release, prefix);
    const target = ['--endpoint', dynamodbEndpoint(), '--region', 'local'];
    for (let i = 0; i < 1; i++) {
      const created = await cli(releaseDir, [
        'keys',
        'create',
        '--plan',
        'enterprise',
        '--per-minute',
        '100000',
        '--per-day',
        '10000000',
        '--json',
        '--table-keys',
        names.apiKeys,
        ...target,
      ]);
      keys.push((JSON.parse(created) as { key: string }).key);
    }
    writeFileSync(join(work, 'orders.json'), `[${orders.map((o) => orderToJson(o)).join(',\n')}]`);
    await cli(releaseDir, [
      'orders',
      'import',
      join(work, 'orders.json'),
      '--table-orders',
      names.orders,
      ...target,
      '--yes',
    ]);
    progress("1.0.0's key and orders made by its CLI");
    const releasePool = poolOf(release, FUNCTIONS_100);
    await releasePool.prewarm();
    invoker.deploy('1.0.0', releasePool);
    for (const fn of FUNCTIONS_100) invoker.route(fn, { '1.0.0': 1 });
    useGateway(release);
    server = createGatewayServer(() => gateway);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    progress('1.0.0 serving');
  }, 400_000);

  afterAll(async () => {
    server?.close();
    await invoker.close();
    client?.destroy();
    await dynamo?.stop();
    rmSync(work, { recursive: true, force: true });
    if (releaseDir) rmSync(releaseDir, { recursive: true, force: true });
  });

  it('keeps every table of 1.0.0 in place: the same logical ids and keys at every step', () => {
    for (const stage of stages) {
      for (const table of ['orders', 'apiKeys', 'rateLimits'] as const) {
        expect(stage.tables[table].logicalId).toBe(release.tables[table].logicalId);
        expect(stage.tables[table].keySchema).toEqual(release.tables[table].keySchema);
      }
    }
    expect(release.tables.orders.globalSecondaryIndexes).toEqual([]);
    expect(Object.keys(release.functions).sort()).toEqual([...FUNCTIONS_100].sort());
    expect(Object.keys(release.apiStages)).toEqual(['v1']);
  });

  it('serves every client through every step: no wrong 304, no walk that misses or repeats an order, no 5xx but the documented 503', async () => {
    const stop = new AbortController();
    const records: Sent[] = [];
    const acknowledged: Acknowledged[] = [];
    const walks: Walk[] = [];
    const random = seededRandom(SEED);
    let step = 'release';
    /** The functions each step published a new version of. */
    const newVersions = new Map<string, readonly FunctionName[]>();
    let v2 = false;
    /** When each index was served by every function (deployed, ACTIVE, the canary over). */
    const readyAt = new Map<string, number>();
    /**
     * When an index was being created (UpdateTable until ACTIVE): DynamoDB Local refuses writes to
     * the table then (InternalFailure), where DynamoDB takes them (docs/local.md).
     */
    const creating: { from: number; to: number }[] = [];

    const send = async (
      kind: Sent['kind'],
      path: string,
      key: string,
      options: { method?: string; ifNoneMatch?: string; filter?: string } = {},
    ): Promise<Sent> => {
      const sent = performance.now();
      let response: Response;
      let body: string;
      try {
        response = await fetch(`${base}${path}`, {
          method: options.method ?? 'GET',
          headers: {
            Authorization: `Bearer ${key}`,
            ...(options.ifNoneMatch ? { 'If-None-Match': options.ifNoneMatch } : {}),
          },
          signal: AbortSignal.timeout(30_000),
        });
        body = await response.text();
      } catch (error) {
        // No answer at all (status 0): a failure as much as a 5xx.
        const record: Sent = {
          step,
          kind,
          path,
          status: 0,
          sent,
          answered: performance.now(),
          body: String(error),
        };
        records.push(record);
        return record;
      }
      const record: Sent = {
        step,
        kind,
        path,
        status: response.status,
        sent,
        answered: performance.now(),
        body,
        ...(options.filter !== undefined ? { filter: options.filter } : {}),
        ...(response.headers.get('retry-after')
          ? { retryAfter: response.headers.get('retry-after')! }
          : {}),
        ...(response.headers.get('etag') ? { etag: response.headers.get('etag')! } : {}),
      };
      records.push(record);
      return record;
    };

    /** A client that holds what it was last given and asks again with its tag. */
    const poll = async (version: 'v1' | 'v2', key: string) => {
      let held: { tag: string; body: string } | undefined;
      const path = version === 'v1' ? '/v1/store/orders' : `/v2/store/orders?pageSize=${PAGE_SIZE}`;
      while (!stop.signal.aborted) {
        if (version === 'v2' && !v2) {
          await pause(200, stop.signal);
          continue;
        }
        const conditional = held !== undefined;
        const kind = version === 'v1' ? 'v1' : 'page';
        const answer = await send(conditional ? `${kind}-conditional` : kind, path, key, {
          ...(held ? { ifNoneMatch: held.tag } : {}),
        });
        if (answer.status === 304) {
          heldBodies.set(answer, held!.body);
        } else if (answer.status === 200) {
          held = answer.etag ? { tag: answer.etag, body: answer.body } : undefined;
        }
        await pause(100 + random(200), stop.signal);
      }
    };
    const heldBodies = new Map<Sent, string>();

    /** A walk of one filter's pages, from its first to its last. */
    const walk = async (filter: string, key: string) => {
      while (!stop.signal.aborted) {
        if (!v2) {
          await pause(200, stop.signal);
          continue;
        }
        const began = performance.now();
        const ids: bigint[] = [];
        let next: string | undefined =
          `/v2/store/orders?pageSize=${PAGE_SIZE}${FILTERS[filter]!.query ? `&${FILTERS[filter]!.query}` : ''}`;
        let refused = false;
        const walkStep = step;
        while (next && !stop.signal.aborted) {
          const answer = await send('page', next, key, { filter });
          // A transient 503 (Retry-After 1: DynamoDB Local slow on a loaded machine) is sent
          // again after its Retry-After, as the contract asks of a client; the walk goes on.
          if (answer.status === 503 && answer.retryAfter !== '60') {
            await pause(Number(answer.retryAfter ?? 1) * 1000, stop.signal);
            continue;
          }
          if (answer.status !== 200) {
            refused = true;
            break;
          }
          ids.push(...ordersIn(answer.body).map((o) => o.id));
          const token = /"nextPageToken":"([^"]+)"/.exec(answer.body)?.[1];
          const query = FILTERS[filter]!.query;
          next = token
            ? `/v2/store/orders?pageSize=${PAGE_SIZE}${query ? `&${query}` : ''}&pageToken=${token}`
            : undefined;
        }
        if (!stop.signal.aborted) {
          walks.push({ step: walkStep, filter, ids, began, ended: performance.now(), refused });
        }
        await pause(refused ? 500 : 100 + random(300), stop.signal);
      }
    };

    /** Cancels a pending order now and then, through v1 and, once served, v2. */
    const pendingIds = orders.filter((o) => o.status === 'pending').map((o) => o.id);
    const cancel = async (key: string) => {
      while (!stop.signal.aborted && pendingIds.length > 0) {
        const [id] = pendingIds.splice(random(pendingIds.length), 1);
        const version = v2 && random(2) === 0 ? 'v2' : 'v1';
        // A 503 is sent again after its Retry-After, as the contract asks of a client.
        for (let attempt = 0; attempt < 5 && !stop.signal.aborted; attempt++) {
          const answer = await send('cancel', `/${version}/store/orders/${id}`, key, {
            method: 'DELETE',
          });
          if (answer.status === 204) acknowledged.push({ id: id!, at: performance.now() });
          if (answer.status !== 503) break;
          await pause(Number(answer.retryAfter ?? 1) * 1000, stop.signal);
        }
        await pause(150 + random(200), stop.signal);
      }
    };

    const key = keys[0]!;
    const clients = [
      poll('v1', key),
      poll('v1', key),
      poll('v2', key),
      cancel(key),
      ...Object.keys(FILTERS).map((filter) => walk(filter, key)),
    ];

    /** Moves functions to a version: both serve them for `ms`, `share` of calls the new one. */
    const shift = async (
      fns: readonly FunctionName[],
      from: string | undefined,
      to: string,
      share: number,
      ms: number,
    ) => {
      for (const fn of fns) {
        invoker.route(fn, from === undefined ? { [to]: 1 } : { [from]: 1 - share, [to]: share });
      }
      await pause(ms, stop.signal);
      for (const fn of fns) invoker.route(fn, { [to]: 1 });
    };
    const settle = () => pause(SETTLE_MS, stop.signal);
    /** Which version serves each function, and the versions still serving one. */
    const serving = new Map<FunctionName, string>();
    const deployed = new Set<string>();

    try {
      await upgrade();
    } finally {
      stop.abort();
      await Promise.all(clients);
    }

    async function upgrade(): Promise<void> {
      await settle();
      // Step 1: this code's functions, readers first (the stack orders them), each served by both
      // codes for a moment; then the API, v2 with it; then the reindex.
      step = 'step 1';
      const first = poolOf(stages[0]!, ALL);
      await first.prewarm();
      invoker.deploy('1', first);
      await shift(['listOrders', 'authorizer'], '1.0.0', '1', 0.5, OVERLAP_MS);
      invoker.route('listOrderPages', { '1': 1 });
      await shift(['cancelOrder'], '1.0.0', '1', 0.5, OVERLAP_MS);
      useGateway(stages[0]!);
      v2 = true;
      await settle();
      await invoker.retire('1.0.0');
      for (const fn of ALL) serving.set(fn, '1');
      deployed.add('1');
      step = 'reindex';
      const reindexed = await cli(PROJECT_ROOT, [
        'orders',
        'reindex',
        '--endpoint',
        dynamodbEndpoint(),
        '--region',
        'local',
        '--table-orders',
        `${prefix}-${release.tables.orders.logicalId}`,
        '--yes',
      ]);
      expect(reindexed).toMatch(/the indexes are marked ready/);
      await settle();

      // Steps 2 to 7: an index added as CloudFormation adds it (until ACTIVE), then a canary.
      const table = `${prefix}-${release.tables.orders.logicalId}`;
      for (let i = 1; i < stages.length; i++) {
        step = `step ${i + 1}`;
        const had = new Set(
          stages[i - 1]!.tables.orders.globalSecondaryIndexes.map((x) => x.IndexName),
        );
        const added = stages[i]!.tables.orders.globalSecondaryIndexes.filter(
          (index) => !had.has(index.IndexName),
        );
        for (const index of added) {
          const from = performance.now();
          await client.send(
            new UpdateTableCommand({
              TableName: table,
              AttributeDefinitions: [...stages[i]!.tables.orders.attributeDefinitions],
              GlobalSecondaryIndexUpdates: [{ Create: index }],
            }),
          );
          for (let status = ''; status !== 'ACTIVE'; await pause(100, stop.signal)) {
            const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
            status =
              Table?.GlobalSecondaryIndexes?.find((x) => x.IndexName === index.IndexName)
                ?.IndexStatus ?? '';
          }
          creating.push({ from, to: performance.now() });
        }
        // A new version only of the functions whose template changed (code or configuration):
        // Lambda publishes no other, and CodeDeploy shifts only those.
        const label = String(i + 1);
        const before = templateRuntimes(stages[i - 1]!, dynamodbEndpoint());
        const after = templateRuntimes(stages[i]!, dynamodbEndpoint());
        const changed = ALL.filter(
          (fn) => JSON.stringify(before[fn]) !== JSON.stringify(after[fn]),
        );
        newVersions.set(step, changed);
        if (changed.length > 0) {
          const pool = poolOf(stages[i]!, changed);
          await pool.prewarm();
          invoker.deploy(label, pool);
          const from = [...new Set(changed.map((fn) => serving.get(fn)!))];
          await Promise.all(
            from.map((old) =>
              shift(
                changed.filter((fn) => serving.get(fn) === old),
                old,
                label,
                0.1,
                CANARY_MS,
              ),
            ),
          );
          for (const fn of changed) serving.set(fn, label);
        }
        for (const index of added) readyAt.set(index.IndexName!, performance.now());
        useGateway(stages[i]!);
        await settle();
        // A version no function is served by any more is drained.
        for (const old of deployed) {
          if ([...serving.values()].includes(old)) continue;
          deployed.delete(old);
          await invoker.retire(old);
        }
        if (changed.length > 0) deployed.add(label);
      }
      step = 'after';
      await settle();
    }

    // ── The verdicts ───────────────────────────────────────────────────────────────────────
    const cancelledBefore = (id: bigint, at: number) =>
      acknowledged.some((a) => a.id === id && a.at < at);
    // A 304 confirms a body that shows an order pending after its cancel was acknowledged.
    const wrong304 = records.filter(
      (r) =>
        r.status === 304 &&
        ordersIn(heldBodies.get(r) ?? '').some(
          (o) => o.status === 'pending' && cancelledBefore(o.id, r.sent),
        ),
    );
    const initially = new Map(orders.map((o) => [o.id, o]));
    const expected = (w: Walk) => {
      const must = new Set<bigint>();
      const mustNot = new Set<bigint>();
      for (const order of orders) {
        const at = Date.parse(order.shipDate ?? '');
        const match =
          w.filter === 'all' ||
          (w.filter === 'pet' && order.petId === PET) ||
          (w.filter === 'dates' && at >= Date.parse(RANGE.from) && at < Date.parse(RANGE.to)) ||
          (w.filter === 'pending' && (order.status ?? 'pending') === 'pending');
        if (!match) continue;
        // A cancel acknowledged before the walk began takes the order out of it; one sent
        // before it ended may have landed before the page that would show it.
        const cancelAt = acknowledged.find((a) => a.id === order.id)?.at;
        const cancelSent = records.find(
          (r) => r.kind === 'cancel' && r.path.endsWith(`/${order.id}`),
        )?.sent;
        if (w.filter === 'pending' && cancelAt !== undefined && cancelAt < w.began) {
          mustNot.add(order.id);
        } else if (w.filter !== 'pending' || cancelSent === undefined || cancelSent > w.ended) {
          must.add(order.id);
        }
      }
      return { must, mustNot };
    };
    const walkFaults = walks
      .filter((w) => !w.refused)
      .map((w) => {
        const { must, mustNot } = expected(w);
        const shown = new Set(w.ids);
        return {
          w,
          missed: [...must].filter((id) => !shown.has(id)),
          twice: w.ids.length - shown.size,
          wrong: w.ids.filter((id) => mustNot.has(id) || !initially.has(id)),
        };
      })
      .filter((f) => f.missed.length > 0 || f.twice > 0 || f.wrong.length > 0);
    /** A 503 of a filter whose index was not served by every function yet, as documented. */
    const documented503 = (r: Sent) => {
      const index = r.filter === undefined ? undefined : FILTERS[r.filter]!.index;
      return (
        r.status === 503 &&
        r.kind === 'page' &&
        r.retryAfter === '60' &&
        index !== undefined &&
        !((readyAt.get(index) ?? Infinity) <= r.sent)
      );
    };
    /** A cancel's 503 while DynamoDB Local refused the table's writes (an index being created). */
    const localBackfill = (r: Sent) =>
      r.status === 503 &&
      r.kind === 'cancel' &&
      creating.some((window) => r.sent < window.to && r.answered > window.from);
    /**
     * A 503 of a dependency's time budget (Retry-After 1), which a loaded machine's DynamoDB
     * Local can cause in any test: sent again by its client; allowed while rare (below).
     */
    const transient503 = (r: Sent) =>
      r.status === 503 && r.retryAfter !== '60' && !localBackfill(r);
    const server5xx = records.filter(
      (r) =>
        (r.status >= 500 || r.status === 0) &&
        !documented503(r) &&
        !localBackfill(r) &&
        !transient503(r),
    );

    // The figures of each step.
    const byStep = new Map<string, Sent[]>();
    for (const r of records) byStep.set(r.step, [...(byStep.get(r.step) ?? []), r]);
    const lines = [...byStep].map(([name, rs]) => {
      const n = (f: (r: Sent) => boolean) => rs.filter(f).length;
      const stepWalks = walks.filter((w) => w.step === name);
      const published = newVersions.has(name)
        ? ` [new versions: ${newVersions.get(name)!.join(', ') || 'none'}]`
        : '';
      return `${name.padEnd(8)}${published} requests ${String(rs.length).padStart(4)}, 304s ${String(n((r) => r.status === 304)).padStart(3)} (wrong ${n((r) => wrong304.includes(r))}), walks ${stepWalks.filter((w) => !w.refused).length} whole + ${stepWalks.filter((w) => w.refused).length} refused, cancels ${n((r) => r.kind === 'cancel' && r.status === 204)}, 503 documented ${n(documented503)}, 503 of DynamoDB Local's index creation ${n(localBackfill)}, transient 503 ${n(transient503)}, other 5xx ${n((r) => server5xx.includes(r))}`;
    });
    console.log(
      `upgrade rehearsal (seed ${SEED}):\n${lines.join('\n')}\nserved: ${JSON.stringify(invoker.served)}`,
    );

    expect(wrong304.map((r) => `${r.step} ${r.kind}`)).toEqual([]);
    // Step 2 reads the list's version again (listVersionItems "4/0" → 4): every function that
    // keeps it changes; otherwise an index added, or the reindex wait removed, changes only the
    // function that reads the indexes.
    expect(Object.fromEntries(newVersions)).toEqual({
      'step 2': ['listOrders', 'listOrderPages', 'cancelOrder'],
      ...Object.fromEntries([3, 4, 5, 6, 7].map((n) => [`step ${n}`, ['listOrderPages']])),
    });
    expect(
      walkFaults.map(
        (f) =>
          `${f.w.step} ${f.w.filter}: missed ${f.missed.join(',')} twice ${f.twice} wrong ${f.wrong.join(',')}`,
      ),
    ).toEqual([]);
    expect(
      server5xx.map(
        (r) => `${r.step} ${r.kind} ${r.filter ?? ''} ${r.status} ${r.body.slice(0, 100)}`,
      ),
    ).toEqual([]);
    // Every kind of client was served at every step, and every filter once its index was there.
    expect(walks.filter((w) => !w.refused && w.filter === 'dates').length).toBeGreaterThan(0);
    expect(records.filter((r) => r.status === 304).length).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(10);
    expect([...readyAt.keys()].sort()).toEqual([...ORDER_INDEX_NAMES].sort());
    // The upgrade itself makes no dependency slow: transient 503s stay those of a loaded machine.
    expect(records.filter(transient503).length).toBeLessThanOrEqual(records.length / 100);
  }, 300_000);

  it('is a new stage at the end: the smoke passes with a key 1.0.0 issued', async () => {
    // A failed smoke exits 1: its report is the failure's message, not a bare "Command failed".
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(PROJECT_ROOT, 'smoke', 'smoke.ts'), '--base-url', `${base}/v1`, '--api-key', keys[0]!],
      { cwd: PROJECT_ROOT },
    ).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`smoke failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
    });
    expect(stdout).toMatch(/smoke: \d+ passed, 0 failed, 0 skipped$/m);
    expect(stdout).not.toContain('n/a');
  });
});

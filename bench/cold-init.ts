/**
 * `npm run bench:cold-init`: each function's cold start as its first caller feels it, against
 * floors. Every function is bundled as the stack bundles it (infra/constructs BUNDLING: SDK
 * inside), and so are the floors:
 *  - `floor`: the DynamoDB document client, created at load, and one GetItem per invocation;
 *  - `floor: list calls`, `floor: list v2 calls`, `floor: cancel calls`: the same client, and a
 *    bare handler that makes exactly the DynamoDB calls the function makes, invocation by
 *    invocation (recorded from a fresh process: its first invocation's calls, which a cold rate
 *    limiter makes one more of, then its warm one's), each sent as soon as the calls it followed
 *    on the wire are answered. Every function that makes more than one call gets one.
 * Each sample is a fresh Node 24 process (bench/load-bundle.ts) that loads one bundle as Lambda
 * does and invokes it twice with a realistic event against seeded tables: the first answer (load
 * + first invocation, what the first caller waits for) and the warm one; the cold penalty is
 * their difference, and the connections are those the process opened until its first answer.
 * Samples go round the bundles in turn, each round starting with the next one.
 *
 *   npm run bench:cold-init -- --runs 15
 */
import { restProxyEvent } from '../functions/shared/rest-event.ts';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { build, type Plugin } from 'esbuild';
import { BUNDLE_FILE, esbuildOptions } from '../infra/constructs/service-function.ts';
import { tableEnv } from '../lib/dynamodb/client.ts';
import { ordersIndexesEnv } from '../lib/dynamodb/order-indexes.ts';
import { generateApiKey } from '../lib/keys/api-key.ts';
import { PAGE_SIZE_DEFAULT } from '../lib/orders/list-query.ts';
import type { Order } from '../lib/orders/order.ts';
import { PROJECT_ROOT, startLocalStack, type LocalStack } from '../local/local-stack.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { describeWaves, inWaves, replayOrder, type RecordedCall } from './connections.ts';
import type { Invocations, Loaded } from './load-bundle.ts';
import { median, ratioInterval, verdictOn } from './statistics.ts';
import { switchFlag, valueFlag } from '../lib/config/flags.ts';

const SCRIPT = 'bench:cold-init';
const values = benchFlags(
  SCRIPT,
  "Each function's first answer in a fresh process (load + first invocation), its warm answer and cold penalty, against floors.",
  {
    runs: countFlag('fresh processes per bundle', 15),
    'dynamodb-endpoint': valueFlag('URL', 'use this DynamoDB (default: start DynamoDB Local)'),
    primed: switchFlag(
      'also the floor primed at load (its GetItem sent once as it loads, unawaited)',
    ),
    'warm-calls-floor': switchFlag(
      "also each calls floor as it was before: the warm invocation's calls in every invocation",
    ),
    powertools: switchFlag(
      'also each function with Powertools Logger and Metrics in place of its own (functions/shared)',
    ),
  },
);
const RUNS = countOf(SCRIPT, 'runs', values.runs, 15);
/** The goal: no function's cold penalty more than this many times its floor's. */
const GOAL = 1.1;
/** Our own logger and metrics stay only if Powertools costs more than this of a first answer. */
const POWERTOOLS_LIMIT = 0.05;
/**
 * What a new connection adds on AWS that DynamoDB Local does not: TCP and TLS handshakes to
 * DynamoDB's endpoint. Measured from Lambda by Yan Cui (theburningmonk.com, 2019-02, "Lambda
 * optimization tip – enable HTTP keep-alive"): a PutItem averaged 33 ms on a new connection and
 * 10 ms on a kept-alive one. Connections opened together overlap on the wire, so adding one per
 * connection is the upper bound (docs/architecture.md, "Cold starts").
 */
const TLS_HANDSHAKE_MS = 23;

const exec = promisify(execFile);
const LIMITS = { perMinute: 1_000_000, perDay: 1_000_000_000 };
const KEY = generateApiKey();
const CALLER = { principalId: 'key_bench', keyId: 'key_bench', plan: 'enterprise' };
/** The orders the cancels cancel, one after another from this id. */
const FIRST_ORDER = 1_000_001;
/**
 * Pending orders below FIRST_ORDER that no sample cancels: the v2 list's first page of
 * `status=pending` is these, the same full page (and its next page's token) in every sample.
 */
const PAGE_ORDERS = { first: 500_001, count: PAGE_SIZE_DEFAULT };

function pendingOrders(first: number, count: number): Order[] {
  return Array.from({ length: count }, (_, i) => ({
    id: BigInt(first + i),
    petId: BigInt(1000 + i),
    quantity: 1 + (i % 5),
    shipDate: '2026-11-21T10:30:00Z',
    complete: false,
    status: 'pending' as const,
  }));
}

/**
 * A REST proxy event as API Gateway sends it after the authorizer, in the stage of `version`
 * (v1 unless said), with the query's parameters (one value each).
 */
function proxyEvent(
  method: string,
  resource: string,
  path: string,
  options: { orderId?: string; query?: Record<string, string>; version?: 'v1' | 'v2' } = {},
) {
  const { orderId, query, version = 'v1' } = options;
  return restProxyEvent({
    stage: version,
    method,
    resource,
    path,
    pathParameters: orderId === undefined ? null : { orderId },
    headers: { Accept: 'application/json', 'Accept-Encoding': 'gzip, br' },
    query: query ?? null,
    authorizer: {
      ...CALLER,
      perMinute: String(LIMITS.perMinute),
      perDay: String(LIMITS.perDay),
    },
    requestId: 'bench-request',
  });
}

interface Subject {
  readonly name: string;
  /** A function's short name, which names its calls floor (`floor: <short> calls`). */
  readonly short?: string;
  readonly entry: string;
  /** The event of the sample's nth invocation (n = 0, 1, …, counted over the whole run). */
  readonly event: (n: number) => unknown;
  /** The status each answer must have (anything else: the benchmark measured a failure). */
  readonly status: string;
  /** The floor its penalty is compared with; `floor` when absent. */
  floor?: string;
  /** What a floor of calls sends, for the report. */
  calls?: string;
  /** For a variant (`--powertools`): the function it is a variant of. */
  readonly variantOf?: string;
}

const outRoot = mkdtempSync(join(PROJECT_ROOT, 'node_modules', '.cold-init-'));
const lib = (path: string) => JSON.stringify(join(PROJECT_ROOT, 'lib', path));

function writeEntry(name: string, source: string): string {
  const file = join(outRoot, `${name.replace(/\W+/g, '-')}.ts`);
  writeFileSync(file, source);
  return file;
}

/**
 * The floor: the document client at load, one GetItem per invocation. Primed: the same GetItem
 * also sent once as it loads, not awaited (a CommonJS module cannot wait at init), so that the
 * SDK resolves its credentials and endpoint and opens its connection before the first request.
 */
function floorEntry(keysTable: string, primed = false): string {
  return writeEntry(
    primed ? 'floor-primed' : 'floor',
    `import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { connectionFromEnv, createDocumentClient } from ${lib('dynamodb/client.ts')};
const client = createDocumentClient(connectionFromEnv());
const get = () => client.send(new GetCommand({ TableName: ${JSON.stringify(keysTable)}, Key: { keyHash: 'floor' } }));
${primed ? 'get().catch(() => undefined);' : ''}
export const handler = async () => {
  await get();
  return { statusCode: 200 };
};`,
  );
}

/**
 * A bare handler that sends the calls of each invocation again on the floor's client: its first
 * invocation the function's first invocation's calls, every later one the calls of the
 * function's second (warm) one. Each call goes out as soon as the calls it was sent after are
 * answered (connections.ts `replayOrder`), as the function sent it.
 */
function callsFloorEntry(name: string, invocations: readonly (readonly RecordedCall[])[]): string {
  const plans = invocations.map((calls) =>
    replayOrder(calls).map(({ call: { operation, input }, after }) => [operation, input, after]),
  );
  const operations = [...new Set(invocations.flat().map((c) => c.operation))];
  return writeEntry(
    name,
    `import { ${operations.map((o) => `${o}Command`).join(', ')} } from '@aws-sdk/client-dynamodb';
import { connectionFromEnv, createDocumentClient } from ${lib('dynamodb/client.ts')};
const client = createDocumentClient(connectionFromEnv());
const commands = { ${operations.map((o) => `${o}: ${o}Command`).join(', ')} };
const plans = ${JSON.stringify(plans)};
// Sent again, a write's condition may fail: the database answered all the same.
const answered = (error) => {
  if (!/ConditionalCheckFailed|TransactionCanceled/.test(error?.name ?? '')) throw error;
};
let invocation = 0;
export const handler = async () => {
  const plan = plans[Math.min(invocation++, plans.length - 1)];
  const sent = [];
  for (const [op, input, after] of plan) {
    const send = () => client.send(new commands[op](input)).catch(answered);
    sent.push(after.length === 0 ? send() : Promise.all(after.map((i) => sent[i])).then(send));
  }
  await Promise.all(sent);
  return { statusCode: 200 };
};`,
  );
}

const SHARED = join(PROJECT_ROOT, 'functions', 'shared');
const POWERTOOLS: Readonly<Record<string, string>> = {
  [join(SHARED, 'logger.ts')]: join(PROJECT_ROOT, 'bench', 'powertools', 'logger.ts'),
  [join(SHARED, 'metrics.ts')]: join(PROJECT_ROOT, 'bench', 'powertools', 'metrics.ts'),
};

/** Bundles as the stack does; a Powertools variant with its logger and metrics in their place. */
async function bundle(name: string, entry: string, powertools = false): Promise<string> {
  const outfile = join(outRoot, name.replace(/\W+/g, '-'), BUNDLE_FILE);
  const options = esbuildOptions(entry, outfile);
  const swap: Plugin = {
    name: 'powertools',
    setup(esbuild) {
      esbuild.onResolve({ filter: /^\.\.?\/.*\.ts$/ }, ({ path, resolveDir }) => {
        const instead = POWERTOOLS[resolve(resolveDir, path)];
        return instead ? { path: instead } : undefined;
      });
    },
  };
  await build(powertools ? { ...options, plugins: [...(options.plugins ?? []), swap] } : options);
  return outfile;
}

/** The environment of a function on Lambda, with DynamoDB Local as the service's endpoint. */
function lambdaEnvironment(stack: LocalStack): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...tableEnv(stack.tables),
    // The local tables have every index of the v2 list, built and marked ready as they were
    // created (lib/dynamodb/create-table.ts): the stage that has them all.
    ...ordersIndexesEnv(),
    // As on Lambda: region and credentials in the environment, the SDK's default chain reads
    // them; the endpoint is the one override (the SDK's own AWS_ENDPOINT_URL_DYNAMODB).
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_SESSION_TOKEN: 'bench',
    AWS_ENDPOINT_URL_DYNAMODB: stack.endpoint,
    // As production runs: INFO lines and embedded metrics, written to stdout.
    LOG_LEVEL: 'INFO',
    METRICS_DISABLED: 'false',
  };
  delete env.NODE_OPTIONS;
  delete env.DYNAMODB_ENDPOINT;
  return env;
}

let sampleFile = 0;
/** One fresh process: the bundle loaded, then invoked with each event. */
async function sample(
  file: string,
  invocations: Invocations,
  env: NodeJS.ProcessEnv,
): Promise<Loaded> {
  const events = join(outRoot, `events-${sampleFile++}.json`);
  writeFileSync(events, JSON.stringify(invocations));
  const probe = join(PROJECT_ROOT, 'bench', 'load-bundle.ts');
  const { stdout } = await exec(process.execPath, [probe, file, events], {
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout.trimEnd().split('\n').at(-1) ?? '') as Loaded;
}

/** The operations of each invocation, e.g. `BatchGetItem,UpdateItem,Query…|BatchGetItem,…`. */
function callSequence(calls: readonly (readonly RecordedCall[])[]): string {
  return calls.map((invocation) => invocation.map((c) => c.operation).join()).join('|');
}

/**
 * The DynamoDB calls of a function's first and second invocation in a fresh process, as its
 * samples will make them: recorded until two processes in a row made the same calls. The first
 * process to use the run's key finds no rate-limit item (one write fewer than every later cold
 * process, whose limiter must learn the stored state: see bench/README.md), and one slowed by
 * the machine may have an attempt timed out and retried by the SDK: neither is the function's
 * steady cold start.
 */
async function recordCalls(
  file: string,
  subject: Subject,
  env: NodeJS.ProcessEnv,
): Promise<readonly (readonly RecordedCall[])[]> {
  let previous: string | undefined;
  for (let attempt = 0; attempt < 6; attempt++) {
    const recorded = await sample(
      file,
      { events: [subject.event(0), subject.event(1)], record: true },
      env,
    );
    const calls = recorded.calls ?? [];
    if (callSequence(calls) === previous) return calls;
    previous = callSequence(calls);
  }
  throw new Error(`${subject.name}: no two recordings in a row made the same DynamoDB calls`);
}

function fixed(ms: number, width = 6): string {
  return ms.toFixed(1).padStart(width);
}

const stack = await startLocalStack({
  ...(values['dynamodb-endpoint'] ? { dynamodbEndpoint: values['dynamodb-endpoint'] } : {}),
  tablePrefix: `bench-cold-init-${process.pid}`,
  // Enough pending orders for every cancel of the run (two a sample, and the recordings).
  seedOrders: [
    ...pendingOrders(PAGE_ORDERS.first, PAGE_ORDERS.count),
    ...pendingOrders(FIRST_ORDER, (values.powertools ? 4 : 2) * (RUNS + 2) + 12),
  ],
  keys: [{ key: KEY, plan: 'enterprise', limits: LIMITS, label: 'bench:cold-init' }],
});
try {
  const env = lambdaEnvironment(stack);
  let nextOrder = FIRST_ORDER;
  const functions: Subject[] = [
    {
      name: 'authorizer',
      entry: join(PROJECT_ROOT, 'functions', 'authorizer.ts'),
      event: () => ({
        type: 'TOKEN',
        authorizationToken: `Bearer ${KEY}`,
        methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef1234/v1/GET/store/orders',
      }),
      status: 'Allow',
    },
    {
      name: 'listOrders',
      short: 'list',
      entry: join(PROJECT_ROOT, 'functions', 'list-orders.ts'),
      event: () => proxyEvent('GET', '/store/orders', '/store/orders'),
      status: '200',
    },
    {
      name: 'listOrderPages',
      short: 'list v2',
      entry: join(PROJECT_ROOT, 'functions', 'list-order-pages.ts'),
      event: () =>
        proxyEvent('GET', '/store/orders', '/store/orders', {
          query: { status: 'pending' },
          version: 'v2',
        }),
      status: '200',
    },
    {
      name: 'cancelOrder',
      short: 'cancel',
      entry: join(PROJECT_ROOT, 'functions', 'cancel-order.ts'),
      event: () => {
        const id = String(nextOrder++);
        return proxyEvent('DELETE', '/store/orders/{orderId}', `/store/orders/${id}`, {
          orderId: id,
        });
      },
      status: '204',
    },
  ];
  const files = new Map<string, string>();
  await Promise.all(functions.map(async (f) => files.set(f.name, await bundle(f.name, f.entry))));
  // The calls of each function that makes more than one, recorded from a fresh process: those
  // of its first invocation and of its second (warm) one.
  const subjects: Subject[] = [
    { name: 'floor', entry: floorEntry(stack.tables.apiKeys), event: () => ({}), status: '200' },
    ...(values.primed
      ? [
          {
            name: 'floor, primed',
            entry: floorEntry(stack.tables.apiKeys, true),
            event: () => ({}),
            status: '200',
          },
        ]
      : []),
  ];
  for (const f of functions) {
    const [first = [], warm = []] = await recordCalls(files.get(f.name) ?? '', f, env);
    if (first.length > 1 || warm.length > 1) {
      const short = f.short ?? f.name;
      const name = `floor: ${short} calls`;
      subjects.push({
        name,
        entry: callsFloorEntry(name, [first, warm]),
        event: () => ({}),
        status: '200',
        calls: `${describeWaves(inWaves(first))}, then ${describeWaves(inWaves(warm))}`,
      });
      f.floor = name;
      if (values['warm-calls-floor']) {
        const warmName = `floor: ${short} warm calls`;
        subjects.push({
          name: warmName,
          entry: callsFloorEntry(warmName, [warm]),
          event: () => ({}),
          status: '200',
          calls: `${describeWaves(inWaves(warm))} every time`,
        });
      }
    }
  }
  subjects.push(...functions);
  for (const s of subjects)
    if (!files.has(s.name)) files.set(s.name, await bundle(s.name, s.entry));
  if (values.powertools) {
    for (const f of functions) {
      const name = `${f.name} + Powertools`;
      subjects.push({ ...f, name, variantOf: f.name });
      files.set(name, await bundle(name, f.entry, true));
    }
  }

  const results = new Map<string, Loaded[]>(subjects.map((s) => [s.name, []]));
  for (let run = 0; run < RUNS + 1; run++) {
    const round = [
      ...subjects.slice(run % subjects.length),
      ...subjects.slice(0, run % subjects.length),
    ];
    for (const s of round) {
      const loaded = await sample(
        files.get(s.name) ?? '',
        { events: [s.event(0), s.event(1)] },
        env,
      );
      const statuses = (loaded.answers ?? []).map((a) => a.status);
      if (statuses.some((status) => status !== s.status)) {
        throw new Error(
          `${s.name} answered ${statuses.join(', ')}, not ${s.status}: check its set-up`,
        );
      }
      if (run > 0) results.get(s.name)?.push(loaded); // the first round warms the file cache
    }
  }
  report(subjects, files, results);
} finally {
  await Promise.all(
    Object.values(stack.tables).map((TableName) =>
      stack.client.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
    ),
  );
  await stack.stop();
  rmSync(outRoot, { recursive: true, force: true });
}

function report(
  subjects: readonly Subject[],
  files: Map<string, string>,
  results: Map<string, Loaded[]>,
): void {
  const figures = new Map(
    subjects.map((s) => {
      const samples = results.get(s.name) ?? [];
      const first = samples.map((l) => l.answers?.[0]?.at ?? NaN);
      const warm = samples.map((l) => (l.answers?.[1]?.at ?? NaN) - (l.answers?.[0]?.at ?? NaN));
      const cpuFirst = samples.map((l) => l.answers?.[0]?.cpu ?? NaN);
      const cpuWarm = samples.map(
        (l) => (l.answers?.[1]?.cpu ?? NaN) - (l.answers?.[0]?.cpu ?? NaN),
      );
      const penalties = first.map((f, i) => f - (warm[i] ?? NaN));
      return [
        s.name,
        {
          load: median(samples.map((l) => l.ms)),
          first: median(first),
          warm: median(warm),
          penalty: median(penalties),
          penalties,
          connections: median(samples.map((l) => l.answers?.[0]?.connections ?? NaN)),
          cpuFirst: median(cpuFirst),
          cpuPenalty: median(cpuFirst.map((f, i) => f - (cpuWarm[i] ?? NaN))),
        },
      ];
    }),
  );
  console.log(
    `first answers, median of ${RUNS} fresh processes each, in turn (goal: cold penalty ≤ ${GOAL}× the floor's; the verdict's range: 90% of ${RUNS}-process resamplings, the bootstrap)`,
  );
  console.log(
    `AWS first: the first answer + ${TLS_HANDSHAKE_MS} ms for each connection opened (TCP and TLS handshakes); CPU: the process's own CPU time`,
  );
  // The bundle column as wide as its longest name (at least the 20 it always had).
  const nameWidth = Math.max(20, ...subjects.map((s) => s.name.length));
  console.log(
    `${'bundle'.padEnd(nameWidth + 4)}size    load   first    warm  penalty  × floor  × calls floor  conns  AWS first  | CPU: first  penalty  × floor  × calls floor`,
  );
  for (const s of subjects) if (s.calls) console.log(`${s.name}: ${s.calls}`);
  const floor = figures.get('floor');
  for (const s of subjects) {
    const f = figures.get(s.name);
    if (!f || !floor) continue;
    const ratio = f.penalty / floor.penalty;
    const callsFloor = s.floor ? figures.get(s.floor) : undefined;
    const callsRatio = callsFloor ? f.penalty / callsFloor.penalty : undefined;
    const isFloor = s.name.startsWith('floor') || s.variantOf !== undefined;
    // Judged on the interval, not the median alone: within when all of it is, over when none.
    const yardstick = callsFloor ?? floor;
    const interval = ratioInterval(f.penalties, yardstick.penalties);
    const range = `${interval.low.toFixed(2)}–${interval.high.toFixed(2)}× (90%)`;
    const verdict = isFloor ? '' : `  ${verdictOn(interval, GOAL)}: ${range}`;
    console.log(
      [
        s.name.padEnd(nameWidth),
        `${(statSync(files.get(s.name) ?? '').size / 1024).toFixed(0).padStart(5)} KiB`,
        fixed(f.load),
        fixed(f.first, 7),
        fixed(f.warm, 7),
        fixed(f.penalty, 8),
        `${ratio.toFixed(2)}×`.padStart(8),
        (callsRatio === undefined ? '' : `${callsRatio.toFixed(2)}×`).padStart(14),
        String(f.connections).padStart(6),
        fixed(f.first + f.connections * TLS_HANDSHAKE_MS, 10),
        ` |${fixed(f.cpuFirst, 11)}`,
        fixed(f.cpuPenalty, 8),
        `${(f.cpuPenalty / floor.cpuPenalty).toFixed(2)}×`.padStart(8),
        (callsFloor ? `${(f.cpuPenalty / callsFloor.cpuPenalty).toFixed(2)}×` : '').padStart(14),
      ].join(' ') + verdict,
    );
  }
  const variants = subjects.filter((s) => s.variantOf !== undefined);
  if (variants.length > 0) {
    console.log(
      `Powertools Logger and Metrics in place of functions/shared (kept only if Powertools costs over ${POWERTOOLS_LIMIT * 100}% of a first answer):`,
    );
  }
  for (const s of variants) {
    const own = figures.get(s.variantOf ?? '');
    const with_ = figures.get(s.name);
    if (!own || !with_) continue;
    const change = (from: number, to: number) =>
      `${fixed(from)} → ${fixed(to)} ms: ${to >= from ? '+' : ''}${(to - from).toFixed(1)} ms (${((100 * (to - from)) / from).toFixed(1)}%)`;
    console.log(
      `  ${(s.variantOf ?? '').padEnd(12)} first answer ${change(own.first, with_.first)}; its CPU ${change(own.cpuFirst, with_.cpuFirst)}`,
    );
  }
}

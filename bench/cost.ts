/**
 * `npm run bench:cost [-- --orders N] [--samples R] [--dynamodb-endpoint URL] [--stage NAME
 * [--assembly DIR]] [--write | --check]`: what each kind of request costs, measured from the
 * outside of the functions. With `--stage`, on the stage as `cdk synth` makes it from cdk.json
 * (local/synthesized-stage.ts): its tables as its template defines them, its functions' bundles
 * with the template's settings — what a deploy creates; without, as `npm start` runs the code. Loads N orders
 * (default 20,000: bench:list-v2's generator, with 10% pending) and the keys it needs as
 * `npm start` seeds them, runs the real functions in containers behind the API Gateway emulation
 * with DynamoDB behind a proxy that asks for the consumed capacity of every call
 * (bench/cost-api.ts), and sends each kind of request one at a time, R samples (default 5) after
 * one to warm up. Per kind: the DynamoDB calls, read and write units by table and index, the
 * function's duration × memory, the bytes it logged (and the access log's line), the price per
 * million at list prices (bench/prices.ts) and the kind's floor (bench/cost-floors.ts); then the
 * goals of issue 41 with their verdicts (bench/cost-record.ts).
 *
 * Once the seed has settled (INDEX_SETTLE_MS after it), the writes come first — cancels, and the
 * index pages of a store that changes every second (each page one second after a cancel) — then
 * the benchmark waits out the index pages' settle time again and measures the rest in a store
 * that no longer changes. A sample
 * answered otherwise than its kind expects, a page of a settled store without an ETag, a page of
 * 50 that holds fewer, or a DynamoDB call it cannot count fails the run.
 *
 * `--write` records the run (bench/cost-record.json) and writes the cost table of
 * docs/architecture.md from it (`--table-only` writes the table from the record, measuring
 * nothing); `--check` compares the calls and units of every kind whose cost does not follow the
 * store's size with the record, and fails when they differ.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { switchFlag, valueFlag } from '../lib/config/flags.ts';
import { TABLES, type TableName } from '../lib/dynamodb/tables.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import { generateApiKey } from '../lib/keys/api-key.ts';
import type { KeyEntry } from '../lib/keys/key-input.ts';
import { PAGE_SIZE_DEFAULT } from '../lib/orders/list-query.ts';
import type { Order } from '../lib/orders/order.ts';
import { INDEX_SETTLE_MS } from '../lib/orders/page-tag.ts';
import { localTableNames, PROJECT_ROOT, startLocalStack } from '../local/local-stack.ts';
import { readTemplateStage, templateTableNames } from '../local/stage-template.ts';
import { startSynthesizedStack } from '../local/synthesized-stage.ts';
import { synthesize } from '../local/synth.ts';
import { isStageName, STAGES } from '../lib/deployment.ts';
import { LOCAL_REGION } from '../lib/dynamodb/client.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { CostApi, type BenchRequest, type Measured } from './cost-api.ts';
import {
  FLOORS,
  minimalOrderBytes,
  PARTITIONS,
  type Floor,
  type OrderFields,
} from './cost-floors.ts';
import {
  floorLines,
  goalLines,
  KINDS,
  resultTable,
  rowOf,
  withDocTable,
  type CostRecord,
  type KindMeasured,
  type Scaling,
} from './cost-record.ts';
import { benchDynamoDb } from './dynamodb.ts';
import { v2BenchOrders } from './list-v2.ts';
import { PRICES } from './prices.ts';

const SCRIPT = 'bench:cost';
const DEFAULT_ORDERS = 20_000;
const DEFAULT_SAMPLES = 5;
/** The store's shares of pending and cancelled orders (issue 41 measured with 10% pending). */
const SHARES = { pending: 0.1, cancelled: 0.01 } as const;
/** How long before an index page a cancel lands, while the store changes every second. */
const CHANGE_EVERY_MS = 1_000;
/** About how many orders the pet of the `petId` page has. */
const PET_ORDERS = 40;
/** The month of ship dates of the date page (the store's ship dates span 2025–2026). */
const MONTH = { from: '2025-11-01T00:00:00Z', to: '2025-12-01T00:00:00Z' } as const;
const RECORD_FILE = join(PROJECT_ROOT, 'bench', 'cost-record.json');
const DOC_FILE = join(PROJECT_ROOT, 'docs', 'architecture.md');
const UNLIMITED = { perMinute: 1_000_000, perDay: 1_000_000_000 };
/** A kind of request: what it is, which function it measures, what it must be answered. */
interface Kind {
  readonly kind: string;
  readonly title: string;
  readonly route: FunctionName;
  /** The function measured, when not the route's (the authorizer). */
  readonly fn?: FunctionName;
  readonly scales: Scaling;
  /** The status, and the code of an error. */
  readonly expect: string;
  readonly floor: (taken: readonly Measured[]) => Floor;
  /** A page of PAGE_SIZE_DEFAULT orders (one that holds fewer says the store is too small). */
  readonly fullPage?: boolean;
}

/** The orders of a v2 page's body, their integers as their digits. */
function pageOrders(body: Buffer): OrderFields[] {
  const reviver = (key: string, value: unknown, context?: { source?: string }) =>
    ['id', 'petId', 'quantity'].includes(key) && context?.source !== undefined
      ? context.source
      : value;
  return (JSON.parse(body.toString('utf8'), reviver) as { orders: OrderFields[] }).orders;
}

function fieldsOf(order: Order, status = order.status): OrderFields {
  return {
    id: order.id.toString(),
    ...(order.petId === undefined ? {} : { petId: order.petId.toString() }),
    ...(order.quantity === undefined ? {} : { quantity: String(order.quantity) }),
    ...(order.shipDate === undefined ? {} : { shipDate: order.shipDate }),
    ...(order.complete === undefined ? {} : { complete: order.complete }),
    ...(status === undefined ? {} : { status }),
  };
}

/** The store, and what the requests name in it. */
function storeOf(count: number, samples: number) {
  const orders = v2BenchOrders(count, SHARES);
  const perPet = new Map<bigint, number>();
  for (const order of orders) perPet.set(order.petId!, (perPet.get(order.petId!) ?? 0) + 1);
  const [pet, petOrders] = [...perPet].sort(
    (a, b) => Math.abs(a[1] - PET_ORDERS) - Math.abs(b[1] - PET_ORDERS) || (a[0] < b[0] ? -1 : 1),
  )[0]!;
  const inMonth = (order: Order) => order.shipDate! >= MONTH.from && order.shipDate! < MONTH.to;
  // Cancels take the pending orders of the highest ids, of another pet and another month:
  // never an order that a measured page shows (first pages, of the lowest ids).
  const targets = orders
    .filter((order) => order.status === 'pending' && order.petId !== pet && !inMonth(order))
    .map((order) => order.id);
  const needed = (samples + 1) * 4;
  if (targets.length < needed) {
    console.error(
      `error: --orders ${count} leaves ${targets.length} pending orders to cancel, not ${needed} (npm run ${SCRIPT} -- --help)`,
    );
    process.exit(2);
  }
  return {
    orders,
    pet,
    petOrders,
    targets,
    shipped: orders.find((order) => order.status === 'shipped')!.id,
    cancelled: orders.find((order) => order.status === 'cancelled')!.id,
    missing: orders[0]!.id - 1n,
  };
}

async function main(): Promise<void> {
  const values = benchFlags(
    SCRIPT,
    'What each kind of request costs: DynamoDB units, duration, logs and dollars, against floors.',
    {
      orders: countFlag('orders to load', DEFAULT_ORDERS),
      samples: countFlag('samples of each kind, after one to warm up', DEFAULT_SAMPLES),
      'dynamodb-endpoint': valueFlag('URL', 'use a running DynamoDB instead of starting one'),
      stage: valueFlag('NAME', `measure the stage (${STAGES.join(' or ')}) as cdk synth makes it`),
      assembly: valueFlag('DIR', 'with --stage: a cloud assembly already synthesized'),
      write: switchFlag(
        `record the run (bench/cost-record.json) and its table in docs/architecture.md`,
      ),
      check: switchFlag(
        'fail when a kind whose cost does not follow the store size differs from the record',
      ),
      'table-only': switchFlag(
        'measure nothing: write the table of docs/architecture.md from bench/cost-record.json',
      ),
    },
  );
  if (values['table-only']) {
    await writeDocTable(JSON.parse(await readFile(RECORD_FILE, 'utf8')) as CostRecord);
    return;
  }
  const count = countOf(SCRIPT, 'orders', values.orders, DEFAULT_ORDERS);
  const samples = countOf(SCRIPT, 'samples', values.samples, DEFAULT_SAMPLES);
  const started = performance.now();
  const store = storeOf(count, samples);
  const key = generateApiKey();
  const limitedKey = generateApiKey();
  const newKeys = Array.from({ length: samples + 1 }, () => generateApiKey());
  const keys: KeyEntry[] = [
    { key, plan: 'enterprise', limits: UNLIMITED },
    // One request a minute: the next ones are refused, and the eleventh refusal bans the key.
    { key: limitedKey, plan: 'enterprise', limits: { perMinute: 1, perDay: 1_000 } },
    ...newKeys.map((fresh) => ({ key: fresh, plan: 'enterprise' as const, limits: UNLIMITED })),
  ];

  const stageName = values.stage;
  if (stageName !== undefined && !isStageName(stageName)) {
    console.error(`error: --stage must be ${STAGES.join(' or ')} (npm run ${SCRIPT} -- --help)`);
    process.exit(2);
  }
  const stage = stageName
    ? {
        name: stageName,
        assemblyDir:
          values.assembly ??
          (await synthesize({ outDir: await mkdtemp(join(tmpdir(), 'bench-cost-synth-')) })),
      }
    : undefined;
  const dynamo = await benchDynamoDb(values['dynamodb-endpoint']);
  const prefix = `bench-cost-${Date.now().toString(36)}`;
  const template = stage
    ? readTemplateStage(stage.assemblyDir, stage.name, {
        tablePrefix: prefix,
        region: LOCAL_REGION,
      })
    : undefined;
  const tables = template ? templateTableNames(prefix, template.tables) : localTableNames(prefix);
  const tableIds = new Map(
    (Object.keys(tables) as TableName[]).map((name) => [tables[name], TABLES[name].id]),
  );
  let api: CostApi | undefined;
  let record: CostRecord;
  const problems: string[] = [];
  try {
    const loading = performance.now();
    const stack = stage
      ? await startSynthesizedStack({
          stage: stage.name,
          assemblyDir: stage.assemblyDir,
          dynamodbEndpoint: dynamo.endpoint,
          tablePrefix: prefix,
          seedOrders: store.orders,
          keys,
        })
      : await startLocalStack({
          dynamodbEndpoint: dynamo.endpoint,
          tablePrefix: prefix,
          seedOrders: store.orders,
          keys,
        });
    await stack.stop();
    console.error(
      `loaded ${count} orders and ${keys.length} keys as npm start seeds them in ${((performance.now() - loading) / 1000).toFixed(1)} s${stage ? ` (the ${stage.name} stage as synthesized: ${stage.assemblyDir})` : ''}`,
    );
    // A write of many orders (the seed's) has every order of an index page read again by key for
    // the settle time; the store "changing every second" below is one of cancels, one at a time.
    console.error(
      `waiting ${INDEX_SETTLE_MS / 1000 + 1} s for the seed to settle (INDEX_SETTLE_MS)`,
    );
    await sleep(INDEX_SETTLE_MS + 1_000);
    api = await CostApi.start(dynamo.endpoint, prefix, stage);
    const measured = await measureKinds(api, store, { key, limitedKey, newKeys }, samples);
    problems.push(...api.problems);
    if (api.untaggedBytes > 0) {
      console.error(`note: the containers' runtime wrote ${api.untaggedBytes} bytes (not counted)`);
    }
    record = {
      measured: new Date().toISOString().slice(0, 10),
      pricesChecked: PRICES.checked,
      orders: count,
      pendingShare: SHARES.pending,
      samples,
      rows: KINDS.map((kind) =>
        rowOf(
          measured.find((m) => m.kind === kind)!,
          (table) => tableIds.get(table) ?? table,
        ),
      ),
    };
  } finally {
    await api?.close();
    await dynamo.stop();
  }
  print(record);
  console.log(`\n(the run took ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  if (values.check) problems.push(...(await checkAgainstRecord(record)));
  if (values.write && problems.length === 0) await writeRecord(record);
  if (problems.length > 0) {
    for (const problem of problems) console.error(`FAIL ${problem}`);
    process.exitCode = 1;
  }
}

/** Every kind, measured: the writes first, then the settled store's reads and refusals. */
async function measureKinds(
  api: CostApi,
  store: ReturnType<typeof storeOf>,
  keys: { key: string; limitedKey: string; newKeys: readonly string[] },
  samples: number,
): Promise<KindMeasured[]> {
  const { key } = keys;
  const measured: KindMeasured[] = [];
  const add = (kind: Kind, taken: readonly Measured[]) => {
    for (const sample of taken) {
      const got = `${sample.status}${sample.code ? ` ${sample.code}` : ''}`;
      if (got !== kind.expect)
        api.problems.push(`${kind.title}: answered ${got}, not ${kind.expect}`);
      const held = kind.fullPage ? pageOrders(sample.answer.body).length : PAGE_SIZE_DEFAULT;
      if (held !== PAGE_SIZE_DEFAULT) {
        api.problems.push(
          `${kind.title}: the page held ${held} orders (a larger --orders, please)`,
        );
      }
    }
    const fn = kind.fn ?? kind.route;
    measured.push({
      kind: kind.kind,
      title: kind.title,
      fn,
      memoryMb: FUNCTIONS[fn].memoryMb,
      scales: kind.scales,
      apiRequest: fn === kind.route,
      samples: taken,
      floor: kind.floor(taken),
    });
    console.error(`measured ${kind.title}`);
  };
  /** R samples of a request, after one to warm up. */
  const repeat = async (make: () => BenchRequest, route: FunctionName, fn?: FunctionName) => {
    const taken: Measured[] = [];
    for (let i = 0; i <= samples; i++) taken.push(await api.measure(make(), route, fn));
    return taken.slice(1);
  };

  const cancelPath = (id: bigint | string) => `/v1/store/orders/${id}`;
  const cancelled = new Set<bigint>();
  let lastWrite = 0;
  const cancelOne = () => {
    const id = store.targets.pop()!;
    cancelled.add(id);
    lastWrite = Date.now();
    return { method: 'DELETE', path: cancelPath(id), key } as const;
  };
  const pageFloor = (partitions: { count: number; why: string }) => (taken: readonly Measured[]) =>
    FLOORS.page(
      pageOrders(taken.at(-1)!.answer.body).map(minimalOrderBytes),
      partitions.count,
      partitions.why,
    );
  const pages = {
    pending: {
      title: `v2 page of ${PAGE_SIZE_DEFAULT}, status=pending`,
      path: '/v2/store/orders?status=pending',
      partitions: PARTITIONS.written,
      scales: 'no',
    },
    month: {
      title: `v2 page of ${PAGE_SIZE_DEFAULT}, one month of ship dates`,
      path: `/v2/store/orders?${new URLSearchParams({ shipDateFrom: MONTH.from, shipDateTo: MONTH.to }).toString()}`,
      partitions: PARTITIONS.written,
      scales: 'filter',
    },
    pet: {
      title: `v2 page, petId (a pet with ${store.petOrders} orders)`,
      path: `/v2/store/orders?petId=${store.pet}`,
      partitions: PARTITIONS.pet,
      scales: 'filter',
    },
    all: {
      title: `v2 page of ${PAGE_SIZE_DEFAULT}, no filter`,
      path: '/v2/store/orders',
      partitions: PARTITIONS.written,
      scales: 'no',
    },
  } as const;
  const pageKind = (name: keyof typeof pages, changing: boolean): Kind => ({
    kind: `v2-${name}${changing ? '-changing' : ''}`,
    title: `${pages[name].title}${changing ? ', the store changing every second' : ''}`,
    route: 'listOrderPages',
    scales: pages[name].scales,
    expect: '200',
    floor: pageFloor(pages[name].partitions),
    fullPage: name !== 'pet' && pages[name].scales === 'no',
  });
  const page = (name: keyof typeof pages, headers?: Record<string, string>): BenchRequest => ({
    method: 'GET',
    path: pages[name].path,
    key,
    ...(headers ? { headers } : {}),
  });

  // 1. The writes: cancels, and index pages while the store changes every second.
  const cancel = (kind: string, title: string, expect: string, floor: () => Floor): Kind => ({
    kind,
    title,
    route: 'cancelOrder',
    scales: 'no',
    expect,
    floor,
  });
  add(
    cancel('cancel', 'cancel of a pending order', '204', FLOORS.cancel),
    await repeat(cancelOne, 'cancelOrder'),
  );
  for (const [kind, title, id, expect] of [
    ['cancel-again', 'cancel of a cancelled order (204 again)', store.cancelled, '204'],
    [
      'cancel-shipped',
      'cancel of a shipped order (409)',
      store.shipped,
      '409 ORDER_ALREADY_SHIPPED',
    ],
    ['cancel-missing', 'cancel of no such order (404)', store.missing, '404 ORDER_NOT_FOUND'],
  ] as const) {
    add(
      cancel(kind, title, expect, FLOORS.noopCancel),
      await repeat(() => ({ method: 'DELETE', path: cancelPath(id), key }), 'cancelOrder'),
    );
  }
  // A page's tag by its content (the store changed in the last INDEX_SETTLE_MS): its 304 reads
  // the page again, and answers nothing more.
  const contentHits: Measured[] = [];
  let pendingBody: Buffer = Buffer.alloc(0);
  for (const name of ['pending', 'month', 'pet'] as const) {
    const taken: Measured[] = [];
    for (let i = 0; i <= samples; i++) {
      const before = await api.measure(cancelOne(), 'cancelOrder');
      if (before.status !== 204) api.problems.push(`a cancel answered ${before.status}, not 204`);
      await sleep(CHANGE_EVERY_MS);
      const read = await api.measure(page(name), 'listOrderPages');
      taken.push(read);
      const etag = read.answer.headers.etag as string | undefined;
      if (!etag) api.problems.push(`${name}: a 200 of a changing store without an ETag`);
      if (name === 'pending' && etag) {
        pendingBody = read.answer.body;
        contentHits.push(
          await api.measure(page(name, { 'If-None-Match': etag }), 'listOrderPages'),
        );
      }
    }
    add(pageKind(name, true), taken.slice(1));
  }
  add(
    {
      kind: 'v2-304-changing',
      title: 'v2 conditional hit by content (304), status=pending, the store changing every second',
      route: 'listOrderPages',
      scales: 'no',
      expect: '304',
      // What the page it answers costs at least: it is read again.
      floor: () =>
        FLOORS.page(
          pageOrders(pendingBody).map(minimalOrderBytes),
          pages.pending.partitions.count,
          pages.pending.partitions.why,
        ),
    },
    contentHits.slice(1),
  );

  // 2. The store unchanged for the settle time: reads and refusals.
  const settle = lastWrite + INDEX_SETTLE_MS + 1_000 - Date.now();
  console.error(
    `waiting ${(settle / 1000).toFixed(1)} s for the store to settle (INDEX_SETTLE_MS)`,
  );
  await sleep(Math.max(0, settle));
  const tagged = (kind: Kind, taken: readonly Measured[]) => {
    if (taken.some((sample) => !sample.answer.headers.etag)) {
      api.problems.push(`${kind.title}: a 200 of a settled store without an ETag`);
    }
    add(kind, taken);
    return taken.at(-1)!.answer.headers.etag as string;
  };
  const pendingPages = await repeat(() => page('pending'), 'listOrderPages');
  const pageTag = tagged(pageKind('pending', false), pendingPages);
  const settledPendingBody = pendingPages.at(-1)!.answer.body;
  // A page of an index is tagged by its content: its 304 reads the page again.
  add(
    {
      kind: 'v2-304',
      title: 'v2 conditional hit by content (304), status=pending',
      route: 'listOrderPages',
      scales: 'no',
      expect: '304',
      floor: () =>
        FLOORS.page(
          pageOrders(settledPendingBody).map(minimalOrderBytes),
          pages.pending.partitions.count,
          pages.pending.partitions.why,
        ),
    },
    await repeat(() => page('pending', { 'If-None-Match': pageTag }), 'listOrderPages'),
  );
  for (const name of ['month', 'pet'] as const) {
    tagged(pageKind(name, false), await repeat(() => page(name), 'listOrderPages'));
  }
  // A page of the table is tagged by the list's version: its 304 reads the version only.
  const tableTag = tagged(
    pageKind('all', false),
    await repeat(() => page('all'), 'listOrderPages'),
  );
  add(
    {
      kind: 'v2-304-all',
      title: 'v2 conditional hit by version (304), no filter (a page of the table)',
      route: 'listOrderPages',
      scales: 'no',
      expect: '304',
      floor: FLOORS.conditionalHit,
    },
    await repeat(() => page('all', { 'If-None-Match': tableTag }), 'listOrderPages'),
  );
  const count = store.orders.length;
  const list = (headers: Record<string, string> = {}): BenchRequest => ({
    method: 'GET',
    path: '/v1/store/orders',
    key,
    headers: { 'Accept-Encoding': 'gzip', ...headers },
  });
  const everyOrder = store.orders.reduce(
    (sum, order) =>
      sum +
      minimalOrderBytes(fieldsOf(order, cancelled.has(order.id) ? 'cancelled' : order.status)),
    0,
  );
  const listTag = tagged(
    {
      kind: 'v1-list',
      title: `v1 whole list (${count.toLocaleString('en-US')} orders, gzip)`,
      route: 'listOrders',
      scales: 'store',
      expect: '200',
      floor: () => FLOORS.list(everyOrder, count),
    },
    await repeat(list, 'listOrders'),
  );
  add(
    {
      kind: 'v1-304',
      title: 'v1 conditional hit (304)',
      route: 'listOrders',
      scales: 'no',
      expect: '304',
      floor: FLOORS.conditionalHit,
    },
    await repeat(() => list({ 'If-None-Match': listTag }), 'listOrders'),
  );
  const malformed = (token: string): BenchRequest => ({
    method: 'DELETE',
    path: cancelPath('not-a-number'),
    key: token,
  });
  add(
    cancel('malformed', 'malformed order id (400)', '400 INVALID_ORDER_ID', FLOORS.malformed),
    await repeat(() => malformed(key), 'cancelOrder'),
  );
  // The limited key: refused from its second request of a minute, banned at the eleventh
  // refusal of one (a new minute admits one more request, which is no sample).
  const refused: Measured[] = [];
  const banned: Measured[] = [];
  for (let attempt = 0; attempt < 200 && banned.length <= samples; attempt++) {
    const sample = await api.measure(
      { method: 'DELETE', path: cancelPath(store.missing), key: keys.limitedKey },
      'cancelOrder',
    );
    if (sample.code === 'RATE_LIMITED' && refused.length <= samples) refused.push(sample);
    if (sample.code === 'API_KEY_TEMPORARILY_BANNED') banned.push(sample);
  }
  add(
    cancel('rate-limited', 'refused (429 RATE_LIMITED)', '429 RATE_LIMITED', FLOORS.refused),
    refused.slice(1),
  );
  add(
    cancel(
      'banned',
      'refused, the key banned (429)',
      '429 API_KEY_TEMPORARILY_BANNED',
      FLOORS.banned,
    ),
    banned.slice(1),
  );
  const authorized: Measured[] = [];
  for (const fresh of keys.newKeys) {
    authorized.push(await api.measure(malformed(fresh), 'cancelOrder', 'authorizer'));
  }
  add(
    {
      ...cancel(
        'authorizer',
        'authorizer, a key not in its cache',
        '400 INVALID_ORDER_ID',
        FLOORS.authorizer,
      ),
      fn: 'authorizer',
    },
    authorized.slice(1),
  );
  return measured;
}

function print(record: CostRecord): void {
  console.log(
    `\nbench:cost — ${record.orders.toLocaleString('en-US')} orders (${record.pendingShare * 100}% pending), one request at a time, the median of ${record.samples} sample${record.samples === 1 ? '' : 's'} a kind; list prices of ${record.pricesChecked} (bench/prices.ts), $ per million requests\n`,
  );
  for (const line of resultTable(record)) console.log(line);
  console.log(
    '\nUnits: DynamoDB read and write request units, by table and index; * some counted by rule (a failed conditional write, an item a batch did not find). Log B: the function’s own lines, + the access log’s line.',
  );
  console.log('\nFloors (the fewest units any design that keeps the contract could spend):\n');
  for (const line of floorLines(record)) console.log(line);
  console.log('\nGoals (issue 41, point 2):\n');
  for (const line of goalLines(record)) console.log(line);
}

/** Compares the kinds whose units do not follow the store's size with the record's. */
async function checkAgainstRecord(record: CostRecord): Promise<string[]> {
  const recorded = JSON.parse(await readFile(RECORD_FILE, 'utf8')) as CostRecord;
  const problems: string[] = [];
  const text = (row: CostRecord['rows'][number]) =>
    JSON.stringify({ calls: row.calls, read: row.read, write: row.write });
  for (const row of record.rows) {
    const before = recorded.rows.find((r) => r.kind === row.kind);
    if (!before) problems.push(`${row.title}: not in bench/cost-record.json`);
    else if (row.scales === 'no' && text(row) !== text(before)) {
      problems.push(
        `${row.title}: ${text(row)} now, ${text(before)} in bench/cost-record.json — measure again: npm run ${SCRIPT} -- --write`,
      );
    }
  }
  if (problems.length === 0) {
    console.log(
      '\nThe record agrees: every kind whose cost does not follow the store’s size makes the calls and spends the units it records.',
    );
  }
  return problems;
}

/** `text` as Prettier formats the file. */
async function formatted(file: string, text: string): Promise<string> {
  const prettier = await import('prettier');
  return prettier.format(text, { ...(await prettier.resolveConfig(file)), filepath: file });
}

/** Writes the table of docs/architecture.md from `record`. */
async function writeDocTable(record: CostRecord): Promise<void> {
  const doc = withDocTable(await readFile(DOC_FILE, 'utf8'), record);
  await writeFile(DOC_FILE, await formatted(DOC_FILE, doc));
  console.log('wrote the cost table of docs/architecture.md from bench/cost-record.json');
}

/** Writes the record, and the table of docs/architecture.md made from it. */
async function writeRecord(record: CostRecord): Promise<void> {
  await writeFile(RECORD_FILE, await formatted(RECORD_FILE, JSON.stringify(record)));
  console.log('\nwrote bench/cost-record.json');
  await writeDocTable(record);
}

if (import.meta.main) await main();

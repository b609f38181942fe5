/**
 * What `npm run bench:cost` measured, as a record (bench/cost-record.json): per kind of request,
 * the DynamoDB calls and units by table and index, the function's duration and memory, its log
 * bytes, the price per million at list prices (bench/prices.ts) and the kind's floor
 * (bench/cost-floors.ts); and how it is shown: the benchmark's tables, the goals of issue 41 with
 * their verdicts, and the cost table of docs/architecture.md ("Scale notes"), which is generated
 * from the record and checked against it (test/unit/cost-record.test.ts). Nothing here measures.
 */
import type { RecordedCall } from './capacity-proxy.ts';
import type { Floor } from './cost-floors.ts';
import {
  billedGbSeconds,
  dollarsPerMillion,
  dynamoDbDollarsPerMillion,
  type DollarsPerMillion,
} from './prices.ts';

/** The kinds of request, in the order issue 41 lists them: the record's rows. */
export const KINDS = [
  'v1-304',
  'v2-304-all',
  'v2-304',
  'v2-304-changing',
  'v2-pending',
  'v2-pending-changing',
  'v2-month',
  'v2-month-changing',
  'v2-pet',
  'v2-pet-changing',
  'v2-all',
  'v1-list',
  'cancel',
  'cancel-again',
  'cancel-shipped',
  'cancel-missing',
  'malformed',
  'rate-limited',
  'banned',
  'authorizer',
] as const;

/** Whether a kind's units follow the store's size: compared between runs only when they do not. */
export type Scaling = 'no' | 'store' | 'filter';

export interface CostRow {
  /** A stable name (the record's key). */
  readonly kind: string;
  readonly title: string;
  /** The answer every sample got: the status and, for an error, its code. */
  readonly answer: string;
  readonly fn: string;
  readonly memoryMb: number;
  /**
   * `no`: the same units at any size of the store; `store`: they grow with it (the whole list);
   * `filter`: they follow what the filter finds (a pet's orders, a month's density).
   */
  readonly scales: Scaling;
  readonly samples: number;
  /** DynamoDB calls a request, by operation. */
  readonly calls: Readonly<Record<string, number>>;
  /** Read and write units a request, by table and index (`Orders`, `Orders byStatus`). */
  readonly read: Readonly<Record<string, number>>;
  readonly write: Readonly<Record<string, number>>;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly units: number;
  /** The least and most units of a sample, when the samples differed. */
  readonly unitsRange?: readonly [number, number];
  /** Some units are counted by rule (a failed conditional write), not reported by DynamoDB. */
  readonly modelled?: boolean;
  /** The function's duration (median of the samples). */
  readonly ms: number;
  /** Bytes the function wrote (stdout and stderr) a request, and the access log's line. */
  readonly logBytes: number;
  readonly accessLogBytes: number;
  readonly dollars: DollarsPerMillion;
  readonly floor: Floor & { readonly units: number; readonly dynamoDbDollars: number };
}

export interface CostRecord {
  /** When it was measured (the day), and at what prices. */
  readonly measured: string;
  readonly pricesChecked: string;
  readonly orders: number;
  readonly pendingShare: number;
  readonly samples: number;
  readonly rows: readonly CostRow[];
}

/** One request of a kind, as measured. */
export interface Sample {
  readonly status: number;
  readonly code?: string;
  /** The measured function's duration, bytes written, and its calls. */
  readonly ms: number;
  readonly logBytes: number;
  readonly accessLogBytes: number;
  readonly calls: readonly RecordedCall[];
}

export interface KindMeasured {
  readonly kind: string;
  readonly title: string;
  readonly fn: string;
  readonly memoryMb: number;
  readonly scales: Scaling;
  /** API Gateway bills it as a request of its own (not the authorizer's share of one). */
  readonly apiRequest: boolean;
  readonly samples: readonly Sample[];
  readonly floor: Floor;
}

/** Units of the calls, read and write, by table (and `table index`). */
export function unitsOf(calls: readonly RecordedCall[], displayTable: (table: string) => string) {
  const read: Record<string, number> = {};
  const write: Record<string, number> = {};
  const add = (into: Record<string, number>, name: string, units: number) => {
    if (units > 0) into[name] = (into[name] ?? 0) + units;
  };
  for (const call of calls) {
    for (const used of call.units) {
      const into = used.kind === 'read' ? read : write;
      const table = displayTable(used.table);
      add(into, table, used.tableUnits);
      for (const [index, units] of Object.entries(used.indexUnits)) {
        add(into, `${table} ${index}`, units);
      }
    }
  }
  const total = (units: Record<string, number>) =>
    Object.values(units).reduce((sum, n) => sum + n, 0);
  return { read, write, readUnits: total(read), writeUnits: total(write) };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/** A kind's row: its median sample's calls and units, the median time and bytes, the prices. */
export function rowOf(measured: KindMeasured, displayTable: (table: string) => string): CostRow {
  const { samples } = measured;
  if (samples.length === 0) throw new Error(`${measured.kind}: no samples`);
  const withUnits = samples.map((sample) => ({ sample, ...unitsOf(sample.calls, displayTable) }));
  const totals = withUnits.map((s) => s.readUnits + s.writeUnits);
  const middle = median(totals);
  const chosen = withUnits.find((s) => s.readUnits + s.writeUnits === middle)!;
  const calls: Record<string, number> = {};
  for (const call of chosen.sample.calls) calls[call.operation] = (calls[call.operation] ?? 0) + 1;
  const answers = new Set(samples.map((s) => `${s.status}${s.code ? ` ${s.code}` : ''}`));
  const ms = median(samples.map((s) => s.ms));
  const logBytes = median(samples.map((s) => s.logBytes));
  const accessLogBytes = median(samples.map((s) => s.accessLogBytes));
  const low = Math.min(...totals);
  const high = Math.max(...totals);
  const floorUnits = measured.floor.read + measured.floor.write;
  return {
    kind: measured.kind,
    title: measured.title,
    answer: [...answers].join(' / '),
    fn: measured.fn,
    memoryMb: measured.memoryMb,
    scales: measured.scales,
    samples: samples.length,
    calls,
    read: chosen.read,
    write: chosen.write,
    readUnits: chosen.readUnits,
    writeUnits: chosen.writeUnits,
    units: middle,
    ...(low === high ? {} : { unitsRange: [low, high] as const }),
    ...(chosen.sample.calls.some((call) => call.modelled) ? { modelled: true } : {}),
    ms,
    logBytes,
    accessLogBytes,
    dollars: dollarsPerMillion({
      apiRequest: measured.apiRequest,
      ms,
      memoryMb: measured.memoryMb,
      readUnits: chosen.readUnits,
      writeUnits: chosen.writeUnits,
      logBytes: logBytes + accessLogBytes,
    }),
    floor: {
      ...measured.floor,
      units: floorUnits,
      dynamoDbDollars: dynamoDbDollarsPerMillion(measured.floor.read, measured.floor.write),
    },
  };
}

/** Units as the tables show them: whole, or to the half unit an eventually consistent read costs. */
export function formatUnits(units: number): string {
  return Number.isInteger(units) ? String(units) : units.toFixed(1);
}

export function formatDollars(dollars: number): string {
  return dollars.toFixed(2);
}

/** `UpdateItem, 2 × Query, BatchGetItem`: the calls of a request, in the order first made. */
export function formatCalls(calls: Readonly<Record<string, number>>): string {
  const entries = Object.entries(calls);
  if (entries.length === 0) return 'none';
  return entries.map(([op, n]) => (n === 1 ? op : `${n} × ${op}`)).join(', ');
}

/** `Orders 32, Orders byStatus 4` (or `0`). */
export function formatByTable(units: Readonly<Record<string, number>>): string {
  const entries = Object.entries(units);
  if (entries.length === 0) return '0';
  return entries.map(([name, n]) => `${name} ${formatUnits(n)}`).join(', ');
}

function unitsCell(row: CostRow): string {
  const range = row.unitsRange
    ? ` (${formatUnits(row.unitsRange[0])}–${formatUnits(row.unitsRange[1])})`
    : '';
  return `${formatUnits(row.units)}${range}${row.modelled ? '*' : ''}`;
}

/** The benchmark's main table, in Markdown. */
export function resultTable(record: CostRecord): string[] {
  const lines = [
    '| request | answer | DynamoDB calls | read units | write units | units | floor | function: ms × MB = GB-s | log B (+ access) | $/M all | API GW | Lambda | DynamoDB | logs | floor DynamoDB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of record.rows) {
    const d = row.dollars;
    lines.push(
      `| ${row.title} | ${row.answer} | ${formatCalls(row.calls)} | ${formatByTable(row.read)} | ${formatByTable(row.write)} | ${unitsCell(row)} | ${formatUnits(row.floor.units)} | ${row.fn}: ${row.ms.toFixed(1)} × ${row.memoryMb} = ${billedGbSeconds(row.ms, row.memoryMb).toPrecision(3)} | ${row.logBytes} (+ ${row.accessLogBytes}) | ${formatDollars(d.total)} | ${formatDollars(d.apiGateway)} | ${formatDollars(d.lambda)} | ${formatDollars(d.dynamoDb)} | ${formatDollars(d.logs)} | ${formatDollars(row.floor.dynamoDbDollars)} |`,
    );
  }
  return lines;
}

/** Each kind's floor and how it is derived. */
export function floorLines(record: CostRecord): string[] {
  return record.rows.map(
    (row) =>
      `- **${row.title}**: ${formatUnits(row.floor.units)} (${formatUnits(row.floor.read)} R + ${formatUnits(row.floor.write)} W, $${formatDollars(row.floor.dynamoDbDollars)} a million): ${row.floor.derivation}.`,
  );
}

interface Goal {
  readonly text: string;
  readonly kinds: readonly string[];
  /** The most units (or read units) allowed. */
  readonly most: number;
  readonly measure: 'units' | 'readUnits';
  /** A goal set at one size of the store. */
  readonly orders?: number;
}

/** Issue 41, point 2: what each kind may cost at most, measured at 20,000 orders. */
export const GOALS: readonly Goal[] = [
  { text: 'a v1 conditional hit (304): ≤ 5 units', kinds: ['v1-304'], most: 5, measure: 'units' },
  {
    text: 'a v2 conditional hit by version (304), a page of the table: ≤ 5 units',
    kinds: ['v2-304-all'],
    most: 5,
    measure: 'units',
  },
  {
    // Issue 49: a page of an index is tagged by its content, so that no 304 outlives an index's
    // lag; its 304 reads the page again, and costs what the page does (issue 41's 5 units were a
    // tag by version's, which a lagging index made wrong).
    text: 'a v2 conditional hit by content (304), a page of 50 from an index: its page’s, ≤ 15 units',
    kinds: ['v2-304', 'v2-304-changing'],
    most: 15,
    measure: 'units',
  },
  {
    text: 'a v2 page of 50 from an index, the store unchanged for the settle time: ≤ 15 units',
    kinds: ['v2-pending', 'v2-month', 'v2-pet'],
    most: 15,
    measure: 'units',
  },
  {
    text: 'a v2 page of 50 from an index while the store changes every second: ≤ 45 units',
    kinds: ['v2-pending-changing', 'v2-month-changing', 'v2-pet-changing'],
    most: 45,
    measure: 'units',
  },
  {
    text: 'v1’s whole list of 20,000 orders: ≤ 500 read units',
    kinds: ['v1-list'],
    most: 500,
    measure: 'readUnits',
    orders: 20_000,
  },
  { text: 'a cancel of a pending order: ≤ 7 units', kinds: ['cancel'], most: 7, measure: 'units' },
  {
    text: 'cancels that change nothing: 2 units, as today',
    kinds: ['cancel-again', 'cancel-shipped', 'cancel-missing'],
    most: 2,
    measure: 'units',
  },
  {
    text: 'refusals: 1 unit (400, 429), as today',
    kinds: ['malformed', 'rate-limited'],
    most: 1,
    measure: 'units',
  },
  { text: 'a banned key’s 429: 0 units, as today', kinds: ['banned'], most: 0, measure: 'units' },
];

/** The goals with their verdicts on this record. */
export function goalLines(record: CostRecord): string[] {
  return GOALS.map((goal) => {
    const rows = goal.kinds.map((kind) => record.rows.find((row) => row.kind === kind));
    if (rows.some((row) => row === undefined)) return `- ${goal.text}: not measured`;
    const values = rows.map((row) => `${row!.title} ${formatUnits(row![goal.measure])}`);
    if (goal.orders !== undefined && goal.orders !== record.orders) {
      return `- ${goal.text}: not judged at ${record.orders.toLocaleString('en-US')} orders (${values.join('; ')})`;
    }
    const met = rows.every((row) => row![goal.measure] <= goal.most);
    return `- ${goal.text}: **${met ? 'met' : 'NOT met'}** (${values.join('; ')})`;
  });
}

/** The first lines of docs/architecture.md's table, and where it ends. */
export const DOC_TABLE_START = '<!-- cost table: generated by `npm run bench:cost -- --write` -->';
export const DOC_TABLE_END = '<!-- end of the cost table -->';

/** The cells of docs/architecture.md's cost table, header first. */
export function docTableRows(record: CostRecord): string[][] {
  return [
    [
      'request',
      'DynamoDB calls',
      'read units',
      'write units',
      'units',
      'floor',
      '$ per million: all (DynamoDB)',
    ],
    ...record.rows.map((row) => [
      row.title,
      formatCalls(row.calls),
      formatByTable(row.read),
      formatByTable(row.write),
      unitsCell(row),
      formatUnits(row.floor.units),
      `${formatDollars(row.dollars.total)} (${formatDollars(row.dollars.dynamoDb)})`,
    ]),
  ];
}

/** A Markdown table of the cells, aligned as Prettier aligns it. */
export function markdownTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, column) =>
    Math.max(3, ...rows.map((row) => [...row[column]!].length)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column]! + cell.length - [...cell].length)).join(' | ')} |`;
  return [
    line(rows[0]!),
    `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

/** The line above the table: where and when it was measured. */
export function docCaption(record: CostRecord): string {
  return `Measured at ${record.orders.toLocaleString('en-US')} orders (${record.pendingShare * 100}% pending) on ${record.measured}, the median of ${record.samples} sample${record.samples === 1 ? '' : 's'} a kind; list prices of ${record.pricesChecked}; units in parentheses: the least and the most of a sample, when they differed; * some counted by DynamoDB's rules where DynamoDB Local reports none:`;
}

function docBlock(markdown: string): string {
  const start = markdown.indexOf(DOC_TABLE_START);
  const end = markdown.indexOf(DOC_TABLE_END);
  if (start < 0 || end < start) throw new Error('the cost table’s markers are missing');
  return markdown.slice(start + DOC_TABLE_START.length, end);
}

/** The caption and the cells of the table between the markers of `markdown`. */
export function docTableOf(markdown: string): { caption: string; cells: string[][] } {
  const lines = docBlock(markdown)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return {
    caption: lines.filter((line) => !line.startsWith('|')).join(' '),
    cells: lines
      .filter((line) => line.startsWith('|') && !/^\|[\s|:-]+\|$/.test(line))
      .map((line) =>
        line
          .slice(1, -1)
          .split(' | ')
          .map((cell) => cell.trim()),
      ),
  };
}

/** `markdown` with the table between the markers replaced by the record's. */
export function withDocTable(markdown: string, record: CostRecord): string {
  const start = markdown.indexOf(DOC_TABLE_START) + DOC_TABLE_START.length;
  const end = markdown.indexOf(DOC_TABLE_END);
  docBlock(markdown);
  const table = markdownTable(docTableRows(record));
  return `${markdown.slice(0, start)}\n\n${docCaption(record)}\n\n${table}\n\n${markdown.slice(end)}`;
}

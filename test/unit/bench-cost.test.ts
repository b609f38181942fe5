/**
 * `npm run bench:cost`'s pure parts: how it counts what a call cost and what a function wrote,
 * how it makes a row of its samples, and the cost table of docs/architecture.md, which must be
 * the one its record (bench/cost-record.json) gives.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  failedWriteUnits,
  missedItemUnits,
  reportedUnits,
  type RecordedCall,
} from '../../bench/capacity-proxy.ts';
import { FLOORS, minimalOrderBytes } from '../../bench/cost-floors.ts';
import {
  docCaption,
  docTableOf,
  docTableRows,
  goalLines,
  KINDS,
  rowOf,
  withDocTable,
  type CostRecord,
  type KindMeasured,
} from '../../bench/cost-record.ts';
import { beginMark, dataTag, endMark, FunctionOutput } from '../../bench/function-output.ts';
import { itemSize, numberSize } from '../../bench/item-size.ts';
import { dollarsPerMillion } from '../../bench/prices.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';

const record = JSON.parse(
  readFileSync(join(PROJECT_ROOT, 'bench', 'cost-record.json'), 'utf8'),
) as CostRecord;
const architecture = readFileSync(join(PROJECT_ROOT, 'docs', 'architecture.md'), 'utf8');

describe("docs/architecture.md's cost table", () => {
  it('is the one bench/cost-record.json gives, cell for cell', () => {
    expect(docTableOf(architecture)).toEqual({
      caption: docCaption(record),
      cells: docTableRows(record),
    });
  });

  it('differs once a unit of the record changes (the comparison sees every cell)', () => {
    const row = record.rows.find((r) => r.kind === 'v1-304')!;
    const changed = {
      ...record,
      rows: record.rows.map((r) => (r === row ? { ...r, units: r.units + 1 } : r)),
    };
    expect(docTableOf(withDocTable(architecture, changed))).not.toEqual(docTableOf(architecture));
    // Written again from the record itself, the table is what the file holds.
    expect(docTableOf(withDocTable(architecture, record))).toEqual(docTableOf(architecture));
  });
});

describe('bench/cost-record.json', () => {
  it('has a row for each kind the benchmark measures, in its order', () => {
    expect(record.rows.map((row) => row.kind)).toEqual(KINDS);
  });

  it('spends no fewer units on any kind than its floor (a floor is a lower bound)', () => {
    for (const row of record.rows) {
      expect(row.readUnits + row.writeUnits, row.title).toBeGreaterThanOrEqual(row.floor.units);
    }
  });

  it('prices each row at bench/prices.ts', () => {
    for (const row of record.rows) {
      expect(row.dollars, row.title).toEqual(
        dollarsPerMillion({
          apiRequest: row.fn !== 'authorizer',
          ms: row.ms,
          memoryMb: row.memoryMb,
          readUnits: row.readUnits,
          writeUnits: row.writeUnits,
          logBytes: row.logBytes + row.accessLogBytes,
        }),
      );
    }
  });
});

const call = (units: RecordedCall['units'], operation = 'GetItem'): RecordedCall => ({
  lane: 'listOrders',
  operation,
  status: 200,
  units,
});

describe('a row of samples', () => {
  const kind = (samples: KindMeasured['samples']): KindMeasured => ({
    kind: 'v1-304',
    title: 'v1 conditional hit (304)',
    fn: 'listOrders',
    memoryMb: 1769,
    scales: 'no',
    apiRequest: true,
    samples,
    floor: FLOORS.conditionalHit(),
  });
  const sample = (versionReads: number, ms: number) => ({
    status: 304,
    ms,
    logBytes: 1000,
    accessLogBytes: 500,
    calls: [
      call([{ table: 'rl', kind: 'write', tableUnits: 1, indexUnits: {} }], 'UpdateItem'),
      call(
        [{ table: 'o', kind: 'read', tableUnits: versionReads, indexUnits: {} }],
        'BatchGetItem',
      ),
    ],
  });

  it('takes the calls and units of the median sample, the median time, and says when they differed', () => {
    const row = rowOf(kind([sample(32, 30), sample(34, 10), sample(33, 20)]), (t) =>
      t === 'o' ? 'Orders' : 'RateLimits',
    );
    expect(row.calls).toEqual({ UpdateItem: 1, BatchGetItem: 1 });
    expect(row.read).toEqual({ Orders: 33 });
    expect(row.write).toEqual({ RateLimits: 1 });
    expect(row.units).toBe(34);
    expect(row.unitsRange).toEqual([33, 35]);
    expect(row.ms).toBe(20);
  });

  it("prices a million at the list prices: 1 write and 32 reads are $4.625 of DynamoDB's", () => {
    const row = rowOf(kind([sample(32, 19.2)]), (t) => t);
    expect(row.unitsRange).toBeUndefined();
    expect(row.dollars.dynamoDb).toBeCloseTo(4.625, 10);
    expect(row.dollars.apiGateway).toBe(3.5);
    // 20 ms (billed by the started millisecond) × 1769/1024 GB, and the request.
    expect(row.dollars.lambda).toBeCloseTo(0.2 + 0.02 * (1769 / 1024) * 0.0000133334 * 1e6, 10);
    expect(row.dollars.logs).toBeCloseTo((1500 * 1e6 * 0.5) / 2 ** 30, 10);
  });

  it('judges a goal by the units, and does not judge a goal set at another size', () => {
    const at = (orders: number, units: number): CostRecord => ({
      ...record,
      orders,
      rows: record.rows.map((row) => (row.kind === 'v1-list' ? { ...row, readUnits: units } : row)),
    });
    const listGoal = (r: CostRecord) => goalLines(r).find((line) => line.includes('whole list'));
    expect(listGoal(at(20_000, 500))).toContain('**met**');
    expect(listGoal(at(20_000, 501))).toContain('**NOT met**');
    expect(listGoal(at(2_000, 100))).toContain('not judged at 2,000 orders');
  });
});

describe("what DynamoDB charges, as the proxy counts it (DynamoDB's rules)", () => {
  it("reads an answer's capacity, the table's and each index's, for one table or a batch", () => {
    expect(
      reportedUnits(
        {
          ConsumedCapacity: {
            TableName: 'o',
            CapacityUnits: 5,
            Table: { CapacityUnits: 1 },
            GlobalSecondaryIndexes: {
              byStatus: { CapacityUnits: 2 },
              byStatusDate: { CapacityUnits: 2 },
            },
          },
        },
        'write',
      ),
    ).toEqual([
      { table: 'o', kind: 'write', tableUnits: 1, indexUnits: { byStatus: 2, byStatusDate: 2 } },
    ]);
    expect(
      reportedUnits({ ConsumedCapacity: [{ TableName: 'o', CapacityUnits: 32 }] }, 'read'),
    ).toEqual([{ table: 'o', kind: 'read', tableUnits: 32, indexUnits: {} }]);
    expect(reportedUnits({}, 'read')).toBeUndefined();
  });

  it('charges a failed conditional write the item it failed on, by the KB, at least 1', () => {
    expect(failedWriteUnits('o', undefined).tableUnits).toBe(1);
    expect(failedWriteUnits('o', { pk: { S: 'a' } }).tableUnits).toBe(1);
    expect(failedWriteUnits('o', { pk: { S: 'a' }, pad: { S: 'x'.repeat(2000) } }).tableUnits).toBe(
      2,
    );
  });

  it('charges the items a BatchGetItem did not find the least read (DynamoDB Local does not)', () => {
    const keys = [{ pk: { S: 'a' } }, { pk: { S: 'b' } }, { pk: { S: 'c' } }, { pk: { S: 'd' } }];
    expect(
      missedItemUnits(
        {
          RequestItems: { o: { Keys: keys, ConsistentRead: true }, k: { Keys: keys.slice(0, 2) } },
        },
        {
          Responses: { o: [{}], k: [] },
          UnprocessedKeys: { o: { Keys: [keys[3]] } },
        },
      ),
    ).toEqual({ o: 2, k: 1 });
  });

  it('sizes items as DynamoDB does: names and values, a number by its significant digits', () => {
    expect(numberSize('1000000000004')).toBe(8);
    expect(numberSize('5')).toBe(2);
    expect(numberSize('-0.00120')).toBe(2);
    expect(itemSize({ id: { N: '12' }, s: { S: 'pending' }, c: { BOOL: true } })).toBe(
      2 + 2 + 1 + 7 + 1 + 1,
    );
    expect(itemSize({ m: { M: { a: { S: 'xy' } } }, l: { L: [{ N: '1' }] } })).toBe(
      1 + 3 + (1 + 2 + 1) + 1 + 3 + (2 + 1),
    );
  });

  it("sizes an order's six fields under one-byte names, the floors' least order", () => {
    // i + 13 digits (8), p + 5 digits (4), q + 1 digit (2), d + 20, c + 1, s + 7.
    expect(
      minimalOrderBytes({
        id: '1000000000004',
        petId: '11583',
        quantity: '5',
        shipDate: '2025-06-27T14:21:29Z',
        complete: true,
        status: 'shipped',
      }),
    ).toBe(9 + 5 + 3 + 21 + 2 + 8);
  });
});

describe("what each function wrote, told apart in the containers' mixed output", () => {
  it('puts each write down to the function whose tag it carries, whatever comes between', () => {
    const output = new FunctionOutput();
    // The authorizer's last write arrives after the handler's first: another container.
    output.read('stdout', `${beginMark('authorizer')}${dataTag('authorizer')}{"a":1}\n`);
    output.read('stdout', `${beginMark('cancelOrder')}${dataTag('authorizer')}{"emf":2}\n`);
    output.read('stdout', `${endMark('authorizer', 5.5)}${dataTag('cancelOrder')}{"c":`);
    output.read('stdout', `3}\n${endMark('cancelOrder', 12.25)}`);
    output.read('stderr', `${beginMark('authorizer')}${endMark('authorizer', 5.5)}`);
    expect(output.settled(['cancelOrder'])).toBe(false);
    output.read('stderr', `${beginMark('cancelOrder')}${dataTag('cancelOrder')}{"w":4}\n`);
    expect(output.settled(['cancelOrder'])).toBe(false);
    output.read('stderr', endMark('cancelOrder', 12.25));
    expect(output.settled(['cancelOrder'])).toBe(true);
    expect(output.of('authorizer')).toEqual({ ms: 5.5, bytes: '{"a":1}\n{"emf":2}\n'.length });
    expect(output.of('cancelOrder')).toEqual({ ms: 12.25, bytes: '{"c":3}\n{"w":4}\n'.length });
    expect(output.untagged).toBe(0);
  });

  it("counts apart what no function wrote, and starts each request's count afresh", () => {
    const output = new FunctionOutput();
    output.read('stderr', 'ExperimentalWarning: something\n');
    expect(output.untagged).toBe('ExperimentalWarning: something\n'.length);
    output.read('stdout', `${dataTag('listOrders')}{}\n`);
    output.reset();
    expect(output.of('listOrders')).toEqual({ ms: 0, bytes: 0 });
  });
});

/**
 * A stage of release 1.0.0 gets the orders table's indexes one deploy at a time
 * (docs/upgrade-from-1.0.0.md): from a table without any, each row of the how-to's table
 * synthesizes a template that differs from the one before by at most one index added and nothing
 * else of the table, and whose functions that read the list's version read every item that the
 * code of the row before or after may mark (1.0.0's marks none); the last row is a new stage's
 * template; the checked-in settings are a new stage's; the how-to's wait for an index runs as
 * written, with a stand-in AWS CLI.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../infra/config.ts';
import { DataStack } from '../../infra/data-stack.ts';
import { STACK_OUTPUTS, STAGES, stackNames } from '../../lib/deployment.ts';
import { projectionOf } from '../../lib/dynamodb/create-table.ts';
import {
  DEFAULT_LIST_VERSION_ITEMS,
  readsCoverWrites,
  type ListVersionItems,
} from '../../lib/dynamodb/list-version-items.ts';
import {
  ORDER_INDEX_NAMES,
  orderIndexDefinition,
  type OrderIndexName,
} from '../../lib/dynamodb/tables.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { shellBlocks, standInAws, upgradeSteps } from '../support/runbook.ts';

type Resource = { Type: string; Properties: Record<string, unknown> } & Record<string, unknown>;
type Index = {
  IndexName: string;
  KeySchema: { AttributeName: string; KeyType: string }[];
  Projection: unknown;
};
type Attribute = { AttributeName: string; AttributeType: string };

/** Production's settings at one step (absent: not given, the stage's default). */
interface Step {
  readonly ordersIndexes?: unknown;
  readonly listVersionItems?: unknown;
  readonly ordersAwaitReindex?: unknown;
}

/** Production's config at a step, as cdk.json would give it. */
function configAt(step: Step) {
  const context: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(step)) {
    if (value !== undefined) context[`production:${key}`] = value;
  }
  return stageConfig('production', (key) => context[key], {});
}

/** The data stack of production at a step. */
function dataStack(step: Step): Record<string, Resource> {
  const stack = new DataStack(new App(), 'Data', { config: configAt(step) });
  return Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
}

/** The orders table's logical id and resource (the table keyed by shard and id). */
function ordersTable(resources: Record<string, Resource>): [string, Resource] {
  const found = Object.entries(resources).filter(
    ([, r]) =>
      r.Type === 'AWS::DynamoDB::GlobalTable' &&
      JSON.stringify(r.Properties.KeySchema).includes('"shard"'),
  );
  expect(found).toHaveLength(1);
  return found[0]!;
}

const indexesOf = (table: Resource) => (table.Properties.GlobalSecondaryIndexes ?? []) as Index[];
const attributesOf = (table: Resource) => table.Properties.AttributeDefinitions as Attribute[];
const names = (indexes: readonly { IndexName: string }[]) => indexes.map((i) => i.IndexName);

/** An index as the template holds it, from its shared definition. */
function templateIndex(name: OrderIndexName): Index {
  const definition = orderIndexDefinition(name);
  return {
    IndexName: name,
    KeySchema: [
      { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
      ...definition.sortKeys.map((key) => ({ AttributeName: key.name, KeyType: 'RANGE' })),
    ],
    Projection: projectionOf(definition),
  };
}

/** The how-to's table of steps: each row's settings (— is a setting not given). */
function runbookSteps(): Step[] {
  const steps = upgradeSteps();
  expect(steps.map((s) => s.step)).toEqual(steps.map((_, i) => i + 1));
  const key = (name: string) => name.slice('production:'.length);
  return steps.map(
    ({ settings }) =>
      Object.fromEntries(Object.entries(settings).map(([k, v]) => [key(k), v])) as Step,
  );
}

/** What release 1.0.0's code does with the list's version: it marks and reads none. */
const RELEASE_1_0_0_ITEMS: ListVersionItems = { write: 0, read: 0 };

describe('the orders table, step by step from release 1.0.0', () => {
  const steps = runbookSteps();
  const templates = steps.map(dataStack);
  const versionItems = [
    RELEASE_1_0_0_ITEMS,
    ...steps.map((step) => configAt(step).listVersionItems),
  ];

  it("starts from 1.0.0's table (no index), and ends with a new stage's settings", () => {
    expect(names(indexesOf(ordersTable(templates[0]!)[1]))).toEqual([]);
    const last = indexesOf(ordersTable(templates.at(-1)!)[1]);
    expect([...names(last)].sort()).toEqual([...ORDER_INDEX_NAMES].sort());
    expect(last).toEqual(expect.arrayContaining(ORDER_INDEX_NAMES.map(templateIndex)));
    expect(versionItems.at(-1)).toEqual(DEFAULT_LIST_VERSION_ITEMS);
    expect(steps.at(-1)).toEqual({});
    expect(configAt(steps.at(-2)!)).toEqual({ ...configAt({}), ordersAwaitReindex: true });
    // Until the reindex has run, no index keyed by the attributes it writes is read.
    expect(steps.slice(0, -1).every((step) => step.ordersAwaitReindex === true)).toBe(true);
  });

  it.each(steps.slice(1).map((_, i) => [i + 2] as const))(
    'at step %i adds at most one index to the table before, and changes nothing else of it',
    (n) => {
      const [beforeId, before] = ordersTable(templates[n - 2]!);
      const [afterId, after] = ordersTable(templates[n - 1]!);
      // The same table (a new logical id would replace it: a new, empty table).
      expect(afterId).toBe(beforeId);
      const [had, has] = [names(indexesOf(before)), names(indexesOf(after))];
      const added = has.filter((name) => !had.includes(name));
      const removed = had.filter((name) => !has.includes(name));
      expect(removed).toEqual([]);
      expect(added.length).toBe(n === steps.length ? 0 : 1);
      // The indexes kept are as they were; an added one is its definition.
      expect(indexesOf(after).filter((i) => had.includes(i.IndexName))).toEqual(
        indexesOf(before).filter((i) => has.includes(i.IndexName)),
      );
      for (const name of added) {
        expect(indexesOf(after).find((i) => i.IndexName === name)).toEqual(
          templateIndex(name as OrderIndexName),
        );
      }
      // Attribute definitions: exactly the keys of the table and its indexes.
      const keys = new Set(
        [
          ...JSON.parse(JSON.stringify(after.Properties.KeySchema)),
          ...indexesOf(after).flatMap((i) => i.KeySchema),
        ].map((key: { AttributeName: string }) => key.AttributeName),
      );
      expect(
        attributesOf(after)
          .map((a) => a.AttributeName)
          .sort(),
      ).toEqual([...keys].sort());
      // The replica's settings of its indexes: one entry an index.
      const replicaIndexes = (table: Resource) =>
        (table.Properties.Replicas as { GlobalSecondaryIndexes?: { IndexName: string }[] }[]).map(
          (replica) => names(replica.GlobalSecondaryIndexes ?? []).sort(),
        );
      expect(replicaIndexes(after)).toEqual(replicaIndexes(before).map(() => [...has].sort()));
      // Everything else of the table, and every other resource of the stack: unchanged.
      const rest = (table: Resource) => {
        const properties = { ...table.Properties };
        delete properties.GlobalSecondaryIndexes;
        delete properties.AttributeDefinitions;
        const replicas = (properties.Replicas as Record<string, unknown>[]).map(
          ({ GlobalSecondaryIndexes: _r, ...replica }) => replica,
        );
        return { ...table, Properties: { ...properties, Replicas: replicas } };
      };
      expect(rest(after)).toEqual(rest(before));
      const others = (resources: Record<string, Resource>) =>
        Object.fromEntries(Object.entries(resources).filter(([id]) => id !== afterId));
      expect(others(templates[n - 1]!)).toEqual(others(templates[n - 2]!));
    },
  );

  it.each(steps.map((_, i) => [i + 1] as const))(
    'at step %i every reader reads every version item a writer of the step before or after marks',
    (n) => {
      expect(readsCoverWrites(versionItems[n - 1]!, versionItems[n]!)).toBe(true);
    },
  );

  it('would see a deploy that reads the version over code that marks none, or marks more than it is read, as unsafe', () => {
    expect(readsCoverWrites(RELEASE_1_0_0_ITEMS, DEFAULT_LIST_VERSION_ITEMS)).toBe(false);
    expect(readsCoverWrites({ write: 4, read: 0 }, { write: 8, read: 8 })).toBe(true);
    expect(readsCoverWrites({ write: 8, read: 8 }, { write: 4, read: 4 })).toBe(false);
  });

  it('refuses a setting that names no index, or one twice, in one line naming it', () => {
    const at = (value: unknown) => () =>
      stageConfig('staging', (key) => (key === 'staging:ordersIndexes' ? value : undefined), {});
    expect(at(['byOwner'])).toThrow(
      /^staging:ordersIndexes names an index this code does not know/,
    );
    expect(at(['ordersByPet', 'ordersByPet'])).toThrow(
      /^staging:ordersIndexes names an index twice/,
    );
    // byPet: an index of an unreleased state of v2, which no stage has.
    expect(at(['byPet'])).toThrow(/^staging:ordersIndexes names an index this code does not know/);
    expect(at(5)).toThrow(/^staging:ordersIndexes /);
    expect(at('["ordersByPet"]')().ordersIndexes).toEqual(['ordersByPet']);
    expect(at('[]')().ordersIndexes).toEqual([]);
  });

  it('refuses list version items outside 1 to 32, or reading fewer than it writes but some', () => {
    const at = (value: unknown) => () =>
      stageConfig('staging', (key) => (key === 'staging:listVersionItems' ? value : undefined), {});
    for (const bad of [0, 33, '8/4', '0/0', 'four', 1.5]) {
      expect(at(bad)).toThrow(/^staging:listVersionItems must be a count of items/);
    }
    expect(at('4/32')().listVersionItems).toEqual({ write: 4, read: 32 });
    expect(at('4/0')().listVersionItems).toEqual({ write: 4, read: 0 });
    expect(at(4)().listVersionItems).toEqual({ write: 4, read: 4 });
  });

  it("is a new stage's in both stages, as cdk.json commits it: every index, 4 items, ready as created", () => {
    const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
      context: Record<string, unknown>;
    };
    for (const stage of STAGES) {
      const config = stageConfig(stage, (key) => context[key], {});
      expect(config.ordersIndexes).toEqual(ORDER_INDEX_NAMES);
      expect(config.listVersionItems).toEqual(DEFAULT_LIST_VERSION_ITEMS);
      expect(config.ordersAwaitReindex).toBe(false);
    }
  });
});

/**
 * A stand-in for the AWS CLI that answers the wait's two calls as AWS would for production: the
 * data stack's outputs, then the table's index CREATING twice and ACTIVE the third time. Any
 * other call, stack, table, index or query fails as the CLI would.
 */
const AWS_STAND_IN = `
if (option('--output') !== 'text') fail('stand-in: expected --output text');
const call = args[0] + ' ' + args[1];
if (call === 'cloudformation describe-stacks') {
  if (option('--stack-name') !== fixture.stack) fail('Stack with id ' + option('--stack-name') + ' does not exist');
  if (option('--query') !== "Stacks[0].Outputs[?OutputKey=='" + fixture.output + "'].OutputValue") fail('stand-in: unknown --query ' + option('--query'));
  console.log(fixture.table);
} else if (call === 'dynamodb describe-table') {
  if (option('--table-name') !== fixture.table) fail('Requested resource not found: ' + option('--table-name'));
  const match = /^Table\\.GlobalSecondaryIndexes\\[\\?IndexName=='(\\w+)'\\]\\.IndexStatus \\| \\[0\\]$/.exec(option('--query'));
  if (!match) fail('stand-in: unknown --query ' + option('--query'));
  if (!fixture.indexes.includes(match[1])) { console.log('None'); process.exit(0); }
  const calls = fs.readFileSync(process.env.AWS_STAND_IN_LOG, 'utf8').split('\\n').filter((l) => l.includes('describe-table')).length;
  console.log(calls < 3 ? 'CREATING' : 'ACTIVE');
} else fail('stand-in: unknown call ' + call);
`;

describe('the runbook that waits for an index, with a stand-in AWS CLI', () => {
  const standIn = standInAws(AWS_STAND_IN, {
    stack: stackNames('production').data,
    output: STACK_OUTPUTS.ordersTable,
    table: 'Production-Data-OrdersABC123-XYZ',
    indexes: ORDER_INDEX_NAMES,
  });
  afterAll(() => standIn.remove());

  it('reads the table from the stack outputs and polls its index until ACTIVE', async () => {
    const { lines, calls } = await standIn.run(
      shellBlocks('upgrade-from-1.0.0.md', '## Wait for an index to be ACTIVE'),
    );
    const summary = lines.map((line) =>
      line.startsWith('[') ? (JSON.parse(line) as string[]).slice(0, 2).join(' ') : line,
    );
    expect(summary).toEqual([
      'cloudformation describe-stacks',
      'dynamodb describe-table',
      'sleep 60',
      'dynamodb describe-table',
      'sleep 60',
      'dynamodb describe-table',
    ]);
    expect(calls[1]!.join(' ')).toContain(`IndexName=='ordersByStatus'`);
  });
});

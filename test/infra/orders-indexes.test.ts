/**
 * The orders table's indexes arrive one deploy at a time (docs/deploy.md, "The v2 list's
 * indexes"): each step's template differs from the one before by exactly one index on the
 * orders table and nothing else, and the runbook's wait for an index runs as written, with a
 * stand-in AWS CLI.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../infra/config.ts';
import { DataStack } from '../../infra/data-stack.ts';
import { STACK_OUTPUTS, STAGES, stackNames } from '../../lib/deployment.ts';
import { ORDER_INDEX_NAMES, TABLES } from '../../lib/dynamodb/tables.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { shellBlocks, standInAws } from '../support/runbook.ts';

type Resource = { Type: string; Properties: Record<string, unknown> } & Record<string, unknown>;
type Index = { IndexName: string; KeySchema: { AttributeName: string; KeyType: string }[] };
type Attribute = { AttributeName: string; AttributeType: string };

/** The data stack of production with `ordersIndexes` = count. */
function dataStack(count: number | undefined): Record<string, Resource> {
  const context: Record<string, unknown> =
    count === undefined ? {} : { 'production:ordersIndexes': count };
  const config = stageConfig('production', (key) => context[key], {});
  const stack = new DataStack(new App(), 'Data', { config });
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

describe('the orders table, step by step', () => {
  const steps = Array.from({ length: ORDER_INDEX_NAMES.length + 1 }, (_, n) => dataStack(n));

  it('has no index at step 0 (what every stage had before them), and all of them at the last', () => {
    expect(indexesOf(ordersTable(steps[0]!)[1])).toEqual([]);
    expect(indexesOf(ordersTable(steps.at(-1)!)[1]).map((i) => i.IndexName)).toEqual(
      ORDER_INDEX_NAMES,
    );
    // Not given: step 0, so a deploy without the setting never adds one.
    expect(dataStack(undefined)).toEqual(steps[0]);
  });

  it.each(ORDER_INDEX_NAMES.map((name, i) => [i + 1, name] as const))(
    'at step %i adds exactly %s to the table before, and changes nothing else',
    (n, name) => {
      const [beforeId, before] = ordersTable(steps[n - 1]!);
      const [afterId, after] = ordersTable(steps[n]!);
      // The same table (a new logical id would replace it: a new, empty table).
      expect(afterId).toBe(beforeId);
      const definition = TABLES.orders.globalIndexes[n - 1]!;
      const added = indexesOf(after).slice(-1);
      expect(indexesOf(after).slice(0, -1)).toEqual(indexesOf(before));
      expect(added).toEqual([
        {
          IndexName: name,
          KeySchema: [
            { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
            { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ]);
      // Attribute definitions: those before, and the new index's keys.
      const names = (attributes: Attribute[]) => attributes.map((a) => a.AttributeName).sort();
      expect(attributesOf(after)).toEqual(expect.arrayContaining(attributesOf(before)));
      const keys = [definition.partitionKey.name, definition.sortKey.name];
      expect(names(attributesOf(after))).toEqual(
        [...new Set([...names(attributesOf(before)), ...keys])].sort(),
      );
      // The replica's settings of its indexes: one entry more, for the new index.
      const replicaIndexes = (table: Resource) =>
        (table.Properties.Replicas as { GlobalSecondaryIndexes?: unknown[] }[]).map(
          (replica) => replica.GlobalSecondaryIndexes ?? [],
        );
      expect(replicaIndexes(after)).toEqual(
        replicaIndexes(before).map((indexes) => [...indexes, { IndexName: name }]),
      );
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
      expect(others(steps[n]!)).toEqual(others(steps[n - 1]!));
    },
  );

  it('refuses a setting outside 0 to 4, in one line naming it', () => {
    for (const bad of [5, -1, 'two', 1.5]) {
      expect(() =>
        stageConfig('staging', (key) => (key === 'staging:ordersIndexes' ? bad : undefined), {}),
      ).toThrow(/^staging:ordersIndexes must be an integer from 0 to 4, got /);
    }
  });

  it('is at step 1 in both stages, as cdk.json commits it', () => {
    const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
      context: Record<string, unknown>;
    };
    for (const stage of STAGES) {
      expect(stageConfig(stage, (key) => context[key], {}).ordersIndexes).toBe(1);
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
      shellBlocks('deploy.md', '### Wait for an index to be ACTIVE'),
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
    expect(calls[1]!.join(' ')).toContain(`IndexName=='byPet'`);
  });
});

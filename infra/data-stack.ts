/**
 * The stateful part of a stage: the three tables, from the shared table definitions; the orders
 * table with the indexes its `ordersIndexes` names (infra/config.ts).
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AttributeType,
  Billing,
  ContributorInsightsMode,
  ProjectionType,
  TableV2,
  type GlobalSecondaryIndexPropsV2,
  type ITableV2,
} from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { STACK_OUTPUTS } from '../lib/deployment.ts';
import {
  orderIndexDefinition,
  TABLES,
  type GlobalIndexDefinition,
  type KeyAttribute,
  type TableDefinition,
  type TableName,
} from '../lib/dynamodb/tables.ts';
import type { StageConfig } from './config.ts';

export type StageTables = Readonly<Record<TableName, ITableV2>>;

const attributeType = (type: 'S' | 'N') =>
  type === 'S' ? AttributeType.STRING : AttributeType.NUMBER;

const attribute = (key: KeyAttribute) => ({ name: key.name, type: attributeType(key.type) });

/** A shared index definition as CDK takes it (a multi-attribute sort key as `sortKeys`). */
function globalIndexProps(index: GlobalIndexDefinition): GlobalSecondaryIndexPropsV2 {
  const [onlySortKey, ...more] = index.sortKeys;
  return {
    indexName: index.name,
    partitionKey: attribute(index.partitionKey),
    ...(more.length > 0
      ? { sortKeys: index.sortKeys.map(attribute) }
      : onlySortKey
        ? { sortKey: attribute(onlySortKey) }
        : {}),
    ...(index.projection === 'KEYS_ONLY'
      ? { projectionType: ProjectionType.KEYS_ONLY }
      : {
          projectionType: ProjectionType.INCLUDE,
          nonKeyAttributes: [...index.projection.include],
        }),
  };
}

/**
 * DynamoDB Contributor Insights on the rate counters: one item per API key (`key#<keyId>`),
 * written on every request, so its most-accessed and throttled keys are the busiest API keys.
 */
const CONTRIBUTOR_INSIGHTS: ReadonlySet<TableName> = new Set(['rateLimits']);

const OUTPUT_OF: Record<TableName, string> = {
  orders: STACK_OUTPUTS.ordersTable,
  apiKeys: STACK_OUTPUTS.apiKeysTable,
  rateLimits: STACK_OUTPUTS.rateLimitsTable,
};

export interface DataStackProps extends StackProps {
  readonly config: StageConfig;
}

export class DataStack extends Stack {
  readonly tables: StageTables;

  constructor(scope: Construct, id: string, props: DataStackProps) {
    super(scope, id, props);
    const { config } = props;
    const tables = {} as Record<TableName, ITableV2>;
    for (const name of Object.keys(TABLES) as TableName[]) {
      const definition: TableDefinition = TABLES[name];
      tables[name] = new TableV2(this, definition.id, {
        partitionKey: {
          name: definition.partitionKey.name,
          type: attributeType(definition.partitionKey.type),
        },
        ...(definition.sortKey
          ? {
              sortKey: {
                name: definition.sortKey.name,
                type: attributeType(definition.sortKey.type),
              },
            }
          : {}),
        // The orders table: the indexes the stage has (the same list its functions are granted).
        globalSecondaryIndexes: (name === 'orders'
          ? config.ordersIndexes.map(orderIndexDefinition)
          : (definition.globalIndexes ?? [])
        ).map(globalIndexProps),
        billing: Billing.onDemand(),
        pointInTimeRecoverySpecification: {
          pointInTimeRecoveryEnabled: definition.pointInTimeRecovery,
        },
        ...(definition.timeToLiveAttribute
          ? { timeToLiveAttribute: definition.timeToLiveAttribute }
          : {}),
        ...(CONTRIBUTOR_INSIGHTS.has(name)
          ? {
              contributorInsightsSpecification: {
                enabled: true,
                mode: ContributorInsightsMode.ACCESSED_AND_THROTTLED_KEYS,
              },
            }
          : {}),
        removalPolicy: config.removalPolicy,
        deletionProtection: config.deletionProtection,
      });
      new CfnOutput(this, OUTPUT_OF[name], {
        value: tables[name].tableName,
        description: `${definition.id} table name`,
      });
    }
    new CfnOutput(this, STACK_OUTPUTS.region, {
      value: this.region,
      description: 'Region of the tables',
    });
    this.tables = tables;
  }
}

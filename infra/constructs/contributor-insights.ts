/**
 * A CloudWatch Logs Contributor Insights rule over JSON log lines (who contributes most to the
 * lines a filter selects), and the dashboard widget that charts its top contributors (CDK has no
 * widget for it: the dashboard JSON is written here).
 */
import { Aws, Stack } from 'aws-cdk-lib';
import { CfnInsightRule, ConcreteWidget } from 'aws-cdk-lib/aws-cloudwatch';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface LogContributorRuleProps {
  readonly ruleName: string;
  readonly logGroups: readonly ILogGroup[];
  /** JSON paths whose values identify a contributor, e.g. `$.keyId`. */
  readonly keys: readonly string[];
  /** Only the lines whose field (a JSON path) holds one of the values count. */
  readonly filters: readonly { readonly field: string; readonly in: readonly string[] }[];
}

export class LogContributorRule extends Construct {
  readonly ruleName: string;
  readonly rule: CfnInsightRule;

  constructor(scope: Construct, id: string, props: LogContributorRuleProps) {
    super(scope, id);
    this.ruleName = props.ruleName;
    this.rule = new CfnInsightRule(this, 'Rule', {
      ruleName: props.ruleName,
      ruleState: 'ENABLED',
      ruleBody: Stack.of(this).toJsonString({
        Schema: { Name: 'CloudWatchLogRule', Version: 1 },
        LogGroupNames: props.logGroups.map((group) => group.logGroupName),
        LogFormat: 'JSON',
        Contribution: {
          Keys: props.keys,
          Filters: props.filters.map((filter) => ({ Match: filter.field, In: filter.in })),
        },
        AggregateOn: 'Count',
      }),
    });
  }
}

export interface ContributorInsightsWidgetProps {
  readonly title: string;
  readonly ruleName: string;
  readonly maxContributors?: number;
  readonly width?: number;
  readonly height?: number;
}

/** A dashboard graph of a Contributor Insights rule's top contributors. */
export class ContributorInsightsWidget extends ConcreteWidget {
  private readonly props: ContributorInsightsWidgetProps;

  constructor(props: ContributorInsightsWidgetProps) {
    super(props.width ?? 12, props.height ?? 6);
    this.props = props;
  }

  toJson(): unknown[] {
    return [
      {
        type: 'metric',
        width: this.width,
        height: this.height,
        x: this.x,
        y: this.y,
        properties: {
          title: this.props.title,
          region: Aws.REGION,
          view: 'timeSeries',
          stacked: false,
          period: 60,
          legend: { position: 'right' },
          insightRule: {
            ruleName: this.props.ruleName,
            maxContributorCount: this.props.maxContributors ?? 10,
            orderBy: 'Sum',
          },
        },
      },
    ];
  }
}

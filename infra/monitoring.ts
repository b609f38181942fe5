/**
 * What an operator of a stage sees: alarms (./alarms.ts), a dashboard (./dashboard.ts), and a
 * Contributor Insights rule showing which API keys hit their limits. Thresholds come from the
 * stage config.
 */
import type { Alarm, Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { addAlarms } from './alarms.ts';
import { LogContributorRule } from './constructs/contributor-insights.ts';
import { addDashboard } from './dashboard.ts';
import { watchedTables, type Watched } from './watched.ts';

/** The line the functions log on every 429 (Powertools JSON logger), and its caller field. */
export const RATE_LIMIT_REFUSAL_LOG = { message: 'Rate limit refusal', keyIdPath: '$.keyId' };

export interface MonitoringProps extends Omit<Watched, 'tables'> {
  /** Told of every alarm as it fires and clears. */
  readonly topic: ITopic;
}

export class Monitoring extends Construct {
  readonly alarms: Alarm[];
  readonly dashboard: Dashboard;
  readonly rateLimitRefusals: LogContributorRule;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const watched = { ...props, tables: watchedTables(props.functions) };
    this.rateLimitRefusals = new LogContributorRule(this, 'RateLimitRefusals', {
      ruleName: `store-orders-${props.config.stage}-rate-limit-refusals`,
      logGroups: [props.functions.listOrders.logs, props.functions.cancelOrder.logs],
      keys: [RATE_LIMIT_REFUSAL_LOG.keyIdPath],
      filters: [{ field: '$.message', in: [RATE_LIMIT_REFUSAL_LOG.message] }],
    });
    // Children of this construct, as they always were: their logical ids stay the same.
    this.alarms = addAlarms(this, watched, props.topic);
    this.dashboard = addDashboard(this, watched, this.alarms, this.rateLimitRefusals);
  }
}

/**
 * The figures the documents give that the code produces, held to the code: each function's
 * memory, timeout and DynamoDB grants (docs/architecture.md) against lib/functions.ts and the
 * synthesized roles (the stage settings, docs/settings.md, are made from their declarations:
 * test/docs/reference.test.ts); the provisioned concurrency table and its monthly sum (docs/deploy.md)
 * against the production floors, the scaling factor and the memory sizes; the stages the local
 * API serves (docs/local.md) against the route tables. A document that goes stale fails here.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { PROVISIONED_SCALING, stageConfig } from '../../infra/config.ts';
import { API_STAGES } from '../../lib/api/routes.ts';
import { TABLES, type TableName } from '../../lib/dynamodb/tables.ts';
import { ALARM_POLL_MS } from '../../functions/deploy-hooks/bake.ts';
import { VERDICT_RESERVE_MS, WATCH_RESERVE_MS } from '../../functions/deploy-hooks/hooks.ts';
import { BASELINE_MS } from '../../functions/deploy-hooks/judge.ts';
import {
  BODY_IDLE_MS,
  CALL_BUDGET_MS,
  LIST_BODY_BUDGET_MS,
  PROBE_KEY_LIFETIME_MS,
} from '../../functions/deploy-hooks/probes.ts';
import { TIME_BUDGETS } from '../../lib/config/budgets.ts';
import { METRICS_DELAY_MS, MIN_LIVE_SHARE, MIN_OWN_REQUESTS } from '../../lib/deploy-judgement.ts';
import { VERDICT_ATTEMPTS } from '../../functions/deploy-hooks/verdict.ts';
import { DEPLOY_HOOKS, FUNCTION_NAMES, FUNCTIONS, type FunctionName } from '../../lib/functions.ts';
import { docs, markdownTableIn } from '../support/runbook.ts';
import { templates, testApp } from './support.ts';

const { stages } = testApp();

/** The rows of the markdown table whose header starts with these columns, as cells. */
function table(text: string, ...columns: string[]): string[][] {
  const rows = markdownTableIn(text, ...columns);
  expect(rows, `a table headed ${columns.join(', ')}`).toBeDefined();
  return rows!;
}

/** The actions written in backquotes in a cell (`Query`, `BatchGetItem`). */
const actions = (cell: string) => [...cell.matchAll(/`(\w+)`/g)].map((m) => m[1]!).sort();

/** What a function's role may do on each table, from the synthesized template. */
function grants(template: Template, fn: FunctionName): Partial<Record<TableName, string[]>> {
  const role = new RegExp(`${fn.charAt(0).toUpperCase()}${fn.slice(1)}Role`);
  const byTable: Partial<Record<TableName, string[]>> = {};
  const policies = Object.values(
    template.findResources('AWS::IAM::Policy') as Record<
      string,
      { Properties: { Roles: unknown; PolicyDocument: { Statement: unknown[] } } }
    >,
  ).filter((policy) => role.test(JSON.stringify(policy.Properties.Roles)));
  for (const policy of policies) {
    for (const statement of policy.Properties.PolicyDocument.Statement as {
      Action: string | string[];
      Resource: unknown;
    }[]) {
      const dynamo = [statement.Action].flat().filter((a) => a.startsWith('dynamodb:'));
      if (dynamo.length === 0) continue;
      const table = (Object.keys(TABLES) as TableName[]).find((name) =>
        JSON.stringify(statement.Resource).includes(TABLES[name].id),
      );
      expect(table, JSON.stringify(statement.Resource)).toBeDefined();
      // An action on the table and on its indexes (Query) is one grant of the table's.
      byTable[table!] = [
        ...new Set([...(byTable[table!] ?? []), ...dynamo.map((a) => a.slice(9))]),
      ].sort();
    }
  }
  return byTable;
}

describe("docs/architecture.md's table of functions", () => {
  const rows = table(docs('architecture.md'), 'function', 'memory', 'timeout');

  it('lists every function once', () => {
    expect(rows.map(([name]) => name).sort()).toEqual([...FUNCTION_NAMES].sort());
  });

  it.each(FUNCTION_NAMES)("gives %s's memory and timeout as lib/functions.ts has them", (fn) => {
    const [, memory, timeout] = rows.find(([name]) => name === fn)!;
    expect(memory).toBe(`${FUNCTIONS[fn].memoryMb.toLocaleString('en')} MB`);
    expect(timeout).toBe(`${FUNCTIONS[fn].timeoutSeconds} s`);
  });

  it.each(FUNCTION_NAMES)("gives %s's DynamoDB grants as the stack synthesizes them", (fn) => {
    const [, , , orders, others] = rows.find(([name]) => name === fn)!;
    const documented: Partial<Record<TableName, string[]>> = {};
    if (actions(orders!).length > 0) documented.orders = actions(orders!);
    for (const [, name, listed] of others!.matchAll(/(\w+): ([^|]*?)(?=$|\w+:)/g)) {
      documented[name as TableName] = actions(listed!);
    }
    for (const stage of Object.values(stages)) {
      expect(grants(templates(stage).api, fn)).toEqual(documented);
    }
  });
});

describe("docs/deploy.md's provisioned concurrency", () => {
  const text = docs('deploy.md');
  const rows = table(text, 'function', 'production floor');
  const price = Number(/\$(0\.\d+) per GB-second/.exec(text)?.[1]);
  // Production's own floors, no setting given (as the document's table shows them).
  const floors = stageConfig('production', () => undefined, {}).concurrency.provisioned;
  /** A month of one container of a function, at the list price the document gives (730 h). */
  const month = (fn: FunctionName) => (FUNCTIONS[fn].memoryMb / 1024) * 730 * 3600 * price;
  const dollars = (amount: number) => `$${amount.toFixed(2)}`;

  it('has a price to compute with', () => {
    expect(price).toBeGreaterThan(0);
  });

  it.each(FUNCTION_NAMES)(
    "gives %s's production floor, ceiling, memory and monthly cost as the stack and the price make them",
    (fn) => {
      const row = rows.find(([name]) => name === fn);
      expect(row, fn).toBeDefined();
      const [, floor, upTo, memory, cost] = row!;
      expect(Number(floor)).toBe(floors[fn]);
      expect(Number(upTo)).toBe(floors[fn] * PROVISIONED_SCALING.maxFactor);
      expect(memory).toBe(`${FUNCTIONS[fn].memoryMb.toLocaleString('en')} MB`);
      expect(cost).toBe(dollars(month(fn)));
    },
  );

  it("adds up the production floor's monthly cost: its addends are the table's, their sum the one it states", () => {
    const [, total, addends] = /The floor costs (\$[\d.]+) a month in production \(([^)]*)\)/.exec(
      text.replace(/\s+/g, ' '),
    )!;
    const terms = addends!.split(' + ').map((term) => {
      const [, times, amount] = /^(?:(\d+) × )?\$([\d.]+)$/.exec(term)!;
      return Number(times ?? 1) * Number(amount);
    });
    const withFloors = FUNCTION_NAMES.filter((fn) => floors[fn] > 0);
    expect(terms).toHaveLength(withFloors.length);
    expect(terms.reduce((sum, term) => sum + term, 0)).toBeCloseTo(Number(total!.slice(1)), 2);
    const exact = withFloors.reduce((sum, fn) => sum + floors[fn] * month(fn), 0);
    expect(total).toBe(dollars(exact));
  });
});

describe("docs/deploy.md's costs of provisioned concurrency at its ceiling and of the alarms", () => {
  const text = docs('deploy.md').replace(/\s+/g, ' ');
  const price = Number(/\$(0\.\d+) per GB-second/.exec(text)?.[1]);
  const floors = stageConfig('production', () => undefined, {}).concurrency.provisioned;
  const month = (fn: FunctionName) => (FUNCTIONS[fn].memoryMb / 1024) * 730 * 3600 * price;
  const dollars = (amount: number) => `$${amount.toFixed(2)}`;

  it('states the month at the scaling ceiling (every floor times the factor) as the stack and the price make it', () => {
    const [, total] = /At its ceiling, [^$]*costs (\$[\d.]+) a month/.exec(text)!;
    const ceiling = FUNCTION_NAMES.reduce(
      (sum, fn) => sum + floors[fn] * PROVISIONED_SCALING.maxFactor * month(fn),
      0,
    );
    expect(total).toBe(dollars(ceiling));
  });

  it("states the alarms' cost as their metrics in the synthesized stages make it ($0.10 an alarm metric a month)", () => {
    const [, metrics, cost, deployMetrics, deployCost] =
      /(\d+) alarm metrics a stage, (\$[\d.]+) a month each stage \(the 8 deployment alarms' (\d+) of them, (\$[\d.]+)/.exec(
        text,
      )!;
    expect(/\$0\.10 an alarm metric a month/.test(text)).toBe(true);
    for (const stage of Object.values(stages)) {
      const alarms = Object.values(
        templates(stage).api.findResources('AWS::CloudWatch::Alarm') as Record<
          string,
          { Properties: { AlarmName: string; Metrics?: { MetricStat?: unknown }[] } }
        >,
      );
      // A simple alarm reads one metric; a metric-math alarm each metric of its expression.
      const metricsOf = (a: (typeof alarms)[number]) =>
        a.Properties.Metrics ? a.Properties.Metrics.filter((m) => m.MetricStat).length : 1;
      const all = alarms.reduce((sum, a) => sum + metricsOf(a), 0);
      const deployment = alarms.filter((a) =>
        /NewVersion/.test(JSON.stringify(a.Properties.AlarmName)),
      );
      expect(deployment).toHaveLength(8);
      const deploymentMetrics = deployment.reduce((sum, a) => sum + metricsOf(a), 0);
      expect(Number(metrics)).toBe(all);
      expect(cost).toBe(dollars(all * 0.1));
      expect(Number(deployMetrics)).toBe(deploymentMetrics);
      expect(deployCost).toBe(dollars(deploymentMetrics * 0.1));
    }
  });
});

describe("docs/deploy.md's figures of the deploy hooks", () => {
  const text = docs('deploy.md').replace(/\s+/g, ' ');
  const seconds = (ms: number) => `${ms / 1000} s`;

  it("gives the probes' budgets, the verdict's attempts, the watch's reads and the baseline as the hooks have them", () => {
    expect(text).toContain(`a list still flowing after ${seconds(LIST_BODY_BUDGET_MS)} passes`);
    expect(text).toContain(
      `(${seconds(CALL_BUDGET_MS)} at most, and never past the hook's own ${DEPLOY_HOOKS.preTraffic.timeoutSeconds} s timeout less the ${seconds(VERDICT_RESERVE_MS)} it keeps to send its verdict)`,
    );
    expect(text).toContain(`Sending it is tried ${VERDICT_ATTEMPTS} times`);
    expect(text).toContain(`every ${seconds(ALARM_POLL_MS)} it reads the function's`);
    expect(text).toContain(`expiring ${PROBE_KEY_LIFETIME_MS / 60_000} minutes later`);
    expect(BASELINE_MS).toBe(60 * 60_000);
    expect(text).toContain('the same minutes and the hour before the deployment');
    expect(text).toContain(
      `one whose body stalls (no byte for ${seconds(BODY_IDLE_MS)}: a list page's own ${seconds(TIME_BUDGETS.listPageMs)} budget and 2 s)`,
    );
  });

  it('gives what the watch asks before it passes a version, and how long it waits for it, as the hooks have them', () => {
    expect(text).toContain(
      `its figures hold at least ${MIN_OWN_REQUESTS} invocations of its own (callers' through \`live\`, and the watch's probes' calls), and, in the whole minutes since the last shift, at least ${MIN_LIVE_SHARE * 100}% of \`live\`'s invocations are the new version's`,
    );
    expect(text).toContain(`the watch counts on ${seconds(METRICS_DELAY_MS)})`);
    expect(text).toContain(
      `the first whole minute after the last shift is over, and ${seconds(METRICS_DELAY_MS)} more`,
    );
    const watchMinutes =
      (DEPLOY_HOOKS.postTraffic.timeoutSeconds * 1000 - WATCH_RESERVE_MS) / 60_000;
    expect(text).toContain(
      `up to ${watchMinutes} minutes after the shift (its ${DEPLOY_HOOKS.postTraffic.timeoutSeconds / 60} less ${WATCH_RESERVE_MS / 60_000} for what follows)`,
    );
    expect(text).toContain(
      `within its ${DEPLOY_HOOKS.postTraffic.timeoutSeconds / 60} minutes (Lambda's longest timeout, less ${WATCH_RESERVE_MS / 60_000} minutes for what follows)`,
    );
    expect(text).toContain(`${MIN_OWN_REQUESTS} needed`);
  });
});

describe("docs/local.md's routing", () => {
  it("names every stage the local API serves as the paths it answers, before the 404 of any other's", () => {
    const line = docs('local.md')
      .split('\n')
      .find((l) => l.includes('answers 404 `ROUTE_NOT_FOUND` here'));
    expect(line).toBeDefined();
    const named = [...line!.matchAll(/`\/(v\d+)`/g)].map((m) => m[1]);
    expect(named).toEqual([...API_STAGES]);
  });
});

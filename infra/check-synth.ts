/**
 * Fails when `cdk synth` produced a failing validation report (cdk-nag findings, CloudFormation
 * rules): the CDK CLI writes the report but does not fail on it by itself.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Report {
  pluginReports: {
    pluginName: string;
    conclusion: string;
    violations: {
      ruleName: string;
      severity: string;
      violatingConstructs: { constructPath: string }[];
    }[];
  }[];
}

const file = join(process.argv[2] ?? 'cdk.out', 'validation-report.json');
let report: Report;
try {
  report = JSON.parse(readFileSync(file, 'utf8')) as Report;
} catch (error) {
  console.error(`error: cannot read ${file}: ${(error as Error).message}`);
  process.exit(1);
}
const failing = report.pluginReports.filter((p) => p.conclusion !== 'success');
for (const plugin of failing) {
  for (const violation of plugin.violations) {
    for (const construct of violation.violatingConstructs) {
      console.error(
        `${plugin.pluginName} ${violation.severity} ${violation.ruleName} at ${construct.constructPath}`,
      );
    }
  }
}
if (failing.length > 0) process.exit(1);
console.log(
  `validation: ${report.pluginReports.map((p) => `${p.pluginName} ${p.conclusion}`).join(', ') || 'no findings'}`,
);

/**
 * The functions' metrics, written as CloudWatch embedded metric format (EMF): one JSON document
 * on stdout, which CloudWatch Logs turns into metrics under the stage's namespace
 * (METRICS_NAMESPACE, set by the stack), with the dimension `service`. An invocation records its
 * metrics in a buffer of its own (./scope.ts), written at its end, together
 * (./dynamodb-calls.ts, recordInvocation): invocations that share a process never write each
 * other's. METRICS_DISABLED=true drops them (local runs and tests). Both settings are read from
 * the environment once, as the module loads (Lambda's init): a container's environment does not
 * change while it runs. Why not Powertools: docs/architecture.md, "Functions".
 */
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/metrics.ts';
import { entry, fromScope, scopeKey, type ScopeEntry } from './scope.ts';

export const MetricUnit = { Count: 'Count', Milliseconds: 'Milliseconds', Bytes: 'Bytes' } as const;
export type MetricUnit = (typeof MetricUnit)[keyof typeof MetricUnit];

/** EMF's limits: metrics per document, values per metric. Reaching one writes a document. */
export const EMF_LIMITS = { metrics: 100, values: 100 } as const;
/** Top-level members of a document that are not metrics: its metadata and its dimension. */
const RESERVED_NAMES = new Set(['_aws', 'service']);

/** The container's settings, from the environment the stack sets, read once. */
const SETTINGS = {
  namespace: process.env.METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  disabled: process.env.METRICS_DISABLED === 'true',
} as const;

export class Metrics {
  private stored = new Map<string, { unit: MetricUnit; values: number[] }>();
  private readonly namespace: string;
  private readonly disabled: boolean;
  private readonly write: (line: string) => void;

  constructor({
    namespace = SETTINGS.namespace,
    disabled = SETTINGS.disabled,
    write = (line: string): void => void process.stdout.write(line),
  } = {}) {
    this.namespace = namespace;
    this.disabled = disabled;
    this.write = write;
  }

  /** Records a value; a name, unit or value EMF cannot carry is a bug, thrown at once. */
  addMetric(name: string, unit: MetricUnit, value: number): this {
    if (RESERVED_NAMES.has(name)) throw new RangeError(`metric ${name}: the name is EMF's own`);
    if (!Number.isFinite(value)) throw new RangeError(`metric ${name}: ${value} is not a number`);
    const metric = this.stored.get(name) ?? { unit, values: [] };
    if (metric.unit !== unit) throw new RangeError(`metric ${name}: ${unit}, not ${metric.unit}`);
    metric.values.push(value);
    this.stored.set(name, metric);
    if (metric.values.length >= EMF_LIMITS.values || this.stored.size >= EMF_LIMITS.metrics) {
      this.publishStoredMetrics();
    }
    return this;
  }

  /** Writes what was recorded as one EMF document, and forgets it. */
  publishStoredMetrics(): void {
    const stored = [...this.stored];
    this.stored = new Map();
    if (this.disabled || stored.length === 0) return;
    const document = {
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: this.namespace,
            Dimensions: [['service']],
            Metrics: stored.map(([name, { unit }]) => ({ Name: name, Unit: unit })),
          },
        ],
      },
      service: SERVICE_NAME,
      ...Object.fromEntries(
        stored.map(([name, { values }]) => [name, values.length === 1 ? values[0] : values]),
      ),
    };
    this.write(`${JSON.stringify(document)}\n`);
  }
}

const INVOCATION_METRICS = scopeKey<Metrics>('metrics');

/** Metrics recorded outside any invocation (as a function loads), written with the next flush. */
const processMetrics = new Metrics();

/** A buffer for an invocation's scope: its metrics, written once at its end. */
export function invocationMetrics(): ScopeEntry {
  return entry(INVOCATION_METRICS, new Metrics());
}

/** Writes what the invocation running now recorded (and anything recorded outside one). */
export function publishInvocationMetrics(): void {
  processMetrics.publishStoredMetrics();
  fromScope(INVOCATION_METRICS)?.publishStoredMetrics();
}

/** Where the functions record a metric: the running invocation's buffer. */
export const metrics = {
  addMetric(name: string, unit: MetricUnit, value: number): void {
    (fromScope(INVOCATION_METRICS) ?? processMetrics).addMetric(name, unit, value);
  },
};

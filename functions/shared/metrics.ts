/**
 * The functions' metrics, written as CloudWatch embedded metric format (EMF): one JSON document
 * on stdout, which CloudWatch Logs turns into metrics under the stage's namespace
 * (METRICS_NAMESPACE, set by the stack), with the dimension `service` — and a metric recorded
 * by version (`byVersion`), by `FunctionName` and by `FunctionName` and `FunctionVersion`
 * instead, what the deploy judges compare one version with another by (infra/alarms.ts). The
 * deploy check's invocations (lib/deploy-check.ts) write theirs with the dimension `traffic` =
 * `deploy-check` besides: other metrics than the callers', which no alarm reads; their metrics
 * by version are dropped. An invocation records its
 * metrics in a buffer of its own (./scope.ts), written at its end, together
 * (./dynamodb-calls.ts, recordInvocation): invocations that share a process never write each
 * other's. METRICS_DISABLED=true drops them (local runs and tests). Both settings are read from
 * the environment once, as the module loads (Lambda's init): a container's environment does not
 * change while it runs. Why not Powertools: docs/architecture.md, "Functions".
 */
import {
  DEPLOY_CHECK_TRAFFIC,
  METRICS_NAMESPACE,
  METRICS_NAMESPACE_ENV,
  SERVICE_NAME,
  VERSION_DIMENSIONS,
} from '../../lib/metrics.ts';
import { entry, fromScope, scopeKey, type ScopeEntry } from './scope.ts';

export const MetricUnit = { Count: 'Count', Milliseconds: 'Milliseconds', Bytes: 'Bytes' } as const;
export type MetricUnit = (typeof MetricUnit)[keyof typeof MetricUnit];

/** EMF's limits: metrics per document, values per metric. Reaching one writes a document. */
export const EMF_LIMITS = { metrics: 100, values: 100 } as const;
/** Top-level members of a document that are not metrics: its metadata and its dimensions. */
const RESERVED_NAMES = new Set(['_aws', 'service', 'traffic', ...VERSION_DIMENSIONS]);

/** The function and version an invocation ran: what a metric recorded by version is filed under. */
export interface RunningVersion {
  readonly functionName: string;
  readonly functionVersion: string;
}

export interface MetricsOptions {
  readonly namespace?: string;
  readonly disabled?: boolean;
  readonly write?: (line: string) => void;
  /** The invocation's function and version, for the metrics recorded by version. */
  readonly version?: RunningVersion;
  /** The deploy check's invocation: its metrics apart from the callers'. */
  readonly deployCheck?: boolean;
}

/** The container's settings, from the environment the stack sets, read once. */
const SETTINGS = {
  namespace: process.env[METRICS_NAMESPACE_ENV] ?? METRICS_NAMESPACE,
  disabled: process.env.METRICS_DISABLED === 'true',
} as const;

export class Metrics {
  private stored = new Map<string, { unit: MetricUnit; values: number[]; byVersion: boolean }>();
  private readonly namespace: string;
  private readonly disabled: boolean;
  private readonly write: (line: string) => void;
  private readonly version: RunningVersion | undefined;
  private readonly deployCheck: boolean;

  constructor({
    namespace = SETTINGS.namespace,
    disabled = SETTINGS.disabled,
    write = (line: string): void => void process.stdout.write(line),
    version,
    deployCheck = false,
  }: MetricsOptions = {}) {
    this.namespace = namespace;
    this.disabled = disabled;
    this.write = write;
    this.version = version;
    this.deployCheck = deployCheck;
  }

  /**
   * Records a value; a name, unit or value EMF cannot carry is a bug, thrown at once.
   * `byVersion`: filed by function and version (without them, by service), never for the
   * deploy check.
   */
  addMetric(
    name: string,
    unit: MetricUnit,
    value: number,
    { byVersion = false }: { readonly byVersion?: boolean } = {},
  ): this {
    if (RESERVED_NAMES.has(name)) throw new RangeError(`metric ${name}: the name is EMF's own`);
    if (!Number.isFinite(value)) throw new RangeError(`metric ${name}: ${value} is not a number`);
    if (byVersion && this.deployCheck) return this;
    const metric = this.stored.get(name) ?? { unit, values: [], byVersion };
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
    const version = this.version;
    const versioned = stored.filter(([, metric]) => metric.byVersion && version);
    const byService = stored.filter((item) => !versioned.includes(item));
    const entry = (dimensions: string[][], metrics: typeof stored) => ({
      Namespace: this.namespace,
      Dimensions: dimensions,
      Metrics: metrics.map(([name, { unit }]) => ({ Name: name, Unit: unit })),
    });
    const document = {
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          ...(byService.length > 0
            ? [entry(this.deployCheck ? [['service', 'traffic']] : [['service']], byService)]
            : []),
          ...(versioned.length > 0
            ? [entry([[VERSION_DIMENSIONS[0]], [...VERSION_DIMENSIONS]], versioned)]
            : []),
        ],
      },
      service: SERVICE_NAME,
      ...(this.deployCheck ? { traffic: DEPLOY_CHECK_TRAFFIC } : {}),
      ...(versioned.length > 0 && version
        ? { FunctionName: version.functionName, FunctionVersion: version.functionVersion }
        : {}),
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
export function invocationMetrics(
  options: Pick<MetricsOptions, 'version' | 'deployCheck'> = {},
): ScopeEntry {
  return entry(INVOCATION_METRICS, new Metrics(options));
}

/** Writes what the invocation running now recorded (and anything recorded outside one). */
export function publishInvocationMetrics(): void {
  processMetrics.publishStoredMetrics();
  fromScope(INVOCATION_METRICS)?.publishStoredMetrics();
}

/** Where the functions record a metric: the running invocation's buffer. */
export const metrics = {
  addMetric(
    name: string,
    unit: MetricUnit,
    value: number,
    options?: { readonly byVersion?: boolean },
  ): void {
    (fromScope(INVOCATION_METRICS) ?? processMetrics).addMetric(name, unit, value, options);
  },
};

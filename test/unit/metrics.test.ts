import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  EMF_LIMITS,
  Metrics,
  MetricUnit,
  type MetricsOptions,
} from '../../functions/shared/metrics.ts';

/**
 * The module as a new container loads it, with the environment as stubbed now (it reads its
 * settings once, as it loads), and the scope module it shares its invocations' scopes with.
 */
async function loadedInContainer() {
  vi.resetModules();
  const loaded = await import('../../functions/shared/metrics.ts');
  const { scoped } = await import('../../functions/shared/scope.ts');
  return { ...loaded, scoped };
}

/** Metrics whose EMF documents are kept, parsed. */
function capturing(options: Omit<MetricsOptions, 'write'> = {}) {
  const documents: Record<string, unknown>[] = [];
  const metrics = new Metrics({
    namespace: 'StoreOrders/test',
    disabled: false,
    ...options,
    write: (line) => {
      expect(line.endsWith('\n') && !line.slice(0, -1).includes('\n')).toBe(true);
      documents.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { metrics, documents };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the functions’ metrics (CloudWatch embedded metric format)', () => {
  it('writes what a call recorded as one EMF document under the namespace, by service', () => {
    const { metrics, documents } = capturing();
    const before = Date.now();
    metrics.addMetric('ListOrdersSent', MetricUnit.Count, 3);
    metrics.addMetric('DynamoDbCallDuration', MetricUnit.Milliseconds, 4.5);
    metrics.addMetric('DynamoDbCallDuration', MetricUnit.Milliseconds, 7);
    // Held until published.
    expect(documents).toEqual([]);
    metrics.publishStoredMetrics();
    expect(documents).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'StoreOrders/test',
              Dimensions: [['service']],
              Metrics: [
                { Name: 'ListOrdersSent', Unit: 'Count' },
                { Name: 'DynamoDbCallDuration', Unit: 'Milliseconds' },
              ],
            },
          ],
        },
        service: 'store-orders',
        ListOrdersSent: 3,
        DynamoDbCallDuration: [4.5, 7],
      },
    ]);
    const { Timestamp } = documents[0]!._aws as { Timestamp: number };
    expect(Number.isInteger(Timestamp) && Timestamp >= before && Timestamp <= Date.now()).toBe(
      true,
    );
    // Written once: the next call starts empty.
    metrics.publishStoredMetrics();
    expect(documents).toHaveLength(1);
  });

  it('files a metric recorded by version by function, and by function and version, beside those by service', () => {
    const { metrics, documents } = capturing({
      version: { functionName: 'store-orders-test-listOrders', functionVersion: '7' },
    });
    metrics.addMetric('TimeToFirstByte', MetricUnit.Milliseconds, 41.5, { byVersion: true });
    metrics.addMetric('ListOrdersSent', MetricUnit.Count, 3);
    metrics.publishStoredMetrics();
    expect(documents).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'StoreOrders/test',
              Dimensions: [['service']],
              Metrics: [{ Name: 'ListOrdersSent', Unit: 'Count' }],
            },
            {
              Namespace: 'StoreOrders/test',
              Dimensions: [['FunctionName'], ['FunctionName', 'FunctionVersion']],
              Metrics: [{ Name: 'TimeToFirstByte', Unit: 'Milliseconds' }],
            },
          ],
        },
        service: 'store-orders',
        FunctionName: 'store-orders-test-listOrders',
        FunctionVersion: '7',
        ListOrdersSent: 3,
        TimeToFirstByte: 41.5,
      },
    ]);
    // Without a version to file it by (outside Lambda), by service.
    const plain = capturing();
    plain.metrics.addMetric('TimeToFirstByte', MetricUnit.Milliseconds, 2, { byVersion: true });
    plain.metrics.publishStoredMetrics();
    expect(plain.documents[0]).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Dimensions: [['service']] }] },
      TimeToFirstByte: 2,
    });
  });

  it("files the deploy check's metrics apart (dimension traffic), and drops its metrics by version", () => {
    const { metrics, documents } = capturing({
      deployCheck: true,
      version: { functionName: 'store-orders-test-cancelOrder', functionVersion: '7' },
    });
    metrics.addMetric('InternalErrors', MetricUnit.Count, 1);
    metrics.addMetric('TimeToFirstByte', MetricUnit.Milliseconds, 12, { byVersion: true });
    metrics.publishStoredMetrics();
    expect(documents).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'StoreOrders/test',
              Dimensions: [['service', 'traffic']],
              Metrics: [{ Name: 'InternalErrors', Unit: 'Count' }],
            },
          ],
        },
        service: 'store-orders',
        traffic: 'deploy-check',
        InternalErrors: 1,
      },
    ]);
  });

  it('writes a document when a metric reaches 100 values, so none is dropped by CloudWatch', () => {
    expect(EMF_LIMITS).toEqual({ metrics: 100, values: 100 });
    const { metrics, documents } = capturing();
    for (let i = 0; i < 101; i++) {
      metrics.addMetric('DynamoDbCallDuration', MetricUnit.Milliseconds, i);
    }
    expect(documents).toHaveLength(1);
    expect(documents[0]!.DynamoDbCallDuration).toHaveLength(100);
    metrics.publishStoredMetrics();
    expect(documents[1]!.DynamoDbCallDuration).toBe(100);
  });

  it('writes a document when it holds 100 metrics', () => {
    const { metrics, documents } = capturing();
    for (let i = 0; i < 101; i++) metrics.addMetric(`Metric${i}`, MetricUnit.Count, i);
    expect(documents).toHaveLength(1);
    const [emf] = documents as [{ _aws: { CloudWatchMetrics: [{ Metrics: unknown[] }] } }];
    expect(emf._aws.CloudWatchMetrics[0].Metrics).toHaveLength(100);
    // The 101st is held for the next document.
    metrics.publishStoredMetrics();
    expect(documents).toHaveLength(2);
    expect(documents[1]).toMatchObject({ Metric100: 100 });
    expect(documents[1]).not.toHaveProperty('Metric99');
  });

  it('refuses what EMF cannot carry: its own names, a value that is no number, a second unit', () => {
    const { metrics } = capturing();
    expect(() => metrics.addMetric('service', MetricUnit.Count, 1)).toThrow(RangeError);
    expect(() => metrics.addMetric('_aws', MetricUnit.Count, 1)).toThrow(RangeError);
    expect(() => metrics.addMetric('ListResponseBytes', MetricUnit.Bytes, NaN)).toThrow(RangeError);
    expect(() => metrics.addMetric('ListResponseBytes', MetricUnit.Bytes, Infinity)).toThrow(
      RangeError,
    );
    metrics.addMetric('ListResponseBytes', MetricUnit.Bytes, 10);
    expect(() => metrics.addMetric('ListResponseBytes', MetricUnit.Count, 1)).toThrow(RangeError);
  });

  it('writes nothing when disabled, and forgets what was recorded', () => {
    const { metrics, documents } = capturing({ disabled: true });
    metrics.addMetric('InternalErrors', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(documents).toEqual([]);
    // Forgotten: the name takes another unit now, which a metric still held would refuse.
    expect(() => metrics.addMetric('InternalErrors', MetricUnit.Bytes, 1)).not.toThrow();
  });

  it('writes nothing when METRICS_DISABLED is true', async () => {
    vi.stubEnv('METRICS_DISABLED', 'true');
    const { Metrics } = await loadedInContainer();
    const written: string[] = [];
    const metrics = new Metrics({ write: (line) => void written.push(line) });
    metrics.addMetric('RateLimited', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(written).toEqual([]);
  });

  it('reads its namespace and switch from the environment the stack sets', async () => {
    vi.stubEnv('METRICS_NAMESPACE', 'StoreOrders/staging');
    vi.stubEnv('METRICS_DISABLED', 'false');
    const { Metrics } = await loadedInContainer();
    const written: string[] = [];
    const metrics = new Metrics({ write: (line) => void written.push(line) });
    metrics.addMetric('RateLimited', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(JSON.parse(written[0]!)).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'StoreOrders/staging' }] },
      RateLimited: 1,
    });
  });

  it('reads the environment once, as the container loads it, not for each invocation', async () => {
    vi.stubEnv('METRICS_NAMESPACE', 'StoreOrders/staging');
    vi.stubEnv('METRICS_DISABLED', 'false');
    const { Metrics } = await loadedInContainer();
    // What the environment says after the load is not read again.
    vi.stubEnv('METRICS_NAMESPACE', 'StoreOrders/production');
    vi.stubEnv('METRICS_DISABLED', 'true');
    const written: string[] = [];
    const metrics = new Metrics({ write: (line) => void written.push(line) });
    metrics.addMetric('RateLimited', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(JSON.parse(written[0]!)).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'StoreOrders/staging' }] },
    });
  });

  it('keeps each invocation’s metrics its own: two interleaved invocations write one document each', async () => {
    vi.stubEnv('METRICS_DISABLED', 'false');
    const {
      invocationMetrics,
      metrics: functionMetrics,
      publishInvocationMetrics,
      scoped,
    } = await loadedInContainer();
    const written: string[] = [];
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    const invoke = (name: string) =>
      scoped(
        () => [invocationMetrics()],
        async () => {
          functionMetrics.addMetric(name, MetricUnit.Count, 1);
          await new Promise(setImmediate);
          functionMetrics.addMetric(name, MetricUnit.Count, 2);
          await new Promise(setImmediate);
          publishInvocationMetrics();
        },
      )(undefined, undefined);
    try {
      await Promise.all([invoke('First'), invoke('Second')]);
    } finally {
      out.mockRestore();
    }
    const documents = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(documents.map(({ First, Second }) => ({ First, Second }))).toEqual([
      { First: [1, 2], Second: undefined },
      { First: undefined, Second: [1, 2] },
    ]);
  });
});

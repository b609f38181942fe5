import { afterEach, describe, expect, it, vi } from 'vitest';
import { EMF_LIMITS, Metrics, MetricUnit } from '../../functions/shared/metrics.ts';

/** Metrics whose EMF documents are kept, parsed. */
function capturing(options: { namespace?: string; disabled?: boolean } = {}) {
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
    expect(metrics.hasStoredMetrics()).toBe(true);
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
    expect(metrics.hasStoredMetrics()).toBe(false);
    metrics.publishStoredMetrics();
    expect(documents).toHaveLength(1);
  });

  it('writes a document when a metric reaches 100 values, so none is dropped by CloudWatch', () => {
    const { metrics, documents } = capturing();
    for (let i = 0; i < EMF_LIMITS.values + 1; i++) {
      metrics.addMetric('DynamoDbCallDuration', MetricUnit.Milliseconds, i);
    }
    expect(documents).toHaveLength(1);
    expect(documents[0]!.DynamoDbCallDuration).toHaveLength(EMF_LIMITS.values);
    metrics.publishStoredMetrics();
    expect(documents[1]!.DynamoDbCallDuration).toBe(EMF_LIMITS.values);
  });

  it('writes nothing when disabled, and forgets what was recorded', () => {
    const { metrics, documents } = capturing({ disabled: true });
    metrics.addMetric('InternalErrors', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(documents).toEqual([]);
    expect(metrics.hasStoredMetrics()).toBe(false);
  });

  it('reads its namespace and switch from the environment the stack sets', () => {
    vi.stubEnv('METRICS_NAMESPACE', 'StoreOrders/staging');
    vi.stubEnv('METRICS_DISABLED', 'false');
    const written: string[] = [];
    const metrics = new Metrics({ write: (line) => void written.push(line) });
    metrics.addMetric('RateLimited', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
    expect(JSON.parse(written[0]!)).toMatchObject({
      _aws: { CloudWatchMetrics: [{ Namespace: 'StoreOrders/staging' }] },
      RateLimited: 1,
    });
  });
});

/**
 * The time to an HTTP function's first byte: from the start of its chain to its answer's status
 * line and headers (middy writes them once the chain has answered, then streams a body), error
 * answers included, recorded by version as TimeToFirstByte (./metrics.ts): the latency the deploy
 * judges compare a new version's with (infra/alarms.ts), a streamed list's included, whose
 * duration is the whole list's. Lambda's own time before the handler (a cold start) is not in it.
 */
import type { MiddlewareObj, Request } from '@middy/core';
import { METRIC_NAMES } from '../../lib/metrics.ts';
import { metrics, MetricUnit } from './metrics.ts';

const STARTED = Symbol('first byte: started');

/** To `.use()` after the middleware that publishes the metrics (its `after` then runs first). */
export function timeToFirstByte(): MiddlewareObj {
  const internal = (request: Request) => request.internal as Record<symbol, number | undefined>;
  const answered = (request: Request): void => {
    const started = internal(request)[STARTED];
    if (started === undefined) return;
    const ms = Math.round((performance.now() - started) * 10) / 10;
    metrics.addMetric(METRIC_NAMES.timeToFirstByte, MetricUnit.Milliseconds, ms, {
      byVersion: true,
    });
  };
  return {
    before: (request) => {
      internal(request)[STARTED] = performance.now();
    },
    after: answered,
    onError: answered,
  };
}

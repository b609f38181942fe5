/** The emulator's access log context: what an exchange logs, from its `$context` variables. */
import { describe, expect, it } from 'vitest';
import {
  accessLogLine,
  CUT_SHORT_MESSAGES,
  cutShort,
  newExchange,
  requestTimeText,
} from '../../local/access-log-context.ts';

const ARRIVED = Date.UTC(2026, 10, 3, 4, 5, 6, 789);

describe('$context.requestTime', () => {
  it('is written as API Gateway writes it: CLF, UTC, two-digit fields', () => {
    expect(requestTimeText(ARRIVED)).toBe('03/Nov/2026:04:05:06 +0000');
    expect(requestTimeText(Date.UTC(2027, 0, 31, 23, 59, 59))).toBe('31/Jan/2027:23:59:59 +0000');
  });
});

describe('an exchange', () => {
  it('starts with nothing sent and nothing known past its arrival', () => {
    const exchange = newExchange('r-1', ARRIVED, 'GET', 'HTTP/1.1', undefined);
    expect(JSON.parse(accessLogLine(exchange, ARRIVED + 12))).toEqual({
      requestId: 'r-1',
      extendedRequestId: 'r-1',
      requestTime: '03/Nov/2026:04:05:06 +0000',
      requestTimeEpochMs: String(ARRIVED),
      keyId: '-',
      sourceIp: '-',
      httpMethod: 'GET',
      stage: '-',
      resourcePath: '-',
      protocol: 'HTTP/1.1',
      status: '-',
      responseLength: '0',
      responseLatencyMs: '12',
      integrationLatencyMs: '-',
      integrationStatus: '-',
      authorizerLatencyMs: '-',
      errorType: '-',
      // Not the emulator's: API Gateway's X-Ray trace id, which it has none of.
      xrayTraceId: '-',
      errorMessage: '-',
    });
  });

  it('is logged with what the gateway filled in, in the stack’s format', () => {
    const exchange = newExchange('r-2', ARRIVED, 'DELETE', 'HTTP/1.1', '127.0.0.1');
    Object.assign(exchange, {
      stage: 'v1',
      resourcePath: '/store/orders/{orderId}',
      principalId: 'anonymous',
      status: 401,
      responseLength: 80,
      authorizerLatency: 3,
      errorType: 'ACCESS_DENIED',
      errorMessage: 'User is not authorized',
    });
    expect(JSON.parse(accessLogLine(exchange, ARRIVED + 5))).toMatchObject({
      requestId: 'r-2',
      keyId: 'anonymous',
      sourceIp: '127.0.0.1',
      httpMethod: 'DELETE',
      stage: 'v1',
      resourcePath: '/store/orders/{orderId}',
      status: '401',
      responseLength: '80',
      responseLatencyMs: '5',
      integrationLatencyMs: '-',
      authorizerLatencyMs: '3',
      errorType: 'ACCESS_DENIED',
      errorMessage: 'User is not authorized',
    });
  });

  it('cut short is logged as cut by whoever cut it first: the other side’s close that follows changes nothing', () => {
    for (const [first, then] of [
      ['service', 'client'],
      ['client', 'service'],
    ] as const) {
      const exchange = newExchange('r-3', ARRIVED, 'GET', 'HTTP/1.1', '127.0.0.1');
      Object.assign(exchange, { status: 200, integrationStatus: 200 });
      expect(cutShort(exchange, first)).toBe(true);
      expect(cutShort(exchange, then)).toBe(false);
      expect(JSON.parse(accessLogLine(exchange, ARRIVED + 9))).toMatchObject({
        status: '200',
        errorType: '-',
        errorMessage: CUT_SHORT_MESSAGES[first],
      });
    }
    expect(CUT_SHORT_MESSAGES.service).not.toBe(CUT_SHORT_MESSAGES.client);
  });
});

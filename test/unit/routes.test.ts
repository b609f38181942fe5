import { describe, expect, it } from 'vitest';
import { methodsByPath, resolveRoute, ROUTES } from '../../lib/api/routes.ts';
import {
  GATEWAY_RESPONSES,
  gatewayAnswer,
  methodNotAllowedAnswer,
} from '../../lib/api/gateway-responses.ts';
import { ERROR_CATALOGUE } from '../../lib/api/errors.ts';

describe('resolveRoute', () => {
  it('matches the two operations, with decoded path parameters', () => {
    expect(resolveRoute('GET', '/store/orders')).toMatchObject({
      kind: 'matched',
      match: { route: { operationId: 'listOrders' } },
    });
    expect(resolveRoute('DELETE', '/store/orders/4%32')).toMatchObject({
      kind: 'matched',
      match: { route: { operationId: 'cancelOrder' }, pathParameters: { orderId: '42' } },
    });
  });

  it('answers method-not-allowed with the methods of a known path', () => {
    expect(resolveRoute('POST', '/store/orders')).toEqual({
      kind: 'method-not-allowed',
      allow: ['GET'],
    });
    expect(resolveRoute('GET', '/store/orders/1')).toEqual({
      kind: 'method-not-allowed',
      allow: ['DELETE'],
    });
  });

  it.each(['/', '/store', '/store/order', '/store/orders/1/items', '/pets/1', '/store/orders//'])(
    'does not know %s',
    (path) => {
      expect(resolveRoute('GET', path).kind).toBe('not-found');
    },
  );

  it('declares one method per path today', () => {
    expect([...methodsByPath().entries()]).toEqual([
      ['/store/orders', ['GET']],
      ['/store/orders/{orderId}', ['DELETE']],
    ]);
    expect(ROUTES.filter((r) => r.streaming).map((r) => r.operationId)).toEqual(['listOrders']);
  });
});

describe('gateway answers', () => {
  it('every gateway response is an Error of the catalogue with a JSON content type', () => {
    for (const { type, code } of GATEWAY_RESPONSES) {
      const answer = gatewayAnswer(type);
      expect(answer.status).toBe(ERROR_CATALOGUE[code].status);
      expect(answer.body).toEqual({
        code,
        message: ERROR_CATALOGUE[code].message,
        status: answer.status,
      });
      expect(answer.headers['Content-Type']).toBe('application/json');
    }
  });

  it('401 carries WWW-Authenticate, unknown paths answer 404 ROUTE_NOT_FOUND', () => {
    expect(gatewayAnswer('UNAUTHORIZED').headers['WWW-Authenticate']).toBe(
      'Bearer realm="store-orders"',
    );
    expect(gatewayAnswer('MISSING_AUTHENTICATION_TOKEN')).toMatchObject({
      status: 404,
      body: { code: 'ROUTE_NOT_FOUND' },
    });
    expect(gatewayAnswer('AUTHORIZER_FAILURE')).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '1' },
    });
  });

  it('405 lists the allowed methods', () => {
    expect(methodNotAllowedAnswer(['GET'])).toMatchObject({
      status: 405,
      headers: { Allow: 'GET' },
      body: { code: 'METHOD_NOT_ALLOWED' },
    });
  });
});

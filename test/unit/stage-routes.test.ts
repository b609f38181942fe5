/**
 * The emulator's routing: the stage taken from the path in one place, each stage routed by its
 * own table, and what follows (the authorizer's method ARN) reading the stage from the routed
 * request.
 */
import { describe, expect, it } from 'vitest';
import { API_STAGE, ROUTES, STAGE_ROUTES, type RouteDefinition } from '../../lib/api/routes.ts';
import { methodArn } from '../../local/proxy-event.ts';
import { routeRequest, splitStage, type StageRoutes } from '../../local/stage-routes.ts';

/** The service's stage beside a second one with a table of its own. */
const TWO_STAGES: StageRoutes = {
  [API_STAGE]: ROUTES,
  beta: [
    { operationId: 'listOrders', method: 'GET', path: '/pets', streaming: true },
    {
      operationId: 'cancelOrder',
      method: 'DELETE',
      path: '/store/orders/{orderId}',
      streaming: false,
    },
  ] satisfies RouteDefinition[],
};

describe('the stage of a path', () => {
  it('is its first segment, when that names a stage; the rest is the path within it', () => {
    expect(splitStage('/v1/store/orders/4%32', STAGE_ROUTES)).toEqual({
      stage: 'v1',
      stagePath: '/store/orders/4%32',
    });
    expect(splitStage('/v1', STAGE_ROUTES)).toEqual({ stage: 'v1', stagePath: '/' });
  });

  it.each(['/', '/store/orders', '/v1x/store/orders', '/V1/store/orders', '/beta/pets', '//v1'])(
    'is none for %s: no route at all',
    (path) => {
      expect(splitStage(path, STAGE_ROUTES)).toBeUndefined();
      expect(routeRequest('GET', path)).toEqual({ kind: 'not-found' });
    },
  );
});

describe('a request routed', () => {
  it('to an operation of the service’s stage, with its stage, the path within it and decoded parameters', () => {
    expect(routeRequest('DELETE', '/v1/store/orders/4%32')).toEqual({
      kind: 'matched',
      routed: {
        stage: 'v1',
        stagePath: '/store/orders/4%32',
        route: ROUTES[1],
        pathParameters: { orderId: '42' },
      },
    });
  });

  it('by its stage’s own table: a path of one stage is unknown in another', () => {
    expect(routeRequest('GET', '/beta/pets', TWO_STAGES)).toMatchObject({
      kind: 'matched',
      routed: { stage: 'beta', route: { operationId: 'listOrders', path: '/pets' } },
    });
    expect(routeRequest('GET', '/v1/pets', TWO_STAGES)).toEqual({ kind: 'not-found' });
    expect(routeRequest('GET', '/beta/store/orders', TWO_STAGES)).toEqual({ kind: 'not-found' });
    expect(routeRequest('GET', '/beta/store/orders/7', TWO_STAGES)).toEqual({
      kind: 'method-not-allowed',
      allow: ['DELETE'],
    });
  });

  it('is checked by the authorizer against its own stage’s method ARN', () => {
    const arnOf = (method: string, path: string) => {
      const resolution = routeRequest(method, path, TWO_STAGES);
      if (resolution.kind !== 'matched') throw new Error(`${path} is not routed`);
      return methodArn(resolution.routed);
    };
    expect(arnOf('DELETE', '/v1/store/orders/7')).toBe(
      'arn:aws:execute-api:local:000000000000:local/v1/DELETE/store/orders/7',
    );
    expect(arnOf('DELETE', '/beta/store/orders/7')).toBe(
      'arn:aws:execute-api:local:000000000000:local/beta/DELETE/store/orders/7',
    );
  });
});

/**
 * The route tables of the API: the one place where stages, paths, methods and operations are
 * declared. The local emulator routes with them, the CDK stack builds API Gateway's resources and
 * stages from them, and the tests check the OpenAPI documents against them.
 *
 * Each version of the API is a stage of one REST API, its name the last segment of the base
 * address (`…/v1`, `…/v2`). API Gateway's stages share one tree of resources and methods: a path
 * and method that several stages serve has one integration, which a stage variable points at
 * each stage's function (infra/api-routes.ts), so that it streams the same way in every stage.
 */
export const API_STAGES = ['v1', 'v2'] as const;
export type ApiStage = (typeof API_STAGES)[number];

/** The first version's stage: the base address of v1. */
export const API_STAGE: ApiStage = 'v1';

export type HttpMethod = 'GET' | 'DELETE';

export type OperationId = 'listOrders' | 'cancelOrder' | 'listOrderPages';

export interface RouteDefinition {
  readonly operationId: OperationId;
  readonly method: HttpMethod;
  /** Resource path in API Gateway syntax, e.g. `/store/orders/{orderId}`. */
  readonly path: string;
  /** Whether the function streams its response (API Gateway `responseTransferMode: STREAM`). */
  readonly streaming: boolean;
}

const CANCEL_ORDER: RouteDefinition = {
  operationId: 'cancelOrder',
  method: 'DELETE',
  path: '/store/orders/{orderId}',
  streaming: false,
};

/** v1: every order as one streamed array, and the cancel. */
export const ROUTES: readonly RouteDefinition[] = [
  { operationId: 'listOrders', method: 'GET', path: '/store/orders', streaming: true },
  CANCEL_ORDER,
];

/**
 * v2: the orders a query selects, a page at a time (the same path as v1's list, so it streams as
 * v1's does: one integration serves both stages), and the cancel, unchanged.
 */
export const ROUTES_V2: readonly RouteDefinition[] = [
  { operationId: 'listOrderPages', method: 'GET', path: '/store/orders', streaming: true },
  CANCEL_ORDER,
];

/** Each stage's route table. */
export const STAGE_ROUTES: Readonly<Record<ApiStage, readonly RouteDefinition[]>> = {
  v1: ROUTES,
  v2: ROUTES_V2,
};

/**
 * Every operation some version serves (each once, in route-table order): the functions that
 * answer HTTP requests, which the stack's alarms, log queries and monitoring watch as such.
 */
export const HTTP_OPERATIONS: ReadonlySet<OperationId> = new Set(
  API_STAGES.flatMap((apiStage) => STAGE_ROUTES[apiStage].map((route) => route.operationId)),
);

export interface RouteMatch {
  readonly route: RouteDefinition;
  readonly pathParameters: Record<string, string>;
}

export type RouteResolution =
  | { kind: 'matched'; match: RouteMatch }
  | { kind: 'method-not-allowed'; allow: readonly HttpMethod[] }
  | { kind: 'not-found' };

/** The methods declared on each resource path, in route-table order. */
export function methodsByPath(
  routes: readonly RouteDefinition[] = ROUTES,
): Map<string, HttpMethod[]> {
  const byPath = new Map<string, HttpMethod[]>();
  for (const route of routes) {
    byPath.set(route.path, [...(byPath.get(route.path) ?? []), route.method]);
  }
  return byPath;
}

function matchPath(template: string, path: string): Record<string, string> | undefined {
  const templateParts = template.split('/');
  const pathParts = path.split('/');
  if (templateParts.length !== pathParts.length) return undefined;
  const parameters: Record<string, string> = {};
  for (let i = 0; i < templateParts.length; i++) {
    const expected = templateParts[i] as string;
    const actual = pathParts[i] as string;
    const parameter = /^\{(\w+)\}$/.exec(expected);
    if (parameter) {
      if (actual === '') return undefined;
      parameters[parameter[1] as string] = actual;
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return parameters;
}

/**
 * Resolves a method and a stage-relative path (`/store/orders/42`) as API Gateway does: a known
 * path with another method is "method not allowed", an unknown path is "not found".
 * Path parameters come back percent-decoded.
 */
export function resolveRoute(
  method: string,
  path: string,
  routes: readonly RouteDefinition[] = ROUTES,
): RouteResolution {
  const normalised = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  for (const [template, methods] of methodsByPath(routes)) {
    const parameters = matchPath(template, normalised);
    if (!parameters) continue;
    const route = routes.find((r) => r.path === template && r.method === method);
    if (!route) return { kind: 'method-not-allowed', allow: methods };
    const decoded: Record<string, string> = {};
    for (const [name, value] of Object.entries(parameters)) {
      try {
        decoded[name] = decodeURIComponent(value);
      } catch {
        decoded[name] = value;
      }
    }
    return { kind: 'matched', match: { route, pathParameters: decoded } };
  }
  return { kind: 'not-found' };
}

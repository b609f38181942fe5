/**
 * The route table of the API: the one place where paths, methods and operations are declared.
 * The local emulator routes with it, the CDK stack builds API Gateway resources from it, and the
 * tests check the OpenAPI document against it.
 */
export const API_STAGE = 'v1';

export type HttpMethod = 'GET' | 'DELETE';

export interface RouteDefinition {
  readonly operationId: 'listOrders' | 'cancelOrder';
  readonly method: HttpMethod;
  /** Resource path in API Gateway syntax, e.g. `/store/orders/{orderId}`. */
  readonly path: string;
  /** Whether the function streams its response (API Gateway `responseTransferMode: STREAM`). */
  readonly streaming: boolean;
}

export const ROUTES = [
  { operationId: 'listOrders', method: 'GET', path: '/store/orders', streaming: true },
  {
    operationId: 'cancelOrder',
    method: 'DELETE',
    path: '/store/orders/{orderId}',
    streaming: false,
  },
] as const satisfies readonly RouteDefinition[];

export type OperationId = (typeof ROUTES)[number]['operationId'];

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

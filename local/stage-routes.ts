/**
 * The emulator's routing (./gateway.ts): which stage a request's path names, and which of that
 * stage's routes. The stage is taken from the path here and nowhere else; what follows (the
 * method ARN the authorizer checks, the proxy event's `path` and `requestContext.stage`) reads it
 * from the routed request. Each stage has a route table of its own: a stage is served by adding
 * it, with its table, to the stages the gateway is given (the service's, STAGE_ROUTES, by default).
 */
import {
  resolveRoute,
  STAGE_ROUTES,
  type HttpMethod,
  type RouteDefinition,
  type RouteMatch,
} from '../lib/api/routes.ts';

/** Stage name → its route table (paths relative to the stage, as in lib/api/routes.ts). */
export type StageRoutes = Readonly<Record<string, readonly RouteDefinition[]>>;

/** A request routed to an operation of a stage. */
export interface RoutedRequest extends RouteMatch {
  readonly stage: string;
  /** The path as sent, without its stage (`/v1/store/orders/4%32` → `/store/orders/4%32`). */
  readonly stagePath: string;
}

export type StageResolution =
  | { kind: 'matched'; routed: RoutedRequest }
  | { kind: 'method-not-allowed'; allow: readonly HttpMethod[] }
  | { kind: 'not-found' };

/**
 * The stage a path begins with and the rest of the path (`/v1` → `/`), or undefined when its
 * first segment is no stage: such a path has no route at all.
 */
export function splitStage(
  path: string,
  stages: StageRoutes,
): { stage: string; stagePath: string } | undefined {
  const [, stage = '', rest = ''] = /^\/([^/]*)(.*)$/s.exec(path) ?? [];
  return Object.hasOwn(stages, stage) ? { stage, stagePath: rest || '/' } : undefined;
}

/**
 * Routes a method and a path as sent (`/v1/store/orders/42`): its stage's route decides, as
 * resolveRoute does for one table (an unknown path is not found, a known path with another method
 * is not allowed).
 */
export function routeRequest(
  method: string,
  path: string,
  stages: StageRoutes = STAGE_ROUTES,
): StageResolution {
  const staged = splitStage(path, stages);
  if (!staged) return { kind: 'not-found' };
  const resolution = resolveRoute(method, staged.stagePath, stages[staged.stage]);
  if (resolution.kind !== 'matched') return resolution;
  return { kind: 'matched', routed: { ...staged, ...resolution.match } };
}

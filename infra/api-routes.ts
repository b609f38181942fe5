/**
 * API Gateway's methods from the route tables (lib/api/routes.ts): one integration per path and
 * method, shared by every version (stage) of the REST API, which invokes the function's `live`
 * alias (deploys move it: ./deployments.ts); where versions serve a path and method with
 * different functions, a stage variable names each stage's function. The 405 of a known path's
 * other methods is a mock integration, answered before authentication.
 */
import { Duration } from 'aws-cdk-lib';
import {
  AuthorizationType,
  AwsIntegration,
  Integration,
  LambdaIntegration,
  MockIntegration,
  PassthroughBehavior,
  ResponseTransferMode,
  type IAuthorizer,
  type RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { methodNotAllowedAnswer } from '../lib/api/gateway-responses.ts';
import {
  API_STAGE,
  API_STAGES,
  methodsByPath,
  type ApiStage,
  type HttpMethod,
  type RouteDefinition,
} from '../lib/api/routes.ts';
import { FUNCTIONS, type FunctionName } from '../lib/functions.ts';
import type { ServiceFunction } from './constructs/service-function.ts';

/** Header values in API Gateway mappings are literals in single quotes. */
export const literal = (value: string) => `'${value}'`;

/** Request body types the 405 mock maps (API Gateway selects templates by exact type). */
const MOCK_CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
  'application/xml',
  'text/xml',
  'application/octet-stream',
];

/** A path and method of the API, and the route each version (stage) serves it with. */
export interface RouteSlot {
  readonly path: string;
  readonly method: HttpMethod;
  readonly byStage: Readonly<Record<ApiStage, RouteDefinition>>;
  /** Whether every version serves it with the same function. */
  readonly shared: boolean;
}

/**
 * The route of each path and method in every version, computed once. API Gateway's stages share
 * one tree of methods, so every version must serve the same paths and methods, streamed the same
 * way.
 */
export function routeSlots(
  stageRoutes: Readonly<Record<ApiStage, readonly RouteDefinition[]>>,
): RouteSlot[] {
  const slots: RouteSlot[] = [];
  for (const [path, methods] of methodsByPath(stageRoutes[API_STAGE])) {
    for (const method of methods) {
      const byStage = {} as Record<ApiStage, RouteDefinition>;
      for (const apiStage of API_STAGES) {
        const route = stageRoutes[apiStage].find((r) => r.path === path && r.method === method);
        if (!route) throw new Error(`${method} ${path} is in ${API_STAGE} but not in ${apiStage}`);
        if (route.streaming !== byStage[API_STAGE]?.streaming && apiStage !== API_STAGE) {
          throw new Error(`${method} ${path} streams in one version and not in another`);
        }
        byStage[apiStage] = route;
      }
      const operations = new Set(API_STAGES.map((apiStage) => byStage[apiStage].operationId));
      slots.push({ path, method, byStage, shared: operations.size === 1 });
    }
  }
  return slots;
}

/** A path and method as a name: `GET_store_orders` (with `separator` between its words). */
function slotName(slot: Pick<RouteSlot, 'path' | 'method'>, separator: string): string {
  return `${slot.method}${slot.path.replace(/[^A-Za-z0-9]+/g, separator)}`;
}

/** The stage variable that names the function of a path and method whose function differs by version. */
function functionVariable(slot: Pick<RouteSlot, 'path' | 'method'>): string {
  return `${slotName(slot, '_')}Function`;
}

/** A version's stage variables: the function of each path and method whose function differs. */
export function stageVariables(
  slots: readonly RouteSlot[],
  apiStage: ApiStage,
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const slot of slots.filter((s) => !s.shared)) {
    variables[functionVariable(slot)] =
      functions[slot.byStage[apiStage].operationId].live.functionArn;
  }
  return variables;
}

/**
 * The integration of a path and method, and API Gateway's permission to invoke its function in
 * each version, through the function's `live` alias (which deploys move: ./deployments.ts). The
 * alias's ARN (`…:function:<name>:live`) goes in the invocation path: Lambda's Invoke and
 * InvokeWithResponseStream (the lists stream) both take a name with a qualifier. One function in
 * every version: its ARN, as it is; a function that differs by version: the stage variable that
 * names it (API Gateway substitutes it per stage).
 */
function integrationOf(
  api: RestApi,
  slot: RouteSlot,
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
): Integration {
  const route = slot.byStage[API_STAGE];
  const options = {
    responseTransferMode: route.streaming
      ? ResponseTransferMode.STREAM
      : ResponseTransferMode.BUFFERED,
    ...(route.streaming
      ? {
          timeout: Duration.seconds(
            Math.max(
              ...API_STAGES.map((s) => FUNCTIONS[slot.byStage[s].operationId].timeoutSeconds),
            ),
          ),
        }
      : {}),
  };
  const principal = new ServicePrincipal('apigateway.amazonaws.com');
  const permit = (apiStage: ApiStage) =>
    functions[slot.byStage[apiStage].operationId].live.addPermission(
      `ApiPermission.${apiStage}.${slotName(slot, '.')}`,
      {
        principal,
        // A path parameter is any value: `{orderId}` → `*`, as API Gateway's method ARNs match.
        sourceArn: api.arnForExecuteApi(
          slot.method,
          slot.path.replace(/\{[^}]+\}/g, '*'),
          apiStage,
        ),
      },
    );
  if (slot.shared) {
    // The integration permits its method in v1's stage; the other versions' stages too.
    for (const apiStage of API_STAGES.filter((s) => s !== API_STAGE)) permit(apiStage);
    return new LambdaIntegration(functions[route.operationId].live, { proxy: true, ...options });
  }
  for (const apiStage of API_STAGES) permit(apiStage);
  const target = `\${stageVariables.${functionVariable(slot)}}`;
  return new AwsIntegration({
    proxy: true,
    service: 'lambda',
    path: route.streaming
      ? `2021-11-15/functions/${target}/response-streaming-invocations`
      : `2015-03-31/functions/${target}/invocations`,
    options,
  });
}

/**
 * Every path and method of the route tables on the API: the integration of each, behind the
 * authorizer and named by its operation, and an `ANY` method per path that answers 405 with
 * `Allow` before authentication.
 */
export function addMethods(
  api: RestApi,
  slots: readonly RouteSlot[],
  functions: Readonly<Record<FunctionName, ServiceFunction>>,
  authorizer: IAuthorizer,
): void {
  for (const [path, methods] of methodsByPath(slots.map((slot) => slot.byStage[API_STAGE]))) {
    const resource = api.root.resourceForPath(path);
    for (const slot of slots.filter((s) => s.path === path)) {
      const { operationId } = slot.byStage[API_STAGE];
      resource.addMethod(slot.method, integrationOf(api, slot, functions), {
        authorizer,
        authorizationType: AuthorizationType.CUSTOM,
        // The same in every version (a test holds them to it), as the OpenAPI documents name it.
        operationName: operationId,
      });
    }
    // Any other method on a known path: 405 with Allow, before authentication.
    const answer = methodNotAllowedAnswer(methods);
    const status = String(answer.status);
    resource.addMethod(
      'ANY',
      new MockIntegration({
        // The mock reads its status from the mapped body: map every common body type, so that
        // a POST with a form or text body gets the 405 too. The only integration response is
        // the default one, so any status the mock sees maps to 405.
        passthroughBehavior: PassthroughBehavior.WHEN_NO_MATCH,
        requestTemplates: Object.fromEntries(
          MOCK_CONTENT_TYPES.map((type) => [type, '{"statusCode": 200}']),
        ),
        integrationResponses: [
          {
            statusCode: status,
            responseTemplates: { 'application/json': JSON.stringify(answer.body) },
            responseParameters: Object.fromEntries(
              Object.entries(answer.headers).map(([name, value]) => [
                `method.response.header.${name}`,
                literal(value),
              ]),
            ),
          },
        ],
      }),
      {
        authorizationType: AuthorizationType.NONE,
        methodResponses: [
          {
            statusCode: status,
            responseParameters: Object.fromEntries(
              Object.keys(answer.headers).map((name) => [`method.response.header.${name}`, true]),
            ),
          },
        ],
      },
    );
  }
}

/**
 * A REST API proxy event as API Gateway hands it to a function behind the authorizer, built
 * from a route of a stage: for callers that invoke a function without a gateway in front (the
 * deploy hooks' probes, the cold-start benchmark, the tests). Each header and query parameter
 * has one value. (The local emulator builds its events from real HTTP requests:
 * local/proxy-event.ts.)
 */
export interface RestEventInput {
  readonly stage: string;
  readonly method: string;
  /** The route's path template (`/store/orders/{orderId}`). */
  readonly resource: string;
  /** The path within the stage (`/store/orders/42`). */
  readonly path: string;
  readonly pathParameters?: Readonly<Record<string, string>> | null;
  readonly headers?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>> | null;
  /** The authorizer's context, as API Gateway passes it (strings). */
  readonly authorizer: Readonly<Record<string, string>>;
  readonly requestId: string;
  readonly requestTimeEpoch?: number;
}

const multiValue = (values: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, [value]]));

export function restProxyEvent(input: RestEventInput) {
  const headers = input.headers ?? {};
  return {
    resource: input.resource,
    path: input.path,
    httpMethod: input.method,
    headers,
    multiValueHeaders: multiValue(headers),
    queryStringParameters: input.query ?? null,
    multiValueQueryStringParameters: input.query ? multiValue(input.query) : null,
    pathParameters: input.pathParameters ?? null,
    stageVariables: null,
    requestContext: {
      authorizer: input.authorizer,
      httpMethod: input.method,
      path: `/${input.stage}${input.path}`,
      requestId: input.requestId,
      ...(input.requestTimeEpoch !== undefined ? { requestTimeEpoch: input.requestTimeEpoch } : {}),
      resourcePath: input.resource,
      stage: input.stage,
    },
    body: null,
    isBase64Encoded: false,
  };
}

/**
 * The API-key authorizer (API Gateway TOKEN authorizer). Allows a known, active key with a
 * policy that covers every method of the stage (the result is cached by token), and hands the
 * caller's key id, plan and limits to the functions as context. Throwing `Unauthorized` is how
 * a TOKEN authorizer answers 401; any other error becomes AUTHORIZER_FAILURE (503).
 */
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { authenticate, callerToContext } from '../lib/keys/authenticate.ts';
import type { KeyStore } from '../lib/keys/key-store.ts';
import { keyStoreFromEnv } from './shared/dependencies.ts';
import { logger } from './shared/logger.ts';
import { tracer } from './shared/tracer.ts';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';

export interface AuthorizerDependencies {
  readonly keys: () => KeyStore;
  readonly now?: () => Date;
}

/**
 * `arn:aws:execute-api:region:account:apiId/stage/*\/*` from the method ARN of any route, so the
 * cached policy covers every method and path of the stage.
 */
export function stageWideResource(methodArn: string): string {
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*/*`;
}

export function createAuthorizerHandler(deps: AuthorizerDependencies) {
  return middy(
    async (event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
      const caller = await authenticate(
        deps.keys(),
        event.authorizationToken,
        deps.now?.() ?? new Date(),
      );
      if (!caller) {
        logger.info('API key refused');
        throw new Error('Unauthorized');
      }
      return {
        principalId: caller.keyId,
        policyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Action: 'execute-api:Invoke',
              Effect: 'Allow',
              Resource: stageWideResource(event.methodArn),
            },
          ],
        },
        context: callerToContext(caller),
      };
    },
  )
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger));
}

let store: KeyStore | undefined;
export const handler = createAuthorizerHandler({ keys: () => (store ??= keyStoreFromEnv()) });

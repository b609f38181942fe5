/** The one classification of failed DynamoDB calls (lib/dynamodb/errors.ts). */
import { describe, expect, it } from 'vitest';
import { classifyDynamoDbError } from '../../lib/dynamodb/errors.ts';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('classifyDynamoDbError', () => {
  it.each([
    'ECONNRESET',
    'ECONNREFUSED',
    'EPROTO',
    'EPIPE',
    'EAI_AGAIN',
    'ENETDOWN',
    'ERR_STREAM_PREMATURE_CLOSE',
    'ERR_SOCKET_CONNECTION_TIMEOUT',
    'UND_ERR_SOCKET',
  ])('takes a network failure with code %s for transient (retrying later can work)', (code) => {
    expect(classifyDynamoDbError(withCode(code))).toEqual({
      kind: 'transient',
      reason: 'connection',
    });
  });

  it.each([
    ['a bug (TypeError)', new TypeError('x is not a function')],
    ['an error with a code that is no network failure', withCode('ERR_INVALID_ARG_TYPE')],
    ['a certificate the client refuses', withCode('CERT_HAS_EXPIRED')],
    ['a thrown string', 'boom'],
  ])('takes %s for permanent', (_, error) => {
    expect(classifyDynamoDbError(error).kind).toBe('permanent');
  });

  it('takes a service answer by its name before any code', () => {
    const denied = Object.assign(withCode('ECONNRESET'), {
      name: 'AccessDeniedException',
      $metadata: { httpStatusCode: 400 },
    });
    expect(classifyDynamoDbError(denied)).toEqual({ kind: 'permanent', reason: 'access-denied' });
  });
});

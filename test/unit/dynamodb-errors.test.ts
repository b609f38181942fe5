/** The one classification of failed DynamoDB calls (lib/dynamodb/errors.ts). */
import { describe, expect, it } from 'vitest';
import { wasNotDelivered } from '../../lib/dynamodb/undelivered.ts';
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

describe('wasNotDelivered', () => {
  it('takes a connection never established within its timeout for not delivered', () => {
    const error = Object.assign(
      new Error(
        '@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 1000 ms.',
      ),
      { name: 'TimeoutError' },
    );
    expect(wasNotDelivered(error)).toBe(true);
    expect(wasNotDelivered(new Error('wrapped', { cause: error }))).toBe(true);
  });

  it.each([
    ['a reset seen after the request went out', withCode('ECONNRESET', 'socket hang up')],
    [
      'an attempt that timed out waiting for the answer',
      Object.assign(new Error('x'), { name: 'TimeoutError' }),
    ],
    ['anything else', new Error('boom')],
  ])('does not take %s for not delivered (it may have been applied)', (_, error) => {
    expect(wasNotDelivered(error)).toBe(false);
  });
});

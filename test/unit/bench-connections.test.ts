/**
 * What bench:cold-init sees of a process on the network: the connections it opens, the DynamoDB
 * calls it sends (recorded from the wire), and those calls grouped as they were in flight.
 */
import { once } from 'node:events';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countConnections,
  describeWaves,
  inWaves,
  recordDynamoDbCalls,
  replayOrder,
} from '../../bench/connections.ts';

let server: Server;
let port: number;

beforeAll(async () => {
  // Answers each call after 50 ms, so that calls sent at once are in flight together.
  server = createServer((req, res) => {
    req.resume();
    req.once('end', () => setTimeout(() => res.end('{}'), 50));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function call(agent: Agent, operation: string, input: object): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', agent }, (res) => {
      res.resume();
      res.once('end', resolve);
    });
    req.setHeader('X-Amz-Target', `DynamoDB_20120810.${operation}`);
    req.once('error', reject);
    req.end(JSON.stringify(input));
  });
}

describe('countConnections', () => {
  it('counts the sockets opened: one per call in flight at once, none for a reused one', async () => {
    const agent = new Agent({ keepAlive: true });
    const connections = countConnections();
    try {
      await Promise.all([1, 2, 3].map((n) => call(agent, 'Query', { n })));
      expect(connections.opened()).toBe(3);
      await call(agent, 'GetItem', {});
      expect(connections.opened()).toBe(3);
    } finally {
      connections.stop();
      agent.destroy();
    }
  });

  it('counts nothing after stop()', async () => {
    const agent = new Agent({ keepAlive: true });
    const connections = countConnections();
    connections.stop();
    await call(agent, 'GetItem', {});
    agent.destroy();
    expect(connections.opened()).toBe(0);
  });
});

describe('recordDynamoDbCalls and inWaves', () => {
  it('records each call from the wire and groups the calls as they were in flight', async () => {
    const agent = new Agent({ keepAlive: true });
    const recording = recordDynamoDbCalls();
    try {
      await Promise.all([
        call(agent, 'BatchGetItem', { RequestItems: {} }),
        call(agent, 'UpdateItem', { Key: { id: { S: 'k' } } }),
      ]);
      await Promise.all([1, 2, 3].map((n) => call(agent, 'Query', { n })));
      await call(agent, 'UpdateItem', { last: true });
    } finally {
      recording.stop();
      agent.destroy();
    }
    const { calls } = recording;
    expect(calls.map((c) => c.operation)).toEqual([
      'BatchGetItem',
      'UpdateItem',
      'Query',
      'Query',
      'Query',
      'UpdateItem',
    ]);
    expect(calls[1]?.input).toEqual({ Key: { id: { S: 'k' } } });
    expect(calls.every((c) => c.answered !== undefined && c.answered >= c.sent)).toBe(true);
    const waves = inWaves(calls).map((wave) => wave.map((c) => c.operation));
    expect(waves).toEqual([
      ['BatchGetItem', 'UpdateItem'],
      ['Query', 'Query', 'Query'],
      ['UpdateItem'],
    ]);
  });

  it('stops recording on stop() (requests end as before)', async () => {
    const agent = new Agent({ keepAlive: true });
    const recording = recordDynamoDbCalls();
    recording.stop();
    await call(agent, 'GetItem', {});
    agent.destroy();
    expect(recording.calls).toEqual([]);
  });

  it('starts a new wave only when a call of the current one was answered before it was sent', () => {
    const waves = inWaves([
      { id: 'c', sent: 5, answered: 20 },
      { id: 'a', sent: 0, answered: 10 },
      { id: 'b', sent: 1, answered: 4 },
      { id: 'd', sent: 21, answered: undefined },
      { id: 'e', sent: 22, answered: 30 },
    ]);
    expect(waves.map((wave) => wave.map((c) => c.id))).toEqual([['a', 'b'], ['c'], ['d', 'e']]);
  });
});

describe('replayOrder', () => {
  it('sends each call after the calls answered before it was sent, and only those', () => {
    // A cold list: the limiter's first write fails its condition and is sent again while the
    // version read is still in flight; the queries follow both.
    const replay = replayOrder([
      { id: 'query', sent: 45, answered: 60 },
      { id: 'version', sent: 0, answered: 40 },
      { id: 'limiter', sent: 1, answered: 25 },
      { id: 'limiter again', sent: 27, answered: 35 },
    ]);
    expect(replay.map(({ call, after }) => [call.id, after])).toEqual([
      ['version', []],
      ['limiter', []],
      ['limiter again', [1]],
      ['query', [0, 1, 2]],
    ]);
  });

  it('holds back no call of a wave (calls in flight together are sent together)', () => {
    const replay = replayOrder([
      { sent: 0, answered: 10 },
      { sent: 1, answered: 12 },
      { sent: 13, answered: 20 },
      { sent: 13.5, answered: 21 },
    ]);
    expect(replay.map(({ after }) => after)).toEqual([[], [], [0, 1], [0, 1]]);
  });
});

describe('describeWaves', () => {
  it('names each wave’s calls, counted, in order', () => {
    const op = (operation: string) => ({ operation });
    expect(
      describeWaves([
        [op('BatchGetItem'), op('UpdateItem')],
        [op('Query'), op('Query'), op('Query')],
        [op('UpdateItem')],
      ]),
    ).toBe('BatchGetItem ∥ UpdateItem → 3 × Query → UpdateItem');
  });
});

/**
 * Which failed requests provably never reached DynamoDB, so that a write that is not idempotent
 * (the rate limiter's counter) can be sent again without counting twice.
 *
 * Proof, from what the socket saw (checked against a real stale keep-alive connection):
 *  - the connection was never established: the connect or the DNS lookup failed (ECONNREFUSED,
 *    EHOSTUNREACH, ETIMEDOUT on connect, ENOTFOUND…) — no byte left this machine;
 *  - or the kernel refused to send the request (an error of the `write` itself, e.g.
 *    `write ECONNRESET` or EPIPE) before the request had been written whole: the connection was
 *    already reset when the request was to go out — a keep-alive socket the server closed while
 *    the client was not looking (after a Lambda thaw). A server never acts on a request whose
 *    body did not arrive whole.
 * Anything else — a reset or a close after the request went out (`socket hang up`, `read
 * ECONNRESET`), a timeout — may have been applied, and is not proof.
 *
 * The proof is taken where it can be: on the ClientRequest, by an Agent that watches each
 * request it is given. An error found undelivered is remembered (the SDK hands the same object
 * to the caller, or wraps it as `cause`).
 */
import { Agent as HttpAgent, type AgentOptions, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';

const undelivered = new WeakSet<object>();

/** Smithy's own error for a connection not established within connectionTimeout. */
const NOT_CONNECTED = /did not establish a connection/;

function watch(request: ClientRequest): void {
  request.prependListener('error', (error: NodeJS.ErrnoException) => {
    const syscall = error.syscall;
    const neverConnected = syscall === 'connect' || syscall === 'getaddrinfo';
    const refusedToSend = syscall === 'write' && !request.writableFinished;
    if (neverConnected || refusedToSend) undelivered.add(error);
  });
}

/** Whether a failed call provably never reached the server (itself or its causes). */
export function wasNotDelivered(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (undelivered.has(e)) return true;
    const message = (e as { message?: unknown }).message;
    if ((e as { name?: unknown }).name === 'TimeoutError' && typeof message === 'string') {
      if (NOT_CONNECTED.test(message)) return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

type AddRequest = (request: ClientRequest, options: unknown) => void;

/** The agent, watching every request it is given (Node's agents hand requests to addRequest). */
function watching<T extends HttpAgent>(agent: T): T {
  const target = agent as unknown as { addRequest: AddRequest };
  const addRequest = target.addRequest.bind(agent);
  target.addRequest = (request, options) => {
    watch(request);
    addRequest(request, options);
  };
  return agent;
}

/** Keep-alive agents (as the SDK's defaults) that watch every request for proof of non-delivery. */
export function deliveryWatchingAgents(
  options: AgentOptions & HttpsAgentOptions = { keepAlive: true, maxSockets: 50 },
): { httpAgent: HttpAgent; httpsAgent: HttpsAgent } {
  return {
    httpAgent: watching(new HttpAgent(options)),
    httpsAgent: watching(new HttpsAgent(options)),
  };
}

/** HTTP/1.1 over a raw socket: requests that fetch would refuse to send, answers read as they come. */
import { connect } from 'node:net';

export interface RawAnswer {
  /** 0 when the connection ended without a status line. */
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Reads one answer to `request` (bytes as given) from host:port; gives up after `timeoutMs`. */
export function rawRequest(
  port: number,
  request: string | Buffer,
  options: { head?: boolean; timeoutMs?: number } = {},
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(data, options.head ?? false));
    };
    const timer = setTimeout(settle, options.timeoutMs ?? 5_000);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (complete(data, options.head ?? false)) settle();
    });
    socket.on('error', settle);
    socket.on('close', settle);
    socket.write(request);
  });
}

function headerEnd(data: Buffer): number {
  return data.indexOf('\r\n\r\n');
}

function headersOf(head: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** The bytes after any interim answers (`100 Continue`). */
function finalAnswer(data: Buffer): Buffer {
  let rest = data;
  while (/^HTTP\/1\.[01] 1\d\d /.test(rest.toString('latin1', 0, 16))) {
    const end = headerEnd(rest);
    if (end < 0) break;
    rest = rest.subarray(end + 4);
  }
  return rest;
}

/** Whether a whole answer is in: by Content-Length, the last chunk, or nothing to wait for. */
function complete(all: Buffer, head: boolean): boolean {
  const data = finalAnswer(all);
  const end = headerEnd(data);
  if (end < 0) return false;
  const headers = headersOf(data.subarray(0, end).toString('latin1'));
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(data.toString('latin1', 0, 20))?.[1]);
  if (head || status === 204 || status === 304) return true;
  const body = data.subarray(end + 4);
  if (headers['content-length'] !== undefined)
    return body.length >= Number(headers['content-length']);
  if (headers['transfer-encoding'] === 'chunked') return body.includes('0\r\n\r\n');
  return false;
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(body.toString('latin1', at, lineEnd), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

function parse(all: Buffer, head: boolean): RawAnswer {
  const data = finalAnswer(all);
  const end = headerEnd(data);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(data.toString('latin1', 0, 20))?.[1] ?? 0);
  if (end < 0) return { status: 0, headers: {}, body: '' };
  const headers = headersOf(data.subarray(0, end).toString('latin1'));
  const rawBody = head ? Buffer.alloc(0) : data.subarray(end + 4);
  const body = headers['transfer-encoding'] === 'chunked' ? dechunk(rawBody) : rawBody;
  return { status, headers, body: body.toString('utf8') };
}

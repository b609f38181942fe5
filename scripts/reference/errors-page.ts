/**
 * docs/errors.md's generated part: every code of the error catalogue (lib/api/errors.ts), its
 * status and the answers API Gateway gives with it (lib/api/gateway-responses.ts), with what a
 * client should do (ERROR_GUIDE, typed by the catalogue: a code without guidance does not compile).
 */
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  ERROR_CATALOGUE,
  INDEX_NOT_READY_RETRY_AFTER_SECONDS,
  type ErrorCode,
} from '../../lib/api/errors.ts';
import { GATEWAY_RESPONSES } from '../../lib/api/gateway-responses.ts';
import { LIST_PARAMETERS, PAGE_SIZE_MAX } from '../../lib/orders/list-query.ts';
import { table } from './markdown.ts';

/** What a client reads of an error code besides its status: when, whether to retry, what to do. */
interface ErrorGuidance {
  readonly when: string;
  /** `no`, or when to send the request again. */
  readonly retry: string;
  readonly todo: string;
}

/** Guidance for every code of the catalogue (a code added there must be added here). */
export const ERROR_GUIDE = {
  BAD_REQUEST: {
    when: 'API Gateway could not take the request as HTTP (a client error it has no other code for). The local API (`npm start`) also answers it a request whose head or body has not arrived in full 29 s after it began, a malformed chunked body, or an HTTP/1.1 request without `Host`.',
    retry: 'no: the same request gets the same answer',
    todo: "Fix the request; look at what the client's HTTP library sends. Not counted against the key's limits.",
  },
  INVALID_ORDER_ID: {
    when: 'The `orderId` of a cancel is not a base-10 integer in the int64 range (at most 64 characters; leading zeros are accepted). The message quotes the id, or only the start of anything shaped like an API key.',
    retry: 'no',
    todo: 'Send the id as the list gave it, digit for digit: parse ids as 64-bit integers or strings, never as JavaScript numbers ([calling the API](clients.md)). Counted against the limits.',
  },
  UNKNOWN_PARAMETER: {
    when: `v2's list was given a query parameter it does not take: it takes ${LIST_PARAMETERS.map((p) => `\`${p}\``).join(', ')}, names matched exactly (case-sensitive). v1's list ignores query parameters.`,
    retry: 'no',
    todo: 'Correct or drop the parameter; the message names it. Counted against the limits.',
  },
  INVALID_PARAMETER: {
    when: `A v2 query parameter has a malformed value — a \`status\` other than \`pending\`, \`shipped\` or \`cancelled\`, a \`petId\` outside int64, a \`shipDateFrom\` or \`shipDateTo\` that is not an RFC 3339 date-time (a \`+\` in an offset must be sent as \`%2B\`), a \`complete\` other than \`true\` or \`false\`, a \`pageSize\` that is not a whole number from 1 (above ${PAGE_SIZE_MAX} is served as ${PAGE_SIZE_MAX}) — or a parameter other than \`status\` is given twice.`,
    retry: 'no',
    todo: 'Fix the value; the message names the parameter and quotes what it got. Counted against the limits.',
  },
  INVALID_DATE_RANGE: {
    when: '`shipDateFrom` is not before `shipDateTo` (from is inclusive, to exclusive): the range is empty or inverted.',
    retry: 'no',
    todo: 'Send a range whose start comes before its end. Counted against the limits.',
  },
  INVALID_PAGE_TOKEN: {
    when: 'The `pageToken` was altered or cut short, is of a version this API does not know, or was issued for other filters than the request has.',
    retry: 'no: the same token is refused again',
    todo: 'Send tokens back exactly as they came, with the filters of the page that gave them; to start again from the first page, leave `pageToken` out ([paging through v2](paging-v2.md)). Counted against the limits.',
  },
  UNAUTHORIZED: {
    when: 'The `Authorization` header is missing, is not `Bearer <key>`, or its key is unknown, revoked or expired. API Gateway answers it, with `WWW-Authenticate: Bearer realm="store-orders"`, and may keep a key\'s refusal for the authorizer cache\'s time ([settings](settings.md)).',
    retry: 'no: not with the same key',
    todo: 'Check the key you send (it starts `sok_`). A rotated key keeps working until the end of its grace; a key revoked or expired does not come back: ask the operators for a new one. Not counted against the limits.',
  },
  PERMISSION_DENIED: {
    when: 'The key may not make this request: a key that may only read asked to cancel (or one that may only cancel asked for a list or a page). Answered before anything else of the request is looked at: never a 304, nothing read or written of the orders. Each operation names the permission it needs in the OpenAPI documents (`x-permission`).',
    retry: 'no',
    todo: "Use a key that has the permission, or ask the operators to change this key's (`keys set-permissions`). Counted against the limits, like any request: a flood of them is limited and banned like any other.",
  },
  ORDER_NOT_FOUND: {
    when: 'A cancel of an id that no order has.',
    retry: 'no',
    todo: 'Check the id (every digit: an id read through a JavaScript number may have changed). Counted against the limits.',
  },
  ROUTE_NOT_FOUND: {
    when: 'A path the API does not have. API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Check the base address (it ends in `/v1` or `/v2`) and the path (`/store/orders`, `/store/orders/{orderId}`). Not counted against the limits.',
  },
  METHOD_NOT_ALLOWED: {
    when: 'A path the API has, with a method it does not take there. The `Allow` header lists the methods it takes. API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Use one of the methods of `Allow`. Not counted against the limits.',
  },
  NOT_ACCEPTABLE: {
    when: "v1's list (`GET /v1/store/orders`), when the request's `Accept-Encoding` refuses every coding the list can be sent in, identity included (`identity;q=0`, and none of `zstd`, `br`, `gzip` accepted). It carries `Vary: Accept-Encoding`.",
    retry: 'no',
    todo: 'Accept `identity`, or one of `zstd`, `br` and `gzip` ([compressed lists](clients.md#compressed-lists)). Counted against the limits.',
  },
  ORDER_ALREADY_SHIPPED: {
    when: 'A cancel of an order that has shipped. Nothing changed: a shipped order stays shipped, whatever races it.',
    retry: 'no',
    todo: 'Treat it as final: the order can no longer be cancelled. Counted against the limits.',
  },
  REQUEST_TOO_LARGE: {
    when: 'A request larger than 10 MB, or whose headers together pass 10,240 bytes (a long `If-None-Match` list, say). API Gateway answers it before authentication.',
    retry: 'no',
    todo: 'Send fewer or shorter headers. Not counted against the limits.',
  },
  RATE_LIMITED: {
    when: "The key is over its per-minute or per-day limit ([rate limits](rate-limits.md)); `Retry-After` says when a request will be admitted, exactly. Also the stage's throttle, a safety net for all keys together ([settings](settings.md#fixed-per-stage)): then with `Retry-After: 1` and no rate-limit headers.",
    retry:
      'yes, after `Retry-After` seconds and not sooner: a key that keeps sending sooner is banned',
    todo: 'Sleep `Retry-After`, then send; share one client (or one wait) per key. The [TypeScript client](../client/README.md) does this by itself. A refusal is not counted as a request.',
  },
  API_KEY_TEMPORARILY_BANNED: {
    when: 'The key kept sending before the `Retry-After` of its 429s, and is banned for a while ([the ban](rate-limits.md#the-temporary-ban)). The refusal that starts the ban says so, as does every request until it ends. `Retry-After` is the seconds left.',
    retry:
      'after `Retry-After` (the end of the ban); requests during a ban neither count nor extend it',
    todo: 'Make the client wait `Retry-After` after every 429: a client that does is never banned. Operators can lift a ban ([runbook](runbooks.md#a-customer-says-we-are-banned)).',
  },
  INTERNAL_ERROR: {
    when: 'A bug, a misconfiguration (a missing table, access denied) or stored data the service cannot read; also API Gateway, when a function failed without answering. The body carries no detail; the operators are paged.',
    retry: 'not soon: it does not pass by retrying (a cancel is safe to send again later)',
    todo: 'Tell the operators, with the request id the answer carried (`x-amzn-RequestId`).',
  },
  SERVICE_UNAVAILABLE: {
    when: `A dependency (DynamoDB) failed for a moment or did not answer within the request's time budget ([failures](failures.md)); the key check failed (API Gateway answers it then); a function did not answer in time; the rate limiter could not reach its counters; or a v2 filter whose index is not ready yet, after a deployment that adds it (\`Retry-After: ${INDEX_NOT_READY_RETRY_AFTER_SECONDS}\`). \`Retry-After\` is ${DEFAULT_RETRY_AFTER_SECONDS} s otherwise.`,
    retry: 'yes, after `Retry-After`, with exponential backoff and jitter if it repeats',
    todo: 'Retry. A 503 on a cancel may or may not have been applied: sending it again is safe (a cancel of a cancelled order answers 204) and converges. Counted against the limits, except when the rate limiter itself failed.',
  },
} as const satisfies Record<ErrorCode, ErrorGuidance>;

/** The heading of a code's section, and its anchor as GitHub makes it. */
const errorHeading = (code: ErrorCode) => `${ERROR_CATALOGUE[code].status} \`${code}\``;
const errorAnchor = (code: ErrorCode) => `${ERROR_CATALOGUE[code].status}-${code.toLowerCase()}`;

/** docs/errors.md's generated part: a table of the codes, then a section a code. */
export function errorsPart(): string {
  const codes = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).sort(
    (a, b) => ERROR_CATALOGUE[a].status - ERROR_CATALOGUE[b].status,
  );
  const summary = table([
    ['status', 'code', 'retry'],
    ...codes.map((code) => [
      String(ERROR_CATALOGUE[code].status),
      `[\`${code}\`](#${errorAnchor(code)})`,
      ERROR_GUIDE[code].retry.startsWith('no') ? 'no' : 'yes',
    ]),
  ]);
  const sections = codes.map((code) => {
    const guide: ErrorGuidance = ERROR_GUIDE[code];
    const gateway = GATEWAY_RESPONSES.filter((response) => response.code === code);
    const fromGateway =
      gateway.length === 0
        ? ''
        : `\n\nFrom API Gateway itself (without rate-limit headers, not counted): ${gateway.map((r) => r.when).join('; ')}.`;
    return [
      `### ${errorHeading(code)}`,
      '',
      `${guide.when}${fromGateway}`,
      '',
      `Default message: "${ERROR_CATALOGUE[code].message}"`,
      '',
      `**Retry:** ${guide.retry}. **Do:** ${guide.todo}`,
    ].join('\n');
  });
  return [summary, ...sections].join('\n\n');
}

/**
 * The query of `GET /v2/store/orders`, read from its parameters: the filters, the page size to
 * serve and where the page starts. Every parameter is optional; a request is refused, with a code
 * that says why (the error catalogue, lib/api/errors.ts, gives each its status), when it has:
 *
 * - UNKNOWN_PARAMETER: a parameter the list does not take (names are case-sensitive);
 * - INVALID_PARAMETER: a malformed value, or a parameter other than `status` given twice;
 * - INVALID_DATE_RANGE: `shipDateFrom` not before `shipDateTo` (an empty or inverted range);
 * - INVALID_PAGE_TOKEN: a token altered, cut short, of an unknown version, or made for other
 *   filters than the request's (./page-token.ts).
 *
 * Checked in that order, the first problem found is the answer. `status` may repeat (any of
 * them); repeats of one status count once. `pageSize` above PAGE_SIZE_MAX is served as
 * PAGE_SIZE_MAX (the answer says the size served); with a token it may differ from the previous
 * page's. An empty `pageToken` asks for the first page (AIP-158: an empty token is no token).
 */
import { quotableInput } from '../keys/api-key.ts';
import { parseInstant } from './instant.ts';
import { isOrderStatus, parseInt64, ORDER_STATUSES, type OrderStatus } from './order.ts';
import { normalizedStatuses, type OrderFilter, type PagePosition } from './order-filter.ts';
import { decodePageToken, type PageTokenProblem } from './page-token.ts';

export const PAGE_SIZE_DEFAULT = 50;
export const PAGE_SIZE_MAX = 100;
/** The most digits a `pageSize` may be written with (a larger value is served as PAGE_SIZE_MAX). */
export const PAGE_SIZE_DIGITS = 64;
const PAGE_SIZE_TEXT = new RegExp(`^\\d{1,${PAGE_SIZE_DIGITS}}$`);

export const LIST_PARAMETERS = [
  'status',
  'petId',
  'shipDateFrom',
  'shipDateTo',
  'complete',
  'pageSize',
  'pageToken',
] as const;
export type ListParameter = (typeof LIST_PARAMETERS)[number];

/** The codes a refused query answers with (entries of lib/api/errors.ts ERROR_CATALOGUE). */
export type ListQueryErrorCode =
  'UNKNOWN_PARAMETER' | 'INVALID_PARAMETER' | 'INVALID_DATE_RANGE' | 'INVALID_PAGE_TOKEN';

export interface ListQueryError {
  readonly code: ListQueryErrorCode;
  readonly message: string;
}

export interface ListQuery {
  readonly filter: OrderFilter;
  /** The page size served: the one asked for, at most PAGE_SIZE_MAX. */
  readonly pageSize: number;
  /** Where the page starts: after this position (from the token); absent on a first page. */
  readonly start?: PagePosition;
}

export type ListQueryResult = { readonly ok: ListQuery } | { readonly error: ListQueryError };

/** Query parameters in the order given, repeats included (URLSearchParams is one). */
export type QueryParameters = Iterable<readonly [name: string, value: string]>;

/**
 * API Gateway's `multiValueQueryStringParameters` as QueryParameters (in name order: the
 * gateway keeps no order across names, and no answer here depends on it).
 */
export function fromMultiValue(
  parameters: Readonly<Record<string, readonly string[] | undefined>> | null | undefined,
): [string, string][] {
  return Object.entries(parameters ?? {}).flatMap(([name, values]) =>
    (values ?? []).map((value): [string, string] => [name, value]),
  );
}

const isListParameter = (name: string): name is ListParameter =>
  (LIST_PARAMETERS as readonly string[]).includes(name);

const quoted = (value: string) => `"${quotableInput(value)}"`;

const TOKEN_MESSAGES: Record<PageTokenProblem, string> = {
  malformed:
    'pageToken is not a page token of this list: send the nextPageToken of a page as it came.',
  altered: 'pageToken was altered or cut short: send the nextPageToken of a page as it came.',
  'unknown-version': 'pageToken is of a version this service does not know.',
  'other-filters':
    'pageToken was issued for other filters: send the same status, petId, shipDateFrom, shipDateTo and complete as the page that issued it.',
};

/** Thrown inside the parser only: parseListQuery turns it into its result. */
class Refusal extends Error {
  readonly error: ListQueryError;
  constructor(code: ListQueryErrorCode, message: string) {
    super(message);
    this.error = { code, message };
  }
}

function dateTime(name: string, value: string): bigint {
  const instant = parseInstant(value);
  if (instant !== undefined) return instant;
  // A `+` left unencoded in a query string arrives as a space.
  const hint = /[Tt]\d{2}:\d{2}:\d{2}(\.\d+)? \d{2}:\d{2}$/.test(value)
    ? ' (a + in a query string must be sent as %2B)'
    : '';
  throw new Refusal(
    'INVALID_PARAMETER',
    `${name} must be an RFC 3339 date-time such as 2026-11-26T09:30:00Z or 2026-11-26T10:30:00.5+01:00, got ${quoted(value)}${hint}.`,
  );
}

function pageSizeOf(value: string): number {
  // Digits only: `1e2`, `+5`, `5.0` and `-1` are not page sizes; a huge one is served as the max.
  if (!PAGE_SIZE_TEXT.test(value) || /^0+$/.test(value)) {
    throw new Refusal(
      'INVALID_PARAMETER',
      `pageSize must be a whole number from 1 (above ${PAGE_SIZE_MAX} is served as ${PAGE_SIZE_MAX}), got ${quoted(value)}.`,
    );
  }
  return Number(BigInt(value) > BigInt(PAGE_SIZE_MAX) ? PAGE_SIZE_MAX : value);
}

function readQuery(parameters: QueryParameters): ListQuery {
  const values = new Map<ListParameter, string[]>();
  for (const [name, value] of parameters) {
    if (!isListParameter(name)) {
      throw new Refusal(
        'UNKNOWN_PARAMETER',
        `Unknown query parameter ${quoted(name)}: the list takes ${LIST_PARAMETERS.join(', ')}.`,
      );
    }
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  /** The one value of a parameter that may be given once. */
  const single = (name: ListParameter): string | undefined => {
    const given = values.get(name);
    if (given && given.length > 1) {
      throw new Refusal('INVALID_PARAMETER', `${name} may be given once.`);
    }
    return given?.[0];
  };

  const statusValues = values.get('status');
  let statuses: OrderStatus[] | undefined;
  if (statusValues) {
    for (const value of statusValues) {
      if (!isOrderStatus(value)) {
        throw new Refusal(
          'INVALID_PARAMETER',
          `status must be ${ORDER_STATUSES.join(', ')} (repeat it for several), got ${quoted(value)}.`,
        );
      }
    }
    statuses = normalizedStatuses(statusValues as OrderStatus[]);
  }
  const petText = single('petId');
  const petId = petText === undefined ? undefined : parseInt64(petText);
  if (petText !== undefined && petId === undefined) {
    throw new Refusal(
      'INVALID_PARAMETER',
      `petId must be a base-10 integer in the int64 range, got ${quoted(petText)}.`,
    );
  }
  const fromText = single('shipDateFrom');
  const toText = single('shipDateTo');
  const from = fromText === undefined ? undefined : dateTime('shipDateFrom', fromText);
  const to = toText === undefined ? undefined : dateTime('shipDateTo', toText);
  const completeText = single('complete');
  if (completeText !== undefined && completeText !== 'true' && completeText !== 'false') {
    throw new Refusal(
      'INVALID_PARAMETER',
      `complete must be true or false, got ${quoted(completeText)}.`,
    );
  }
  const sizeText = single('pageSize');
  const pageSize = sizeText === undefined ? PAGE_SIZE_DEFAULT : pageSizeOf(sizeText);
  const token = single('pageToken');

  if (from !== undefined && to !== undefined && from >= to) {
    throw new Refusal(
      'INVALID_DATE_RANGE',
      `shipDateFrom must be before shipDateTo (from inclusive, to exclusive): this range is ${from === to ? 'empty' : 'inverted'}.`,
    );
  }
  const filter: OrderFilter = {
    ...(statuses ? { statuses } : {}),
    ...(petId !== undefined ? { petId } : {}),
    ...(from !== undefined || to !== undefined
      ? {
          shipDate: {
            ...(from !== undefined ? { from } : {}),
            ...(to !== undefined ? { to } : {}),
          },
        }
      : {}),
    ...(completeText !== undefined ? { complete: completeText === 'true' } : {}),
  };
  if (token === undefined || token === '') return { filter, pageSize };
  const decoded = decodePageToken(token, filter);
  if ('problem' in decoded) {
    throw new Refusal('INVALID_PAGE_TOKEN', TOKEN_MESSAGES[decoded.problem]);
  }
  return { filter, pageSize, start: decoded.position };
}

/** The list's query from its parameters, or why it is refused. */
export function parseListQuery(parameters: QueryParameters): ListQueryResult {
  try {
    return { ok: readQuery(parameters) };
  } catch (error) {
    if (error instanceof Refusal) return { error: error.error };
    throw error;
  }
}

/**
 * The parameters of the next page's link: the request's own, in their order, each once (a
 * repeated status counts once, so the link does not grow with repeats: every other parameter is
 * refused when repeated, and every value is bounded), with `pageToken` replaced by the next
 * page's token.
 */
export function nextPageParameters(parameters: QueryParameters, token: string): [string, string][] {
  const seen = new Set<string>();
  const kept: [string, string][] = [];
  for (const [name, value] of parameters) {
    const pair = `${name}=${value}`;
    if (name === 'pageToken' || seen.has(pair)) continue;
    seen.add(pair);
    kept.push([name, value]);
  }
  return [...kept, ['pageToken', token]];
}

/**
 * CloudWatch metric math, as far as the deployment alarms use it, evaluated at one datapoint:
 * numbers, ids, `+ - * /`, comparisons (1 or 0), `AND`, `OR`, `IF(c, a, b)`, `FILL(m, v)`,
 * `LOG(x)` (natural). A metric with no datapoint is missing; arithmetic on a missing value is
 * missing, as is a division by zero; `FILL` gives a value to a missing one, and `IF` takes the
 * branch its condition picks (missing when the condition is). So a synthesized alarm's
 * expression can be judged on figures (test/infra/monitoring.test.ts, the table of
 * docs/deploy.md).
 */

type Value = number | undefined;

/** An alarm's query, as CloudFormation's `AWS::CloudWatch::Alarm` `Metrics` lists it. */
export interface AlarmQuery {
  readonly Id: string;
  readonly Expression?: string;
  readonly ReturnData?: boolean;
  readonly MetricStat?: {
    readonly Metric: {
      readonly Namespace: string;
      readonly MetricName: string;
      readonly Dimensions?: readonly { readonly Name: string; readonly Value: unknown }[];
    };
    readonly Stat: string;
  };
}

/** Each expression's tokens, read once (a simulation evaluates the same few expressions often). */
const TOKENS = new Map<string, readonly string[]>();

function tokenize(text: string): readonly string[] {
  const known = TOKENS.get(text);
  if (known) return known;
  const tokens = text.match(
    /\s*(>=|<=|==|!=|[-+*/(),<>]|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:e-?\d+)?)/g,
  );
  if (!tokens || tokens.join('').replace(/\s/g, '') !== text.replace(/\s/g, '')) {
    throw new Error(`metric math: cannot read ${text}`);
  }
  const read = tokens.map((t) => t.trim());
  TOKENS.set(text, read);
  return read;
}

/** Evaluates one expression, its ids given by `lookup`. */
export function evaluate(text: string, lookup: (id: string) => Value): Value {
  const tokens = tokenize(text);
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (expected !== undefined && token !== expected) {
      throw new Error(`metric math: expected ${expected}, got ${token} in ${text}`);
    }
    return token!;
  };
  const both = (a: Value, b: Value, f: (x: number, y: number) => number): Value =>
    a === undefined || b === undefined ? undefined : f(a, b);

  const primary = (): Value => {
    const token = take();
    if (token === '(') {
      const value = or();
      take(')');
      return value;
    }
    if (token === '-') {
      const value = primary();
      return value === undefined ? undefined : -value;
    }
    if (/^\d/.test(token)) return Number(token);
    if (peek() === '(') {
      take('(');
      const args: Value[] = [or()];
      while (peek() === ',') {
        take(',');
        args.push(or());
      }
      take(')');
      switch (token.toUpperCase()) {
        case 'IF':
          return args[0] === undefined ? undefined : args[0] !== 0 ? args[1] : args[2];
        case 'FILL':
          return args[0] ?? args[1];
        case 'LOG':
          return args[0] === undefined || args[0] <= 0 ? undefined : Math.log(args[0]);
        default:
          throw new Error(`metric math: no function ${token} here`);
      }
    }
    return lookup(token);
  };
  const product = (): Value => {
    let value = primary();
    while (peek() === '*' || peek() === '/') {
      const op = take();
      const right = primary();
      value = both(value, right, (x, y) => (op === '*' ? x * y : x / y));
      if (value !== undefined && !Number.isFinite(value)) value = undefined;
    }
    return value;
  };
  const sum = (): Value => {
    let value = product();
    while (peek() === '+' || peek() === '-') {
      const op = take();
      const right = product();
      value = both(value, right, (x, y) => (op === '+' ? x + y : x - y));
    }
    return value;
  };
  const comparison = (): Value => {
    const value = sum();
    const op = peek();
    if (op && ['>', '>=', '<', '<=', '==', '!='].includes(op)) {
      take();
      const right = sum();
      return both(value, right, (x, y) => {
        const result = {
          '>': x > y,
          '>=': x >= y,
          '<': x < y,
          '<=': x <= y,
          '==': x === y,
          '!=': x !== y,
        }[op]!;
        return result ? 1 : 0;
      });
    }
    return value;
  };
  const and = (): Value => {
    let value = comparison();
    while (peek()?.toUpperCase() === 'AND') {
      take();
      value = both(value, comparison(), (x, y) => (x !== 0 && y !== 0 ? 1 : 0));
    }
    return value;
  };
  const or = (): Value => {
    let value = and();
    while (peek()?.toUpperCase() === 'OR') {
      take();
      value = both(value, and(), (x, y) => (x !== 0 || y !== 0 ? 1 : 0));
    }
    return value;
  };
  const result = or();
  if (at !== tokens.length)
    throw new Error(`metric math: left over in ${text}: ${tokens.slice(at).join(' ')}`);
  return result;
}

/**
 * The value an alarm watches (its query with ReturnData), given each of its metrics' value at
 * one datapoint (`valueOf`, undefined: no datapoint).
 */
export function alarmValue(
  queries: readonly AlarmQuery[],
  valueOf: (stat: NonNullable<AlarmQuery['MetricStat']>) => Value,
): Value {
  const byId = new Map(queries.map((q) => [q.Id, q]));
  // Each query once: an expression that several others use is not evaluated again.
  const known = new Map<string, Value>();
  const lookup = (id: string): Value => {
    if (known.has(id)) return known.get(id);
    const query = byId.get(id);
    if (!query) throw new Error(`metric math: no query ${id}`);
    const value = query.MetricStat
      ? valueOf(query.MetricStat)
      : evaluate(query.Expression!, lookup);
    known.set(id, value);
    return value;
  };
  const watched = queries.filter((q) => q.ReturnData !== false);
  if (watched.length !== 1) throw new Error('metric math: an alarm returns exactly one query');
  return lookup(watched[0]!.Id);
}

/**
 * v2's pages stay exact while the store changes, through `npm start`: walkers read every page of
 * a filter (following the tokens) while writers cancel orders (through the API), ship orders
 * and import new ones (the operator's store, as the CLI does). An oracle knows every write — its
 * order, the state after it, and when it was sent and answered — and judges each walk:
 *  - no order appears twice, and the orders come in the filter's order (id, or ship date then id);
 *  - every order that matched the filter for the whole walk (untouched while it ran) appears;
 *  - every order that appears matched the filter at some moment of the walk.
 * A cursor that skips or repeats fails it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DynamoDbOrderStore } from '../../lib/dynamodb/orders-table.ts';
import { generateApiKey } from '../../lib/keys/api-key.ts';
import { parseInstant } from '../../lib/orders/instant.ts';
import type { Order, OrderStatus } from '../../lib/orders/order.ts';
import { localTableNames } from '../../local/local-stack.ts';
import { keysAndSeedArgs, startLocalApi, type LocalApi } from '../support/local-api.ts';
import { sendPolitely } from '../support/polite-client.ts';
import { createDocumentClient } from '../../lib/dynamodb/client.ts';
import { dynamodbEndpoint } from '../support/tables.ts';

const key = generateApiKey();
let api: LocalApi;
let store: DynamoDbOrderStore;
let client: ReturnType<typeof createDocumentClient>;

const SEEDED = 450;
const PETS = 5;
const DAY_MS = 86_400_000;
const FIRST_DAY = Date.UTC(2026, 11, 1);

/** A seeded order: mostly pending, some shipped and cancelled, over 5 pets and 30 days. */
function seeded(i: number): Order {
  const id = BigInt(i + 1);
  const status: OrderStatus = i % 10 < 7 ? 'pending' : i % 10 < 9 ? 'shipped' : 'cancelled';
  // Days repeat (ties by ship date are ordered by id); a few orders have no ship date.
  const day = (i * 7) % 30;
  return {
    id,
    petId: BigInt((i % PETS) + 1),
    quantity: 1,
    ...(i % 50 === 49 ? {} : { shipDate: new Date(FIRST_DAY + day * DAY_MS).toISOString() }),
    complete: status === 'shipped',
    status,
  };
}
const SEED = Array.from({ length: SEEDED }, (_, i) => seeded(i));

/** A filter, as a query and as a predicate on an order's state. */
interface Filter {
  readonly query: string;
  readonly matches: (order: Order) => boolean;
  readonly byDate: boolean;
}
const instant = (order: Order) => (order.shipDate ? parseInstant(order.shipDate) : undefined);
const inRange = (order: Order, from: number, to: number) => {
  const at = instant(order);
  return at !== undefined && at >= BigInt(from) * 1_000_000n && at < BigInt(to) * 1_000_000n;
};
const RANGE = { from: FIRST_DAY + 5 * DAY_MS, to: FIRST_DAY + 20 * DAY_MS };
const range = `shipDateFrom=${new Date(RANGE.from).toISOString()}&shipDateTo=${new Date(RANGE.to).toISOString()}`;
const FILTERS: readonly Filter[] = [
  { query: '', matches: () => true, byDate: false },
  { query: 'status=pending', matches: (o) => o.status === 'pending', byDate: false },
  { query: 'status=cancelled', matches: (o) => o.status === 'cancelled', byDate: false },
  {
    query: 'status=pending&status=shipped',
    matches: (o) => o.status === 'pending' || o.status === 'shipped',
    byDate: false,
  },
  { query: 'petId=2', matches: (o) => o.petId === 2n, byDate: false },
  {
    query: 'petId=3&status=pending',
    matches: (o) => o.petId === 3n && o.status === 'pending',
    byDate: false,
  },
  { query: range, matches: (o) => inRange(o, RANGE.from, RANGE.to), byDate: true },
  {
    query: `status=pending&${range}`,
    matches: (o) => o.status === 'pending' && inRange(o, RANGE.from, RANGE.to),
    byDate: true,
  },
  { query: 'complete=false', matches: (o) => o.complete === false, byDate: false },
];

/** One write the oracle knows: the order's state once it is answered, and when it ran. */
interface Write {
  readonly id: bigint;
  readonly after: Order;
  readonly sent: number;
  answered: number;
}

const writes: Write[] = [];
const initial = new Map(SEED.map((order) => [order.id, order]));

beforeAll(async () => {
  api = await startLocalApi({
    args: keysAndSeedArgs(
      [{ key, plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 10_000_000 } }],
      SEED,
    ),
  });
  client = createDocumentClient({ endpoint: dynamodbEndpoint() });
  store = new DynamoDbOrderStore(client, localTableNames(api.tablePrefix).orders);
});
afterAll(async () => {
  client?.destroy();
  await api?.stop();
});

const v2 = () => api.url.replace(/\/v1$/, '/v2');

async function record<T>(id: bigint, after: Order, write: () => Promise<T>): Promise<T> {
  const entry: Write = { id, after, sent: Date.now(), answered: Number.POSITIVE_INFINITY };
  writes.push(entry);
  const result = await write();
  entry.answered = Date.now();
  return result;
}

/** Between two writes of one writer: the writes spread over the walks. */
const WRITE_EVERY_MS = 60;

/** The writers, each on its own orders: cancels (API), ships (the store), imports (new ids). */
function startWriters(running: () => boolean) {
  const pending = SEED.filter((o) => o.status === 'pending');
  const cancels = (async () => {
    for (const order of pending.filter((o) => o.id % 3n === 0n)) {
      if (!running()) return;
      await sleep(WRITE_EVERY_MS);
      await record(order.id, { ...order, status: 'cancelled' }, async () => {
        const { answer } = await sendPolitely(() =>
          fetch(`${api.url}/store/orders/${order.id}`, {
            method: 'DELETE',
            headers: { Authorization: `Bearer ${key}` },
          }),
        );
        expect(answer.status).toBe(204);
      });
    }
  })();
  const ships = (async () => {
    for (const order of pending.filter((o) => o.id % 3n === 1n)) {
      if (!running()) return;
      await sleep(WRITE_EVERY_MS);
      await record(order.id, { ...order, status: 'shipped', complete: true }, () =>
        store.ship(order.id),
      );
    }
  })();
  const imports = (async () => {
    for (let batch = 0; running() && batch < 40; batch++) {
      await sleep(2 * WRITE_EVERY_MS);
      const orders = Array.from({ length: 5 }, (_, i) => seeded(SEEDED + batch * 5 + i));
      const sent = Date.now();
      const entries = orders.map((order) => ({
        id: order.id,
        after: order,
        sent,
        answered: Infinity,
      }));
      writes.push(...entries);
      await store.putOrders(orders);
      for (const entry of entries) entry.answered = Date.now();
    }
  })();
  return Promise.all([cancels, ships, imports]);
}

/** The order's state at `t`, when known: undefined when a write to it was in flight then. */
function stateAt(id: bigint, t: number): { known: boolean; order: Order | undefined } {
  let order = initial.get(id);
  for (const write of writes.filter((w) => w.id === id)) {
    if (write.answered <= t) order = write.after;
    else if (write.sent <= t) return { known: false, order: undefined };
  }
  return { known: true, order };
}

/** Whether a write to the order ran (or may have) during [from, to]. */
const touched = (id: bigint, from: number, to: number) =>
  writes.some((w) => w.id === id && w.sent <= to && w.answered >= from);

interface Walk {
  readonly filter: Filter;
  readonly started: number;
  readonly ended: number;
  readonly orders: Order[];
  readonly pages: number;
}

async function walk(filter: Filter, pageSize: number): Promise<Walk> {
  const started = Date.now();
  const orders: Order[] = [];
  let pages = 0;
  let token: string | undefined;
  do {
    const query = [filter.query, `pageSize=${pageSize}`, token ? `pageToken=${token}` : '']
      .filter(Boolean)
      .join('&');
    const { answer: response } = await sendPolitely(() =>
      fetch(`${v2()}/store/orders?${query}`, { headers: { Authorization: `Bearer ${key}` } }),
    );
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const page = JSON.parse(text, (k, value: unknown, context?: { source?: string }) =>
      (k === 'id' || k === 'petId') && typeof value === 'number' ? BigInt(context!.source!) : value,
    ) as { orders: Order[]; nextPageToken?: string };
    orders.push(...page.orders);
    token = page.nextPageToken;
    pages++;
  } while (token);
  return { filter, started, ended: Date.now(), orders, pages };
}

function sortKey(order: Order, byDate: boolean): [bigint, bigint] {
  return [byDate ? instant(order)! : 0n, order.id];
}

it('walks every filter exactly while cancels, ships and imports run: no order skipped, none repeated', async () => {
  let walking = true;
  const writers = startWriters(() => walking);
  const walks: Walk[] = [];
  try {
    // Two rounds over the filters, three walks at a time, pages of 4 to 16 orders.
    const queue = [...FILTERS, ...FILTERS].map((filter, i) => ({
      filter,
      size: 4 + ((i * 5) % 13),
    }));
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          walks.push(await walk(next.filter, next.size));
        }
      }),
    );
  } finally {
    walking = false;
    await writers;
  }

  const ids = new Set([...initial.keys(), ...writes.map((w) => w.id)]);
  let pages = 0;
  /** Orders that matched a whole walk, untouched, and were looked for in it. */
  let lookedFor = 0;
  for (const { filter, started, ended, orders, pages: walked } of walks) {
    pages += walked;
    const where = `${filter.query || 'no filter'} (${orders.length} orders, ${walked} pages)`;
    // Once each, in order.
    const seen = orders.map((o) => o.id);
    expect(new Set(seen).size, `${where}: an order came twice`).toBe(seen.length);
    for (let i = 1; i < orders.length; i++) {
      const [a, b] = [sortKey(orders[i - 1]!, filter.byDate), sortKey(orders[i]!, filter.byDate)];
      expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]), `${where}: out of order at ${i}`).toBe(
        true,
      );
    }
    // Every order that matched for the whole walk is there.
    const listed = new Set(seen);
    for (const id of ids) {
      const before = stateAt(id, started);
      if (!before.known || touched(id, started, ended)) continue;
      if (before.order && filter.matches(before.order)) {
        lookedFor++;
        expect(listed.has(id), `${where}: order ${id} matched the whole walk and was skipped`).toBe(
          true,
        );
      }
    }
    // Every order listed matched at some moment of the walk.
    for (const order of orders) {
      const states = [
        stateAt(order.id, started),
        ...writes.filter((w) => w.id === order.id).map((w) => ({ known: true, order: w.after })),
      ];
      const couldMatch = states.some(
        (s) => !s.known || (s.order !== undefined && filter.matches(s.order)),
      );
      expect(couldMatch, `${where}: order ${order.id} never matched`).toBe(true);
      expect(filter.matches(order), `${where}: order ${order.id} listed as it does not match`).toBe(
        true,
      );
    }
  }
  const [first, last] = [
    Math.min(...walks.map((w) => w.started)),
    Math.max(...walks.map((w) => w.ended)),
  ];
  const during = writes.filter((w) => w.sent >= first && w.answered <= last).length;
  const cancels = writes.filter((w) => w.after.status === 'cancelled' && initial.has(w.id)).length;
  const ships = writes.filter((w) => w.after.status === 'shipped' && initial.has(w.id)).length;
  const imported = writes.filter((w) => !initial.has(w.id)).length;
  console.log(
    `[v2-walks] ${walks.length} walks, ${pages} pages, ${walks.reduce((n, w) => n + w.orders.length, 0)} orders listed; beside ${cancels} cancels, ${ships} ships, ${imported} imported orders (${during} of the writes while walks ran); ${lookedFor} untouched matching orders looked for`,
  );
  expect(walks).toHaveLength(FILTERS.length * 2);
  // "No order skipped" was checked, not skipped itself: the writes left orders untouched.
  expect(lookedFor).toBeGreaterThan(walks.length);
  expect(during).toBeGreaterThan(100);
});

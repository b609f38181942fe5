/**
 * A race of full reads, cancels and conditional reads of one list (v1's list, or a v2 page),
 * through the local API: rounds of two reads, two conditional reads with a recently held tag and
 * up to two cancels, each after a random delay (test/support/seeded-random.ts). It records what
 * a client saw and finds every wrong 304: one answered to a client whose held body is stale
 * given a cancel acknowledged before the conditional request was sent. A 503 is sent again after
 * its Retry-After, as a client would (./polite-client.ts); `sent` is when the answered attempt
 * was sent, so the record stays exact.
 */
import { setTimeout as after } from 'node:timers/promises';
import { expect } from 'vitest';
import { sendPolitely, type Answered } from './polite-client.ts';
import { seededRandom } from './seeded-random.ts';

export interface RaceAnswer extends Answered {
  readonly body: string;
}

export interface RaceOptions {
  readonly rounds: number;
  readonly seed: number;
  /** The list read in full (answered 200, tagged or not). */
  readonly read: () => Promise<RaceAnswer>;
  /** The list read with `If-None-Match: tag`. */
  readonly readIf: (tag: string) => Promise<RaceAnswer>;
  /** The order to cancel now, from the latest body held (undefined: none this time). */
  readonly pickId: (
    latest: string | undefined,
    random: (n: number) => number,
  ) => number | undefined;
  readonly cancel: (id: number) => Promise<Answered>;
  /** How many cancels a round sends (quiet rounds, none: 304s are due in them). */
  readonly cancelsIn: (round: number) => number;
  /** Whether a held body does not show a cancel of `id` (a 304 for it after the cancel is wrong). */
  readonly stale: (body: string, id: number) => boolean;
}

export interface RaceRecord {
  /** Every (tag, body) pair a client received, in order. */
  readonly held: readonly { readonly tag: string; readonly body: string }[];
  /** The 304s a client got for a stale body: none may be. */
  readonly wrong: readonly { readonly body: string; readonly sent: number }[];
  readonly counts: {
    reads: number;
    untagged: number;
    cancels: number;
    conditional: number;
    notModified: number;
    modified: number;
    retried: number;
  };
  /** Requests sent, each answered one counted once. */
  readonly sent: number;
}

export async function raceConditional(options: RaceOptions): Promise<RaceRecord> {
  const held: { tag: string; body: string }[] = [];
  const acknowledged: { id: number; at: number }[] = [];
  const checks: { body: string; sent: number; status: number }[] = [];
  const counts = {
    reads: 0,
    untagged: 0,
    cancels: 0,
    conditional: 0,
    notModified: 0,
    modified: 0,
    retried: 0,
  };
  const random = seededRandom(options.seed);
  const politely = <A extends Answered>(send: () => Promise<A>) =>
    sendPolitely(send, { onRetry: () => counts.retried++ });

  const read = async (delay: number) => {
    await after(delay);
    const { answer } = await politely(options.read);
    expect(answer.status).toBe(200);
    counts.reads++;
    const tag = answer.headers.get('etag');
    if (tag) held.push({ tag, body: answer.body });
    else counts.untagged++;
  };
  const cancelOne = async (delay: number) => {
    await after(delay);
    const id = options.pickId(held.at(-1)?.body, random);
    if (id === undefined) return;
    const { answer } = await politely(() => options.cancel(id));
    expect(answer.status).toBe(204);
    acknowledged.push({ id, at: performance.now() });
    counts.cancels++;
  };
  const poll = async (delay: number) => {
    await after(delay);
    if (held.length === 0) return;
    // A recent pair most of the time: those are the ones that may still match.
    const pair = held[held.length - 1 - random(Math.min(held.length, 6))]!;
    const { answer, sent } = await politely(() => options.readIf(pair.tag));
    expect([200, 304]).toContain(answer.status);
    checks.push({ body: pair.body, sent, status: answer.status });
    if (answer.status === 304) counts.notModified++;
    else counts.modified++;
  };

  for (let round = 0; round < options.rounds; round++) {
    const work = [read(random(4)), poll(random(6)), poll(random(6)), read(random(8))];
    for (let i = 0; i < options.cancelsIn(round); i++) work.push(cancelOne(random(6)));
    await Promise.all(work);
  }
  counts.conditional = checks.length;
  const wrong = checks
    .filter(
      (check) =>
        check.status === 304 &&
        acknowledged.some(({ id, at }) => at < check.sent && options.stale(check.body, id)),
    )
    .map(({ body, sent }) => ({ body, sent }));
  return { held, wrong, counts, sent: counts.reads + counts.cancels + checks.length };
}

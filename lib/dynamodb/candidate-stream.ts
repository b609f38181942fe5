/**
 * A page's candidates in sort order: the k-way merge of its partitions' Queries. Each take hands
 * out the next candidates, reading the partitions further only as far as the merge needs.
 *
 * A candidate is taken only while no partition that may hold more has read less far than it
 * (its frontier: the last key it evaluated, compared as a position: in ship-date order the
 * instant, then the id). The stream is handed each partition's Query with its first Limit and
 * how a key reads as a position (./page-plan.ts pageQueries), made once before it reads: the
 * first round sends every Query by its first Limit; while a take has fewer candidates than it
 * asks for, the partitions behind its count-th candidate known so far (every partition while
 * fewer are known) read on, each by its share of what is missing (./page-limits.ts readOnLimit),
 * until the take is full, the partitions end, or the page's budget of rounds or evaluated items
 * is spent: then the take is cut where every partition has read to. The stream keeps what its
 * Queries cost and hands it out with each take.
 */
import {
  QueryCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { comparePositions, type PagePosition } from '../orders/order-filter.ts';
import { send } from './errors.ts';
import { PAGES_DEPENDENCY, queryFailure } from './page-failures.ts';
import { readOnLimit, roundLimits, type PageReadBudget } from './page-limits.ts';
import type { PageQueries } from './page-plan.ts';

type Item = Record<string, unknown>;

export interface Candidate {
  readonly position: PagePosition;
  /** The whole item (the table's own Query), or only its keys (an index's). */
  readonly item: Item;
}

/** What a page's Queries cost so far. */
export interface QueryCost {
  readonly queries: number;
  /** Rounds of Queries sent one after another (a round sends at least one). */
  readonly rounds: number;
  /** Keys or items the Queries evaluated (DynamoDB's ScannedCount, summed). */
  readonly evaluated: number;
}

/** What one take gave. */
export interface Taken {
  /** The next candidates in the sort order. */
  readonly candidates: readonly Candidate[];
  /** Whether candidates may remain after these. */
  readonly more: boolean;
  /**
   * Present when the page's read budget ran out first: the candidates are then every one up to
   * here, where every partition has been read to (fewer than asked).
   */
  readonly cutAt?: PagePosition;
  /** What the stream's Queries have cost, this take's included. */
  readonly spent: QueryCost;
}

/**
 * One partition's Query sent: at most `limit` keys from `startKey` (its last answer's
 * LastEvaluatedKey).
 */
export type SendQuery = (
  query: QueryCommandInput,
  limit: number,
  startKey: Item | undefined,
) => Promise<PartitionAnswer>;

export interface PartitionAnswer {
  readonly items: readonly Item[];
  /** Keys or items evaluated. */
  readonly evaluated: number;
  /** Absent when the partition's range has no more. */
  readonly lastKey?: Item;
}

/** The Queries of a page of `source` sent to DynamoDB, by `signal`'s deadline. */
export function sendQueries(
  client: DynamoDBDocumentClient,
  source: string,
  signal: AbortSignal | undefined,
): SendQuery {
  return async (query, limit, startKey) => {
    const result = await send(
      PAGES_DEPENDENCY,
      (abortSignal) =>
        client.send(
          new QueryCommand({
            ...query,
            Limit: limit,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
          { abortSignal },
        ),
      signal,
    ).catch((error: unknown) => {
      throw queryFailure(error, source);
    });
    return {
      items: result.Items ?? [],
      evaluated: result.ScannedCount ?? 0,
      ...(result.LastEvaluatedKey ? { lastKey: result.LastEvaluatedKey } : {}),
    };
  };
}

export interface CandidateStreamOptions {
  /** The page's Queries, made from its plan (./page-plan.ts pageQueries). */
  readonly queries: PageQueries;
  readonly budget: PageReadBudget;
  readonly send: SendQuery;
}

interface Partition {
  /** Its Query, without its Limit. */
  readonly query: QueryCommandInput;
  /** Where its next Query continues; absent before the first. */
  startKey?: Item;
  /** The last key it evaluated; absent before its first Query. */
  frontier?: PagePosition;
  exhausted: boolean;
  /** Its candidates not handed out yet, in order. */
  readonly buffered: Candidate[];
  evaluated: number;
  matched: number;
  /** The Limit of its next Query. */
  limit: number;
}

/** The earliest of some positions. */
function earliest(positions: readonly PagePosition[]): PagePosition | undefined {
  return positions.reduce<PagePosition | undefined>(
    (low, p) => (low === undefined || comparePositions(p, low) < 0 ? p : low),
    undefined,
  );
}

export class CandidateStream {
  private readonly positionOf: PageQueries['positionOf'];
  private readonly budget: PageReadBudget;
  private readonly send: SendQuery;
  private readonly partitions: Partition[];
  private spent: QueryCost = { queries: 0, rounds: 0, evaluated: 0 };
  private started = false;

  constructor({ queries, budget, send }: CandidateStreamOptions) {
    const count = queries.partitions.length;
    // The merge knows nothing of a partition it has not read: the first round reads them all.
    if (budget.evaluated < count) {
      throw new RangeError(
        `a page's budget of ${budget.evaluated} evaluated items cannot read its ${count} partitions`,
      );
    }
    this.positionOf = queries.positionOf;
    this.budget = budget;
    this.send = send;
    this.partitions = queries.partitions.map(({ input, limit }) => ({
      query: input,
      exhausted: false,
      buffered: [],
      evaluated: 0,
      matched: 0,
      limit,
    }));
  }

  /** The next `count` candidates (fewer at the end, or when the page's budget runs out). */
  async take(count: number): Promise<Taken> {
    if (!this.started) {
      this.started = true;
      await this.round(this.partitions);
    }
    for (;;) {
      const active = this.partitions.filter((p) => !p.exhausted);
      const buffered = this.buffered();
      const bound = earliest(active.map((p) => p.frontier!));
      const known = bound
        ? buffered.filter((c) => comparePositions(c.position, bound) <= 0)
        : buffered;
      if (known.length >= count || active.length === 0) return this.hand(known.slice(0, count));
      if (this.budgetSpent()) return this.hand(known, bound);
      await this.round(this.behind(active, buffered, count - known.length, count));
    }
  }

  /**
   * Every buffered candidate in order, each position once: an order whose status changed between
   * two partitions' Queries can stand in both at the same position, and it is one candidate.
   */
  private buffered(): Candidate[] {
    return this.partitions
      .flatMap((p) => p.buffered)
      .sort((a, b) => comparePositions(a.position, b.position))
      .filter(
        (c, i, sorted) => i === 0 || comparePositions(sorted[i - 1]!.position, c.position) !== 0,
      );
  }

  private budgetSpent(): boolean {
    const { spent, budget } = this;
    return spent.rounds >= budget.rounds || spent.evaluated >= budget.evaluated;
  }

  /**
   * The partitions that read on, each with its Limit: those behind the count-th candidate known
   * so far (by position, id included: in ship-date order many frontiers can stand at one
   * instant), or every active one while fewer are known.
   */
  private behind(
    active: readonly Partition[],
    buffered: readonly Candidate[],
    missing: number,
    count: number,
  ): readonly Partition[] {
    const nth = buffered[count - 1]?.position;
    const behind = nth ? active.filter((p) => comparePositions(p.frontier!, nth) < 0) : active;
    for (const p of behind) p.limit = readOnLimit(missing, behind.length, p);
    return behind;
  }

  /** One round: a Query of each partition by its Limit, within what is left of the budget. */
  private async round(partitions: readonly Partition[]): Promise<void> {
    const limits = roundLimits(
      partitions.map((p) => p.limit),
      this.budget.evaluated - this.spent.evaluated,
    );
    const answers = await Promise.all(
      partitions.map(async (p, i) =>
        limits[i]! > 0 ? this.send(p.query, limits[i]!, p.startKey) : undefined,
      ),
    );
    let { queries, evaluated } = this.spent;
    for (const [i, answer] of answers.entries()) {
      const partition = partitions[i]!;
      if (answer === undefined) continue;
      queries++;
      evaluated += answer.evaluated;
      this.read(partition, answer);
    }
    const sent = queries > this.spent.queries;
    this.spent = { queries, evaluated, rounds: this.spent.rounds + (sent ? 1 : 0) };
  }

  /** A partition's answer: its candidates buffered, its frontier moved (or its end). */
  private read(partition: Partition, answer: PartitionAnswer): void {
    partition.evaluated += answer.evaluated;
    for (const item of answer.items) {
      partition.buffered.push({ position: this.positionOf(item), item });
      partition.matched++;
    }
    if (answer.lastKey) {
      partition.startKey = answer.lastKey;
      partition.frontier = this.positionOf(answer.lastKey);
    } else {
      partition.exhausted = true;
    }
  }

  /** Hands `candidates` out (dropped from the buffers); `cutAt` when the budget cut the take. */
  private hand(candidates: Candidate[], cutAt?: PagePosition): Taken {
    const end = candidates.at(-1)?.position;
    if (end) {
      for (const p of this.partitions) {
        while (p.buffered.length > 0 && comparePositions(p.buffered[0]!.position, end) <= 0) {
          p.buffered.shift();
        }
      }
    }
    const more = this.partitions.some((p) => !p.exhausted || p.buffered.length > 0);
    return { candidates, more, ...(cutAt ? { cutAt } : {}), spent: this.spent };
  }
}

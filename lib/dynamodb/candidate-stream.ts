/**
 * A page's candidates in sort order: the k-way merge of its partitions' Queries. Each take hands
 * out the next candidates, reading the partitions further only as far as the merge needs.
 *
 * A candidate is taken only while no partition that may hold more has read less far than it
 * (its frontier: the last key it evaluated, compared as a position: in ship-date order the
 * instant, then the id). The first round queries every partition by the plan's first Limit;
 * while a take has fewer candidates than it asks for, the partitions behind its count-th
 * candidate known so far (every partition while fewer are known) read on, each by its share of
 * what is missing (./page-plan.ts readOnLimit), until the take is full, the partitions end, or
 * the page's budget of rounds or evaluated items is spent: then the take is cut where every
 * partition has read to. The stream keeps what its Queries cost and hands it out with each take.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { comparePositions, type PagePosition } from '../orders/order-filter.ts';
import { send } from './errors.ts';
import { PAGES_DEPENDENCY, queryFailure } from './page-failures.ts';
import { firstLimit, readOnLimit, roundLimits, type PageReadBudget } from './page-limits.ts';
import {
  keyPosition,
  partitionQuery,
  type DynamoDbPagePlan,
  type PartitionValue,
} from './page-plan.ts';

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

/** One Query of a partition's range: at most `limit` keys from `startKey` (its last answer's LastEvaluatedKey). */
export type QueryPartition = (
  partition: PartitionValue,
  limit: number,
  startKey: Item | undefined,
) => Promise<PartitionAnswer | 'empty-range'>;

export interface PartitionAnswer {
  readonly items: readonly Item[];
  /** Keys or items evaluated. */
  readonly evaluated: number;
  /** Absent when the partition's range has no more. */
  readonly lastKey?: Item;
}

/** The Queries of a plan's partitions on DynamoDB, after `start`, by `signal`'s deadline. */
export function queryPartitions(
  client: DynamoDBDocumentClient,
  tableName: string,
  plan: DynamoDbPagePlan,
  start: PagePosition | undefined,
  signal: AbortSignal | undefined,
): QueryPartition {
  return async (partition, limit, startKey) => {
    const input = partitionQuery(tableName, plan, partition, start);
    if (!input) return 'empty-range';
    const result = await send(
      PAGES_DEPENDENCY,
      (abortSignal) =>
        client.send(
          new QueryCommand({
            ...input,
            Limit: limit,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
          { abortSignal },
        ),
      signal,
    ).catch((error: unknown) => {
      throw queryFailure(error, plan.source);
    });
    return {
      items: result.Items ?? [],
      evaluated: result.ScannedCount ?? 0,
      ...(result.LastEvaluatedKey ? { lastKey: result.LastEvaluatedKey } : {}),
    };
  };
}

export interface CandidateStreamOptions {
  readonly plan: DynamoDbPagePlan;
  /** The page's size: its first round's Limits. */
  readonly pageSize: number;
  readonly budget: PageReadBudget;
  readonly query: QueryPartition;
}

interface Partition {
  readonly value: PartitionValue;
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
  private readonly plan: DynamoDbPagePlan;
  private readonly budget: PageReadBudget;
  private readonly query: QueryPartition;
  private readonly partitions: Partition[];
  private spent: QueryCost = { queries: 0, rounds: 0, evaluated: 0 };
  private started = false;

  constructor({ plan, pageSize, budget, query }: CandidateStreamOptions) {
    // The merge knows nothing of a partition it has not read: the first round reads them all.
    if (budget.evaluated < plan.partitions) {
      throw new RangeError(
        `a page's budget of ${budget.evaluated} evaluated items cannot read its ${plan.partitions} partitions`,
      );
    }
    this.plan = plan;
    this.budget = budget;
    this.query = query;
    const limit = firstLimit(plan, pageSize);
    this.partitions = plan.partitionValues.map((value) => ({
      value,
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
        limits[i]! > 0 ? this.query(p.value, limits[i]!, p.startKey) : undefined,
      ),
    );
    let { queries, evaluated } = this.spent;
    for (const [i, answer] of answers.entries()) {
      const partition = partitions[i]!;
      if (answer === 'empty-range') partition.exhausted = true;
      if (answer === undefined || answer === 'empty-range') continue;
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
      partition.buffered.push({ position: keyPosition(this.plan, item), item });
      partition.matched++;
    }
    if (answer.lastKey) {
      partition.startKey = answer.lastKey;
      partition.frontier = keyPosition(this.plan, answer.lastKey);
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

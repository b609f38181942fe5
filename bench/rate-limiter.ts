/**
 * `npm run bench:limiter`: the rate limiter's added latency per request on DynamoDB Local
 * (p50/p99 of `consume`, steady state: warm cache, one key per simulated client), and the
 * DynamoDB calls per admitted, refused and banned request.
 */
import { startDynamoDbLocal } from '../local/dynamodb-local.ts';
import { createDocumentClient } from '../lib/dynamodb/client.ts';
import { ensureTables } from '../lib/dynamodb/create-table.ts';
import { DynamoDbRateLimiter } from '../lib/dynamodb/rate-limit-table.ts';
import { localTableNames } from '../local/local-stack.ts';
import { PLAN_LIMITS } from '../lib/limits/plans.ts';
import { benchFlags, countFlag, countOf } from './command-line.ts';
import { percentile } from './statistics.ts';

const values = benchFlags('bench:limiter', "The rate limiter's added latency per request.", {
  requests: countFlag('requests to time', 3000),
});
const REQUESTS = countOf('bench:limiter', 'requests', values.requests, 3000);

const dynamo = await startDynamoDbLocal();
const client = createDocumentClient({ endpoint: dynamo.endpoint });
try {
  const tables = localTableNames('bench');
  await ensureTables(client, tables);
  const calls = { count: 0 };
  client.middlewareStack.add(
    (next) => (args) => {
      calls.count++;
      return next(args);
    },
    { step: 'finalizeRequest', name: 'countCalls' },
  );
  const limiter = new DynamoDbRateLimiter(client, tables.rateLimits);
  const business = {
    keyId: 'key_bench_business',
    plan: 'business' as const,
    limits: PLAN_LIMITS.business,
  };
  const now = () => Date.now();

  // Warm-up: JIT, connections, the key's first (cold) write.
  for (let i = 0; i < 200; i++)
    await limiter.consume({ ...business, keyId: `key_warm${i % 5}` }, now());

  const durations: number[] = [];
  const perOutcome = new Map<string, { requests: number; calls: number }>();
  const record = (outcome: string, used: number) => {
    const entry = perOutcome.get(outcome) ?? { requests: 0, calls: 0 };
    entry.requests++;
    entry.calls += used;
    perOutcome.set(outcome, entry);
  };
  // Steady state: 10 clients, each well under its limit.
  for (let i = 0; i < REQUESTS; i++) {
    const caller = { ...business, keyId: `key_client${i % 10}` };
    if (i < 10) await limiter.consume(caller, now());
    const before = calls.count;
    const started = performance.now();
    const { decision } = await limiter.consume(caller, now());
    durations.push(performance.now() - started);
    if (i >= 10) record(decision.outcome, calls.count - before);
  }
  // Refused and banned: one free key driven over its limit.
  const free = { keyId: 'key_bench_free', plan: 'free' as const, limits: PLAN_LIMITS.free };
  for (let i = 0; i < 60 + 11 + 50; i++) {
    const before = calls.count;
    const { decision } = await limiter.consume(free, now());
    if (i >= 60) record(decision.outcome, calls.count - before);
  }

  durations.sort((a, b) => a - b);
  console.log(`rate limiter on DynamoDB Local, ${REQUESTS} sequential requests, warm cache:`);
  console.log(
    `  added latency p50 ${percentile(durations, 50).toFixed(2)} ms, p99 ${percentile(durations, 99).toFixed(2)} ms, max ${durations.at(-1)!.toFixed(2)} ms`,
  );
  for (const [outcome, { requests, calls: used }] of perOutcome) {
    console.log(
      `  ${outcome}: ${requests} requests, ${(used / requests).toFixed(2)} DynamoDB calls per request`,
    );
  }
} finally {
  client.destroy();
  await dynamo.stop();
}

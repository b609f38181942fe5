/**
 * The list prices `npm run bench:cost` prices a request at: the one place they are written, with
 * the day they were read and where. On-demand, us-east-1, no free tier, first tier of each
 * (the service's traffic stays inside it: API Gateway's first 333 million requests a month,
 * Lambda's first 7.5 billion GB-seconds). Change them here, with the day and the source, when
 * AWS changes them; the benchmark's record (bench/cost-record.json) keeps the day it priced with.
 */
export const PRICES = {
  /** When these were read. */
  checked: '2026-11-28',
  region: 'us-east-1',
  dynamoDb: {
    /** Dollars per write request unit (1 KB written; an index's writes included). */
    writeRequestUnit: 0.625 / 1e6,
    /** Dollars per read request unit (4 KB strongly consistent, 8 KB eventually consistent). */
    readRequestUnit: 0.125 / 1e6,
    source:
      'https://aws.amazon.com/dynamodb/pricing/on-demand/ (on-demand prices since November 2024)',
  },
  apiGateway: {
    /** Dollars per REST API request (first 333 million a month). */
    restRequest: 3.5 / 1e6,
    source:
      'https://aws.amazon.com/api-gateway/pricing/ (REST APIs; the same table in AWS\'s whitepaper "Best Practices for Designing Amazon API Gateway Private APIs", cost optimization)',
  },
  lambda: {
    /** Dollars per invocation. */
    request: 0.2 / 1e6,
    /** Dollars per GB-second of an arm64 function (first 7.5 billion GB-seconds a month). */
    gbSecondArm64: 0.0000133334,
    source: 'https://aws.amazon.com/lambda/pricing/ (Arm price, duration billed by the 1 ms)',
  },
  cloudWatchLogs: {
    /** Dollars per GB (2^30 bytes) of logs ingested (Standard log class). */
    ingestedGb: 0.5,
    source: 'https://aws.amazon.com/cloudwatch/pricing/ (Logs, Standard: collect, data ingestion)',
  },
} as const;

/** What one request costs, per million such requests, in dollars, by service. */
export interface DollarsPerMillion {
  readonly apiGateway: number;
  readonly lambda: number;
  readonly dynamoDb: number;
  readonly logs: number;
  readonly total: number;
}

export interface RequestUsage {
  /** Whether API Gateway bills it as a request (an authorizer's invocation is part of one). */
  readonly apiRequest: boolean;
  /** The function's duration (billed by the started millisecond) and memory setting. */
  readonly ms: number;
  readonly memoryMb: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Bytes written to CloudWatch Logs: the function's lines and the access log's. */
  readonly logBytes: number;
}

/** The GB-seconds Lambda bills an invocation: by the started millisecond, × its memory. */
export function billedGbSeconds(ms: number, memoryMb: number): number {
  return (Math.ceil(ms) / 1000) * (memoryMb / 1024);
}

/** Dollars per million requests of the given usage, at PRICES. */
export function dollarsPerMillion(usage: RequestUsage): DollarsPerMillion {
  const million = 1e6;
  const apiGateway = usage.apiRequest ? PRICES.apiGateway.restRequest * million : 0;
  const gbSeconds = billedGbSeconds(usage.ms, usage.memoryMb);
  const lambda = (PRICES.lambda.request + gbSeconds * PRICES.lambda.gbSecondArm64) * million;
  const dynamoDb = dynamoDbDollarsPerMillion(usage.readUnits, usage.writeUnits);
  const logs = ((usage.logBytes * million) / 2 ** 30) * PRICES.cloudWatchLogs.ingestedGb;
  return { apiGateway, lambda, dynamoDb, logs, total: apiGateway + lambda + dynamoDb + logs };
}

/** Dollars per million requests of DynamoDB's units alone. */
export function dynamoDbDollarsPerMillion(readUnits: number, writeUnits: number): number {
  return (
    (readUnits * PRICES.dynamoDb.readRequestUnit + writeUnits * PRICES.dynamoDb.writeRequestUnit) *
    1e6
  );
}

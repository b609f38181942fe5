/**
 * What AWS allows a streamed response (Lambda response streaming behind API Gateway REST with
 * `responseTransferMode: STREAM`), from its documentation (docs/architecture.md, "Large lists"). One place for
 * the figures the list function, the stack's alarm, the benchmark's model and the documents use.
 * "MB" in AWS's text is read as 10^6 bytes: the smaller reading, so a cut made by these figures is
 * never late.
 */
export const STREAMING_LIMITS = {
  /** Lambda: the first 6 MB of a streamed response have uncapped bandwidth. */
  lambdaUncappedBytes: 6_000_000,
  /** API Gateway REST streaming: the first 10 MB are not bandwidth-restricted. */
  apiGatewayUncappedBytes: 10_000_000,
  /** Both: past their uncapped part, at most 2 MB/s. */
  cappedBytesPerSecond: 2_000_000,
  /** Lambda: a streamed response carries at most 200 MB. */
  ceilingBytes: 200_000_000,
  /** API Gateway: a response streams for at most 15 minutes. */
  maxSeconds: 15 * 60,
} as const;

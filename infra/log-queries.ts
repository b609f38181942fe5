/**
 * A stage's saved CloudWatch Logs Insights queries (`AWS::Logs::QueryDefinition`), named
 * `store-orders/<stage>/<query>`, each bound to the log groups it reads. Field names come from
 * the access log's field list (lib/api/access-log.ts) and the functions' logger
 * (functions/shared/logger.ts, http-errors.ts); test/infra/operations.test.ts checks them against
 * lines those write. docs/operations.md ("Saved queries") shows how to run each.
 */
import { QueryDefinition, QueryString, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ACCESS_LOG_FIELDS } from '../lib/api/access-log.ts';
import { API_STAGES } from '../lib/api/routes.ts';
import {
  EXECUTION_LOG_SOURCES,
  queryPrefix,
  type LogSource,
  type StageName,
} from '../lib/deployment.ts';
import { HTTP_FUNCTIONS, RATE_LIMIT_REFUSAL_LOG } from './monitoring.ts';

/** A field of the access log, checked against its field list by the compiler. */
const access = (field: keyof typeof ACCESS_LOG_FIELDS) => field;

/** Fields every line of the functions' logger carries. */
export const FUNCTION_LOG_FIELDS = {
  level: 'level',
  message: 'message',
  correlationId: 'correlation_id',
  functionName: 'function_name',
  functionVersion: 'function_version',
  coldStart: 'cold_start',
} as const;
const fn = FUNCTION_LOG_FIELDS;

/** What the operator puts in place of in the request query (the console has no parameters). */
export const REQUEST_ID_PLACEHOLDER = 'REQUEST_ID';

export interface LogQuery {
  /** The name after the stage's prefix (`store-orders/<stage>/<name>`). */
  readonly name: string;
  /** The log groups it reads. */
  readonly sources: readonly LogSource[];
  readonly query: QueryString;
}

export const LOG_QUERIES: readonly LogQuery[] = [
  {
    // The access-log line, every function line and API Gateway's execution-log lines of one
    // request, in order: the request id is the client's x-amzn-RequestId, the access log's
    // requestId, the functions' correlation_id, and starts each execution-log message.
    name: 'request-by-id',
    sources: ['access', ...HTTP_FUNCTIONS, ...API_STAGES.map((s) => EXECUTION_LOG_SOURCES[s])],
    query: new QueryString({
      fields: [
        '@timestamp',
        '@log',
        access('status'),
        access('httpMethod'),
        access('resourcePath'),
        access('keyId'),
        access('responseLatencyMs'),
        access('errorType'),
        'errorMessage',
        fn.level,
        fn.message,
        fn.functionName,
        fn.functionVersion,
        'code',
        'failure.kind',
        'failure.reason',
        '@message',
      ],
      filterStatements: [
        `${access('requestId')} = "${REQUEST_ID_PLACEHOLDER}" or ${fn.correlationId} = "${REQUEST_ID_PLACEHOLDER}" or @message like "(${REQUEST_ID_PLACEHOLDER})"`,
      ],
      sort: '@timestamp asc',
      limit: 200,
    }),
  },
  {
    // The functions' answers by error code (ORDER_NOT_FOUND, RATE_LIMITED, INTERNAL_ERROR…) per
    // 5 minutes: each error answer writes one line with its `code` and `status`. API Gateway's own answers (401, 403, 404 ROUTE_NOT_FOUND, 429 THROTTLED) never
    // reach a function: the query "gateway-errors-by-type" counts them.
    name: 'errors-by-code',
    sources: HTTP_FUNCTIONS,
    query: new QueryString({
      filterStatements: ['ispresent(code)'],
      statsStatements: ['count(*) as answers by bin(5m), code, status'],
      sort: 'answers desc',
    }),
  },
  {
    // Every 4XX and 5XX by status and API Gateway error type per 5 minutes (`errorType` is "-"
    // when the function answered: see errors-by-code for its code).
    name: 'gateway-errors-by-type',
    sources: ['access'],
    query: new QueryString({
      filterStatements: [`${access('status')} >= 400`],
      statsStatements: [
        `count(*) as answers by bin(5m), ${access('status')}, ${access('errorType')}`,
      ],
      sort: 'answers desc',
    }),
  },
  {
    // The slowest requests as the client saw them, with where the time went.
    name: 'slowest-requests',
    sources: ['access'],
    query: new QueryString({
      fields: [
        '@timestamp',
        access('requestId'),
        access('keyId'),
        access('httpMethod'),
        access('resourcePath'),
        access('status'),
        access('responseLatencyMs'),
        access('integrationLatencyMs'),
        access('authorizerLatencyMs'),
        access('responseLength'),
      ],
      sort: `${access('responseLatencyMs')} desc`,
      limit: 50,
    }),
  },
  {
    // The slowest invocations of each function, from Lambda's REPORT lines.
    name: 'slowest-invocations',
    sources: [...HTTP_FUNCTIONS, 'authorizer'],
    query: new QueryString({
      fields: ['@timestamp', '@log', '@requestId', '@duration', '@initDuration', '@maxMemoryUsed'],
      filterStatements: ['@type = "REPORT"'],
      sort: '@duration desc',
      limit: 50,
    }),
  },
  {
    // The keys refused with 429 most (limited or banned), from the functions' refusal lines.
    name: 'keys-most-429s',
    sources: HTTP_FUNCTIONS,
    query: new QueryString({
      filterStatements: [`${fn.message} = "${RATE_LIMIT_REFUSAL_LOG.message}"`],
      statsStatements: [
        `count(*) as refusals by ${RATE_LIMIT_REFUSAL_LOG.keyIdPath.replace(/^\$\./, '')}, outcome`,
      ],
      sort: 'refusals desc',
      limit: 25,
    }),
  },
];

export interface LogQueriesProps {
  readonly stage: StageName;
  readonly logGroups: Readonly<Record<LogSource, ILogGroup>>;
}

/** The saved queries of a stage, each on its log groups. */
export class LogQueries extends Construct {
  readonly definitions: readonly QueryDefinition[];

  constructor(scope: Construct, id: string, props: LogQueriesProps) {
    super(scope, id);
    this.definitions = LOG_QUERIES.map(
      (query) =>
        new QueryDefinition(this, query.name, {
          queryDefinitionName: `${queryPrefix(props.stage)}${query.name}`,
          queryString: query.query,
          logGroups: query.sources.map((source) => props.logGroups[source]),
        }),
    );
  }
}
